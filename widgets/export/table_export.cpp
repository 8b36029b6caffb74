#include "widgets/export/table_export.h"

#include "widgets/charts/chart_widget.h"
#include "widgets/export/atomic_write.h"

#include <QAbstractItemModel>
#include <QBuffer>
#include <QImage>
#include <QPageLayout>
#include <QPageSize>
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
};

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
                                        (rows - 1) * m.rowHeight + m.captionHeight};
}

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
    // default 900 x 520, it grows to its natural size instead.
    const QSize natural = tableImageSize(t);
    const QSize s = size.isValid() && !size.isEmpty() ? size.expandedTo(natural) : natural;
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    FileKind kind = FileKind::Data;
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
        const int dotsPerMeter = static_cast<int>(std::lround(96 / 0.0254));
        image.setDotsPerMeterX(dotsPerMeter);
        image.setDotsPerMeterY(dotsPerMeter);
        image.save(&buffer, "PNG");
        kind = FileKind::Png;
        break;
    }
    case ExportFormat::Pdf: {
        QPdfWriter writer(&buffer);
        writer.setResolution(96);
        writer.setCreator(QStringLiteral("KV Ledger"));
        writer.setTitle(t.title);
        writer.setPageLayout(
            QPageLayout(QPageSize(QSizeF(s), QPageSize::Point, QString(), QPageSize::ExactMatch),
                        QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
        QPainter p;
        if (p.begin(&writer)) {
            p.setWindow(QRect(QPoint(0, 0), s));
            paintTable(&p, t, s);
            p.end();
        }
        kind = FileKind::Pdf;
        break;
    }
    case ExportFormat::Svg: {
        QSvgGenerator generator;
        generator.setOutputDevice(&buffer);
        generator.setSize(s);
        generator.setViewBox(QRect(QPoint(0, 0), s));
        generator.setTitle(t.title);
        generator.setDescription(QStringLiteral("KV Ledger table"));
        QPainter p;
        if (p.begin(&generator)) {
            paintTable(&p, t, s);
            p.end();
        }
        kind = FileKind::Svg;
        break;
    }
    case ExportFormat::Csv:
        return makeError(ErrorCode::Internal, "renderTableFile draws images, not CSV");
    }
    const QByteArray bytes = buffer.data();
    if (auto ok = verifyFileContent(bytes, kind, t.title); !ok)
        return ok.error();
    return bytes;
}

} // namespace kvl::widgets
