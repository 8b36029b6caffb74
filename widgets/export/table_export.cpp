#include "widgets/export/table_export.h"

#include "widgets/charts/chart_widget.h"
#include "widgets/export/atomic_write.h"
#include "widgets/export/export_devices.h"

#include <QAbstractItemModel>
#include <QBuffer>
#include <QImage>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>

#include <algorithm>
#include <cmath>
#include <vector>

namespace kvl::widgets {

namespace {

constexpr int kMargin = 12;
constexpr int kCellPad = 8;
constexpr int kMinWidth = 900;

struct Metrics {
    std::vector<int> columns; // natural widths
    int rowHeight = 0;
    int headerHeight = 0; // header labels may have two lines ("KV / token\n(per GPU)")
    int titleHeight = 0;
    int captionHeight = 0;
    int barsHeight = 0; // the bar chart's natural height, 0 without one
};

constexpr int kBarsGap = 14;

QFont cellFont(const TableImage& t, const QModelIndex& index) {
    const QVariant f = index.data(Qt::FontRole);
    QFont font = t.font;
    if (f.canConvert<QFont>() && f.value<QFont>().bold())
        font.setBold(true);
    return font;
}

Metrics measure(const TableImage& t) {
    Metrics m;
    const QAbstractItemModel& model = *t.model;
    QFont bold = t.font;
    bold.setBold(true);
    const QFontMetrics fm(t.font), fb(bold);
    m.rowHeight = fb.height() + 8;
    QFont titleFont = bold;
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.15);
    m.titleHeight = t.title.isEmpty() ? 0 : QFontMetrics(titleFont).height() + 10;
    m.captionHeight = t.caption.isEmpty() ? 0 : fm.lineSpacing() + 10;
    int headerLines = 1;
    for (int c = 0; c < model.columnCount(); ++c) {
        const QStringList lines =
            model.headerData(c, Qt::Horizontal).toString().split(QLatin1Char('\n'));
        headerLines = std::max(headerLines, static_cast<int>(lines.size()));
        int w = 0;
        for (const QString& line : lines)
            w = std::max(w, fb.horizontalAdvance(line));
        for (int r = 0; r < model.rowCount(); ++r)
            w = std::max(w, fb.horizontalAdvance(model.index(r, c).data().toString()));
        m.columns.push_back(w + 2 * kCellPad);
    }
    m.headerHeight = headerLines * fb.lineSpacing() + 8;
    if (t.barColumn >= 0 && t.barColumn < model.columnCount() && model.rowCount() > 0)
        m.barsHeight = kBarsGap + fb.lineSpacing() + 8 + model.rowCount() * m.rowHeight;
    return m;
}

} // namespace

QSize tableImageSize(const TableImage& t) {
    const Metrics m = measure(t);
    int w = 2 * kMargin;
    for (int c : m.columns)
        w += c;
    const int rows = t.model ? t.model->rowCount() + 1 : 1;
    return {std::max(kMinWidth, w), 2 * kMargin + m.titleHeight + m.headerHeight +
                                        (rows - 1) * m.rowHeight + m.barsHeight + m.captionHeight};
}

