#pragma once
// Chart text drawn once and copied. QCustomPlot draws every title, note and legend entry with
// QPainter::drawText at every replot, and QPainter lays the text out (HarfBuzz shaping) each
// time: a fifth of a change's instructions in bench_replot (callgrind), though the texts rarely
// change. A TextStamp keeps the last few texts drawn into transparent pictures and copies one
// while its text, font, colour and box are those asked. The picture is drawn at the same offset
// from the pixel grid as the text would be, on the same transparent paint buffer, so the copy is
// the text as drawText draws it. Exports (QCustomPlot marks their painters pmNoCaching, and PDF and
// SVG pmVectorized) and painters that scale or rotate get the text drawn as before.
// Private to kvl_widgets (the _p suffix): QCustomPlot stays out of every public header.

#include <QColor>
#include <QFont>
#include <QPixmap>
#include <QPointF>
#include <QRect>
#include <QString>

#include <qcustomplot.h>

#include <array>
#include <cstddef>

namespace kvl::widgets {

class TextStamp {
public:
    // Draws `text` in `rect` as QPainter::drawText(rect, flags, text) does, in `font` and
    // `color`, and returns true; or returns false having drawn nothing, where a copy would not
    // do (the caller then draws the text itself). `boundingRect`, if given, receives the
    // rectangle drawText reports.
    bool draw(QCPPainter* painter, const QRect& rect, int flags, const QString& text,
              const QFont& font, const QColor& color, QRect* boundingRect = nullptr);

    // How many times the text was drawn into the picture (not copied): for the tests.
    int drawn() const { return m_drawn; }

private:
    struct Key {
        QString text;
        QFont font;
        QColor color;
        QSize size;
        int flags = 0;
        qreal dpr = 0;
        bool antialiased = true;
        QPointF fraction; // the painter's move, less whole pixels
        bool operator==(const Key&) const = default;
    };
    struct Picture {
        Key key;
        QPixmap picture;
        QRect bounds; // drawText's bounding rectangle, from the box's top left corner
        QPoint at;    // where the box's top left corner lies in the picture
    };
    // The last few texts: a lever toggled back and forth brings back the text it had.
    std::array<Picture, 4> m_pictures;
    std::size_t m_next = 0; // the one to replace next
    int m_drawn = 0;
};

} // namespace kvl::widgets
