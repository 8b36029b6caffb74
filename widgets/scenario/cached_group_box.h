#pragma once
// A group box that draws itself once per size and look, then copies the picture (the last two
// looks are kept). Every lever toggle shows or hides rows, which moves the groups below it, and
// Qt repaints a moved widget whole: the Fusion style then lays the title out three times (each
// sub-control's rectangle measures it) and stretches its frame image over the box, 8% of a
// KV-format toggle's time (perf and callgrind of `bench_replot --only quant`). The picture is
// drawn on the group's own background colour, so the title's text is antialiased as it would
// be on the window; a palette whose window brush is not a plain colour is drawn by the style
// at every paint.

#include <QFont>
#include <QGroupBox>
#include <QPixmap>
#include <QSize>
#include <QString>

#include <array>
#include <cstddef>

class QStyle;

namespace kvl::widgets {

class CachedGroupBox : public QGroupBox {
    Q_OBJECT
public:
    explicit CachedGroupBox(const QString& title, QWidget* parent = nullptr);

    // How many times the style drew the group (not copied): for the tests.
    int drawnByStyle() const { return m_drawnByStyle; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    // Everything the picture depends on.
    struct Look {
        QSize size;
        qreal dpr = 0;
        int state = 0;
        int subControls = 0;
        int activeSubControls = 0;
        qint64 palette = 0;
        const QStyle* style = nullptr;
        QFont font;
        QString title;
        bool operator==(const Look&) const = default;
    };
    // Two looks: a lever toggled back and forth (checked and taller, unchecked and shorter).
    struct Picture {
        Look look;
        QPixmap picture;
    };
    std::array<Picture, 2> m_pictures;
    std::size_t m_next = 0; // the one to replace next
    int m_drawnByStyle = 0;
};

} // namespace kvl::widgets