namespace {

// One bar per row of the table, in the rows' order and step colours, between the table and the
// caption: it takes whatever height the image has there, so a taller --size gives larger bars
// rather than an empty band.
void paintBars(QPainter* p, const TableImage& t, const Metrics& m, QRect area, int labelWidth) {
    const QAbstractItemModel& model = *t.model;
    const ChartColors& c = t.colors;
    const int rows = model.rowCount();
    QFont bold = t.font;
    bold.setBold(true);
    p->setFont(bold);
    p->setPen(c.foreground);
    const int titleH = QFontMetrics(bold).lineSpacing() + 8;
    // The bar chart's title is the column's header on one line ("Requests @8K (per GPU)").
    const QString title = model.headerData(t.barColumn, Qt::Horizontal)
                              .toString()
                              .replace(QLatin1Char('\n'), QLatin1Char(' '));
    p->drawText(QRect(area.left(), area.top(), area.width(), titleH),
                Qt::AlignLeft | Qt::AlignVCenter, title);
    const QRect bars = area.adjusted(0, titleH, 0, 0);
    if (rows <= 0 || bars.height() <= 0)
        return;
    double top = 0;
    std::vector<double> values(static_cast<std::size_t>(rows));
    std::vector<QString> texts(static_cast<std::size_t>(rows));
    int textWidth = 0;
    const QFontMetrics fm(t.font);
    for (int r = 0; r < rows; ++r) {
        const QModelIndex index = model.index(r, t.barColumn);
        values[static_cast<std::size_t>(r)] = std::max(0.0, index.data(t.barRole).toDouble());
        top = std::max(top, values[static_cast<std::size_t>(r)]);
        texts[static_cast<std::size_t>(r)] = index.data().toString();
        textWidth = std::max(textWidth, fm.horizontalAdvance(texts[static_cast<std::size_t>(r)]));
    }
    const double rowH = static_cast<double>(bars.height()) / rows;
    const double thick = std::min(rowH * 0.72, 2.5 * m.rowHeight);
    const int x0 = bars.left() + labelWidth;
    const int span = std::max(20, bars.right() - x0 - textWidth - 2 * kCellPad);
    p->setPen(QPen(c.axis, 1));
    p->drawLine(x0, bars.top(), x0, bars.bottom());
    for (int r = 0; r < rows; ++r) {
        const std::size_t i = static_cast<std::size_t>(r);
        const double cy = bars.top() + rowH * (r + 0.5);
        const QModelIndex name = model.index(r, 0);
        const QVariant fg = name.data(Qt::ForegroundRole);
        const bool dimmed = fg.canConvert<QBrush>() && fg.value<QBrush>().style() != Qt::NoBrush;
        p->setFont(cellFont(t, name));
        p->setPen(dimmed ? c.cursor : c.foreground);
        const QRect label(bars.left(), static_cast<int>(cy - rowH / 2), labelWidth - kCellPad,
                          static_cast<int>(rowH));
        p->drawText(
            label, Qt::AlignLeft | Qt::AlignVCenter,
            p->fontMetrics().elidedText(name.data().toString(), Qt::ElideMiddle, label.width()));
        const double len = top > 0 ? span * values[i] / top : 0.0;
        const QColor fill = dimmed ? c.grid : c.steps[i % c.steps.size()];
        p->fillRect(QRectF(x0, cy - thick / 2, len, thick), fill);
        p->setFont(t.font);
        p->setPen(c.foreground);
        p->drawText(QRectF(x0 + len + kCellPad, cy - rowH / 2, textWidth + kCellPad, rowH),
                    Qt::AlignLeft | Qt::AlignVCenter, texts[i]);
    }
}

} // namespace

void paintTable(QPainter* p, const TableImage& t, QSize size) {
    const QAbstractItemModel& model = *t.model;
    const Metrics m = measure(t);
    const ChartColors& c = t.colors;
    p->fillRect(QRect(QPoint(0, 0), size), c.background);
    int y = kMargin;
    QFont bold = t.font;
    bold.setBold(true);
    if (!t.title.isEmpty()) {
        QFont titleFont = bold;
        titleFont.setPointSizeF(titleFont.pointSizeF() * 1.15);
        p->setFont(titleFont);
        p->setPen(c.foreground);
        p->drawText(QRect(kMargin, y, size.width() - 2 * kMargin, m.titleHeight),
                    Qt::AlignLeft | Qt::AlignVCenter, t.title);
        y += m.titleHeight;
    }
    // Columns keep their natural width; the first (the step names) takes what is left over,
    // or gives up what is missing (elided).
    std::vector<int> widths = m.columns;
    int natural = 0;
    for (int w : widths)
        natural += w;
    if (!widths.empty())
        widths[0] = std::max(40, widths[0] + (size.width() - 2 * kMargin) - natural);
    const int tableWidth = [&] {
        int w = 0;
        for (int v : widths)
            w += v;
        return w;
    }();
    auto drawRow = [&](int row, int top) {
        int x = kMargin;
        for (int col = 0; col < static_cast<int>(widths.size()); ++col) {
            const QRect cell(x, top, widths[static_cast<std::size_t>(col)],
                             row < 0 ? m.headerHeight : m.rowHeight);
            QString text;
            int align = Qt::AlignLeft | Qt::AlignVCenter;
            QColor pen = c.foreground;
            if (row < 0) {
                p->setFont(bold);
                text = model.headerData(col, Qt::Horizontal).toString();
                align = col == 0 ? (Qt::AlignLeft | Qt::AlignVCenter)
                                 : (Qt::AlignRight | Qt::AlignVCenter);
            } else {
                const QModelIndex index = model.index(row, col);
                p->setFont(cellFont(t, index));
                text = index.data().toString();
                const QVariant a = index.data(Qt::TextAlignmentRole);
                if (a.isValid())
                    align = a.toInt();
                const QVariant fg = index.data(Qt::ForegroundRole);
                if (fg.canConvert<QBrush>() && fg.value<QBrush>().style() != Qt::NoBrush)
                    pen = c.cursor; // a dimmed row (a lever that is off), in print colours
            }
            p->setPen(pen);
            const QRect inner = cell.adjusted(kCellPad, 0, -kCellPad, 0);
            if (row < 0) // each header line fits: the column is as wide as its longest
                p->drawText(inner, align, text);
            else
                p->drawText(inner, align,
                            p->fontMetrics().elidedText(text, Qt::ElideMiddle, inner.width()));
            x += cell.width();
        }
    };
    p->fillRect(QRect(kMargin, y, tableWidth, m.headerHeight), c.grid);
    drawRow(-1, y);
    y += m.headerHeight;
    for (int r = 0; r < model.rowCount(); ++r) {
        if (r % 2 == 1)
            p->fillRect(QRect(kMargin, y, tableWidth, m.rowHeight), c.subGrid);
        drawRow(r, y);
        y += m.rowHeight;
    }
    p->setPen(QPen(c.grid, 1));
    p->drawLine(kMargin, y, kMargin + tableWidth, y);
    if (m.barsHeight > 0) {
        const int bottom = size.height() - kMargin - m.captionHeight;
        paintBars(p, t, m, QRect(kMargin, y + kBarsGap, tableWidth, bottom - y - kBarsGap),
                  std::min(widths[0], tableWidth * 2 / 5));
    }
    if (!t.caption.isEmpty()) {
        QColor cap = c.foreground;
        cap.setAlpha(190);
        p->setPen(cap);
        p->setFont(t.font);
        p->drawText(
            QRect(kMargin, size.height() - kMargin - m.captionHeight, size.width() - 2 * kMargin,
                  m.captionHeight),
            Qt::AlignLeft | Qt::AlignVCenter,
            p->fontMetrics().elidedText(t.caption, Qt::ElideRight, size.width() - 2 * kMargin));
    }
}

Result<QByteArray> renderTableFile(const TableImage& t, ExportFormat format, double scale,
                                   QSize size) {
    // A requested size is a floor: a table never elides its step names to fit a chart's
    // 960 x 540, it grows to its natural size instead.
    const QSize natural = tableImageSize(t);
    const QSize s = size.isValid() && !size.isEmpty() ? size.expandedTo(natural) : natural;
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    switch (format) {
    case ExportFormat::Png: {
        if (auto ok = ChartWidget::checkPngSize(s, scale); !ok)
            return ok.error();
        QImage image(static_cast<int>(std::lround(s.width() * scale)),
                     static_cast<int>(std::lround(s.height() * scale)),
                     QImage::Format_ARGB32_Premultiplied);
        image.fill(t.colors.background);
        {
            QPainter p(&image);
            p.setRenderHint(QPainter::TextAntialiasing);
            p.scale(scale, scale);
            paintTable(&p, t, s);
        }
        setScreenDpi(image);
        image.save(&buffer, "PNG");
        break;
    }
    case ExportFormat::Pdf: {
        QPdfWriter writer(&buffer);
        setUpPdfWriter(writer, s, t.title);
        QPainter p;
        if (p.begin(&writer)) {
            p.setWindow(QRect(QPoint(0, 0), s));
            paintTable(&p, t, s);
            p.end();
        }
        break;
    }
    case ExportFormat::Svg: {
        QSvgGenerator generator;
        setUpSvgGenerator(generator, &buffer, s, t.title, QStringLiteral("KV Ledger table"));
        QPainter p;
        if (p.begin(&generator)) {
            paintTable(&p, t, s);
            p.end();
        }
        break;
    }
    case ExportFormat::Csv:
        return makeError(ErrorCode::Internal, "renderTableFile draws images, not CSV");
    }
    const QByteArray bytes = buffer.data();
    if (auto ok = verifyFileContent(bytes, fileKindOf(format), t.title); !ok)
        return ok.error();
    return bytes;
}

} // namespace kvl::widgets
