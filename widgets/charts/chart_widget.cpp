#include "widgets/charts/chart_widget.h"

#include <qcustomplot.h>

#include "widgets/charts/chart_text_p.h"
#include "widgets/charts/text_width.h"
#include "widgets/export/atomic_write.h"
#include "widgets/export/export_devices.h"

#include <QBuffer>
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QToolTip>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

namespace kvl::widgets {

ChartWidget::ChartWidget(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    // 180 px high at the least: a 1366 x 768 window with a four-line banner (a refusal that
    // quotes vLLM's message, and a note) still fits its panels; at 220 it needed 782 px.
    m_plot->setMinimumSize(320, 180);
    m_plot->setAntialiasedElements(QCP::aePlottables | QCP::aeItems);
    m_plot->setNotAntialiasedElements(QCP::aeGrid | QCP::aeSubGrid | QCP::aeAxes);
    m_plot->setPlottingHints(QCP::phCacheLabels | QCP::phFastPolylines);
    // One paint buffer, not two: nothing draws on QCustomPlot's "overlay" layer (buffered by
    // default for selection rectangles), which cost a full-size clear at every replot and a
    // full-size blend at every paint, in memory a second chart-sized image per chart.
    m_plot->layer(QStringLiteral("overlay"))->setMode(QCPLayer::lmLogical);
    m_plot->plotLayout()->insertRow(0);
    auto* titleElement =
        new CachedTextElement(m_plot, QString(), QFont(font().family(), -1, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, titleElement);
    m_plot->setMouseTracking(true);
    m_plot->installEventFilter(this);
    // Every chart's legend entries measure and draw their text once (CachedLegendItem), those
    // added since the last replot included.
    connect(m_plot, &QCustomPlot::beforeReplot, this, [this] {
        if (m_plot->legend)
            useCachedLegendItems(m_plot->legend);
    });
    connect(m_plot, &QCustomPlot::afterReplot, this, [this] {
        ++m_replotCount;
        m_replotPending = false;
        emit replotted();
    });
    m_colors = ChartColors::fromPalette(palette());
}

ChartWidget::~ChartWidget() = default;

void ChartWidget::setTitle(const QString& title) {
    m_title = title;
    updateTitleLayout();
    requestReplot();
}

void ChartWidget::setTitleNote(const QString& note) {
    if (note == m_titleNote)
        return;
    m_titleNote = note;
    updateTitleLayout();
    requestReplot();
}

QString ChartWidget::drawnTitle() const {
    return m_titleNote.isEmpty() ? m_title : m_title + QLatin1Char('\n') + m_titleNote;
}

void ChartWidget::updateTitleLayout() {
    auto* t = qobject_cast<QCPTextElement*>(m_plot->plotLayout()->element(0, 0));
    if (!t)
        return;
    // A title wider than the chart wraps instead of being clipped at both ends.
    const int avail = std::max(80, (m_plot->width() > 0 ? m_plot->width() : 900) - 16);
    const QString shown = wrapToWidth(drawnTitle(), t->font(), avail);
    if (shown != m_shownTitle) {
        m_shownTitle = shown;
        t->setText(shown);
        requestReplot();
    }
}

QRect ChartWidget::titleRect() const {
    auto* t = qobject_cast<QCPTextElement*>(m_plot->plotLayout()->element(0, 0));
    if (!t)
        return {};
    return QRect(m_plot->mapTo(this, t->outerRect().topLeft()), t->outerRect().size());
}

QFont ChartWidget::titleFont() const {
    auto* t = qobject_cast<QCPTextElement*>(m_plot->plotLayout()->element(0, 0));
    return t ? t->font() : font();
}

QRect ChartWidget::legendRect() const {
    if (!m_plot->legend || !m_plot->legend->visible() || m_plot->legend->itemCount() == 0)
        return {};
    const QRect r = m_plot->legend->outerRect();
    return QRect(m_plot->mapTo(this, r.topLeft()), r.size());
}

QRect ChartWidget::plotAreaRect() const {
    const QRect r = m_plot->axisRect()->rect();
    return QRect(m_plot->mapTo(this, r.topLeft()), r.size());
}

QList<QList<QRect>> ChartWidget::tickLabelRects() const {
    QList<QList<QRect>> out;
    const QRect area = m_plot->axisRect()->rect();
    for (QCPAxis* axis : m_plot->axisRect()->axes()) {
        if (!axis->visible() || !axis->tickLabels())
            continue;
        const QFontMetrics fm(axis->tickLabelFont());
        const QVector<double> ticks = axis->tickVector();
        const QVector<QString> labels = axis->tickVectorLabels();
        const int offset = axis->offset() + axis->tickLengthOut() + axis->tickLabelPadding();
        QList<QRect> rects;
        for (qsizetype i = 0; i < ticks.size() && i < labels.size(); ++i) {
            if (!axis->range().contains(ticks[i]) || labels[i].isEmpty())
                continue;
            const QSize sz =
                fm.boundingRect(QRect(0, 0, 100000, 100000), Qt::AlignCenter, labels[i]).size();
            const int at = static_cast<int>(std::lround(axis->coordToPixel(ticks[i])));
            QRect r;
            switch (axis->axisType()) {
            case QCPAxis::atBottom:
                r = QRect(at - sz.width() / 2, area.bottom() + offset, sz.width(), sz.height());
                break;
            case QCPAxis::atTop:
                r = QRect(at - sz.width() / 2, area.top() - offset - sz.height(), sz.width(),
                          sz.height());
                break;
            case QCPAxis::atLeft:
                r = QRect(area.left() - offset - sz.width(), at - sz.height() / 2, sz.width(),
                          sz.height());
                break;
            case QCPAxis::atRight:
                r = QRect(area.right() + offset, at - sz.height() / 2, sz.width(), sz.height());
                break;
            }
            rects << QRect(m_plot->mapTo(this, r.topLeft()), r.size());
        }
        out << rects;
    }
    return out;
}

QList<QRect> ChartWidget::textItemRects() const {
    QList<QRect> out;
    for (int i = 0; i < m_plot->itemCount(); ++i) {
        auto* t = qobject_cast<QCPItemText*>(m_plot->item(i));
        if (!t || !t->visible() || t->text().isEmpty())
            continue;
        // The corners as drawn (a rotated label's included), as one upright rectangle.
        const QRect r = QRectF(t->topLeft->pixelPosition(), t->bottomRight->pixelPosition())
                            .normalized()
                            .toRect();
        out << QRect(m_plot->mapTo(this, r.topLeft()), r.size());
    }
    return out;
}

QFont ChartWidget::captionFont() const {
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    return f;
}

void ChartWidget::setCaptionSource(CaptionSource source) {
    m_captionSource = std::move(source);
    invalidateCaption();
}

namespace {
// A value worked out from its source when read after an invalidation, else as last set.
template <class T> T readThrough(bool& stale, const std::function<T()>& source, T& value) {
    if (stale && source) {
        value = source();
        stale = false;
    }
    return value;
}
} // namespace

void ChartWidget::setCaption(const QString& caption) {
    m_caption = caption;
    m_captionStale = false;
}

QString ChartWidget::caption() const {
    return readThrough(m_captionStale, m_captionSource.caption, m_caption);
}

void ChartWidget::setCsvComments(const QStringList& lines) {
    m_csvComments = lines;
    m_commentsStale = false;
}

QStringList ChartWidget::csvComments() const {
    return readThrough(m_commentsStale, m_captionSource.csvComments, m_csvComments);
}

int ChartWidget::captionHeight(int width) const {
    const QString caption = this->caption();
    if (caption.isEmpty())
        return 0;
    const QFontMetrics fm(captionFont());
    const QString text = wrapToWidth(caption, captionFont(), std::max(40, width - 16));
    return static_cast<int>(text.count(QLatin1Char('\n')) + 1) * fm.lineSpacing() + 8;
}

void ChartWidget::paintExport(QCPPainter* painter, int width, int height) {
    const int ch = captionHeight(width);
    painter->fillRect(QRect(0, 0, width, height), m_colors.background);
    // The title wrapped for the export's width, not the window's.
    auto* t = qobject_cast<QCPTextElement*>(m_plot->plotLayout()->element(0, 0));
    if (t)
        t->setText(wrapToWidth(drawnTitle(), t->font(), std::max(80, width - 16)));
    m_plot->toPainter(painter, width, height - ch);
    if (t)
        t->setText(m_shownTitle);
    if (ch > 0) {
        painter->save();
        QColor c = m_colors.foreground;
        c.setAlpha(190);
        painter->setPen(c);
        painter->setFont(captionFont());
        painter->drawText(QRect(8, height - ch + 2, width - 16, ch - 4),
                          Qt::AlignLeft | Qt::AlignVCenter,
                          wrapToWidth(caption(), captionFont(), std::max(40, width - 16)));
        painter->restore();
    }
}

void ChartWidget::setUnits(core::UnitSystem units) {
    if (units == m_units)
        return;
    m_units = units;
    unitsChanged();
    requestReplot();
}

void ChartWidget::requestReplot() {
    if (!isVisible() && window()->isVisible()) {
        m_replotWhenShown = true;
        return;
    }
    m_replotWhenShown = false;
    m_replotPending = true;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void ChartWidget::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!m_replotWhenShown)
        return;
    // Drawn now, before the first paint, so the stale picture never shows.
    m_replotWhenShown = false;
    m_replotPending = true;
    m_plot->replot(QCustomPlot::rpRefreshHint);
}

void ChartWidget::styleAxes() {
    const ChartColors& c = m_colors;
    m_plot->setBackground(c.background);
    const QList<QCPAxis*> axes = m_plot->axisRect()->axes();
    for (QCPAxis* axis : axes) {
        axis->setBasePen(QPen(c.axis, 1));
        axis->setTickPen(QPen(c.axis, 1));
        axis->setSubTickPen(QPen(c.axis, 1));
        axis->setTickLabelColor(c.foreground);
        axis->setLabelColor(c.foreground);
        axis->grid()->setPen(QPen(c.grid, 1, Qt::SolidLine));
        axis->grid()->setSubGridPen(QPen(c.subGrid, 1, Qt::SolidLine)); // dotted pens are slow
        axis->grid()->setZeroLinePen(Qt::NoPen);
    }
    if (auto* t = qobject_cast<QCPTextElement*>(m_plot->plotLayout()->element(0, 0)))
        t->setTextColor(c.foreground);
    m_plot->legend->setBrush(QBrush(c.legendBackground));
    m_plot->legend->setBorderPen(QPen(c.grid, 1));
    m_plot->legend->setTextColor(c.foreground);
}

void ChartWidget::applyColors() {
    styleAxes();
}

void ChartWidget::setPrintColors(bool forPrint) {
    m_forPrint = forPrint;
    m_colors = forPrint ? ChartColors::light() : ChartColors::fromPalette(palette());
    applyColors();
    requestReplot();
}

void ChartWidget::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange && !m_forPrint) {
        m_colors = ChartColors::fromPalette(palette());
        applyColors();
        requestReplot();
    }
    QWidget::changeEvent(event);
}

void ChartWidget::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    updateTitleLayout();
    // Denser log ticks when there is room: about one label per 80 px.
    if (auto log = m_plot->xAxis->ticker().dynamicCast<QCPAxisTickerLog>())
        log->setTickCount(std::max(3, width() / 80));
    if (auto log = m_plot->yAxis->ticker().dynamicCast<QCPAxisTickerLog>())
        log->setTickCount(std::max(3, height() / 60));
}

QSize ChartWidget::exportSize(QSize requested) const {
    if (requested.isValid() && !requested.isEmpty())
        return requested;
    if (testAttribute(Qt::WA_WState_Visible) && m_plot->width() > 0)
        return m_plot->size();
    return {900, 520};
}

Status ChartWidget::checkPngSize(QSize size, double scale) {
    if (!std::isfinite(scale) || scale <= 0)
        return makeError(
            ErrorCode::BadInput,
            tr("the scale must be a positive number, not %1").arg(scale).toStdString());
    const double w = std::round(size.width() * scale), h = std::round(size.height() * scale);
    if (w * h > kMaxPngPixels)
        return makeError(ErrorCode::BadInput,
                         tr("a PNG of %1 x %2 pixels (%3 megapixels) is over the limit of %4 "
                            "megapixels")
                             .arg(w, 0, 'f', 0)
                             .arg(h, 0, 'f', 0)
                             .arg(w * h / 1e6, 0, 'f', 0)
                             .arg(kMaxPngPixels / 1e6, 0, 'f', 0)
                             .toStdString());
    return {};
}

Result<QByteArray> ChartWidget::renderFile(ExportFormat format, double scale, QSize size) {
    const QSize s = exportSize(size);
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    switch (format) {
    case ExportFormat::Png: {
        if (auto ok = checkPngSize(s, scale); !ok)
            return ok.error();
        // QCustomPlot::toPixmap's way (non-cosmetic pens when scaled up), with the caption.
        QImage image(static_cast<int>(std::lround(s.width() * scale)),
                     static_cast<int>(std::lround(s.height() * scale)),
                     QImage::Format_ARGB32_Premultiplied);
        image.fill(m_colors.background);
        {
            QCPPainter painter(&image);
            painter.setMode(QCPPainter::pmNoCaching);
            if (scale > 1.0)
                painter.setMode(QCPPainter::pmNonCosmetic);
            painter.scale(scale, scale);
            paintExport(&painter, s.width(), s.height());
        }
        setScreenDpi(image);
        image.save(&buffer, "PNG");
        break;
    }
    case ExportFormat::Pdf: {
        // One page the size of the chart in points, drawn as QCustomPlot::savePdf draws it
        // (screen resolution, cosmetic pens allowed), but into memory.
        QPdfWriter writer(&buffer);
        setUpPdfWriter(writer, s, m_title);
        QCPPainter painter;
        if (painter.begin(&writer)) {
            painter.setWindow(QRect(QPoint(0, 0), s));
            painter.setMode(QCPPainter::pmVectorized);
            painter.setMode(QCPPainter::pmNoCaching);
            paintExport(&painter, s.width(), s.height());
            painter.end();
        }
        break;
    }
    case ExportFormat::Svg: {
        QSvgGenerator generator;
        setUpSvgGenerator(generator, &buffer, s, m_title, QStringLiteral("KV Ledger chart"));
        QCPPainter painter;
        if (painter.begin(&generator)) {
            painter.setMode(QCPPainter::pmVectorized);
            painter.setMode(QCPPainter::pmNoCaching);
            paintExport(&painter, s.width(), s.height());
            painter.end();
        }
        break;
    }
    case ExportFormat::Csv:
        const QStringList comments = csvComments();
        buffer.write((comments.isEmpty()
                          ? csv()
                          : comments.join(QLatin1Char('\n')) + QLatin1Char('\n') + csv())
                         .toUtf8());
        break;
    }
    requestReplot();
    const QByteArray bytes = buffer.data();
    if (auto ok = verifyFileContent(bytes, fileKindOf(format), m_title); !ok)
        return ok.error();
    return bytes;
}

Status ChartWidget::exportTo(const QString& path, double scale, QSize size) {
    const auto format = formatOfPath(path);
    if (!format)
        return makeError(ErrorCode::BadInput,
                         tr("Unknown export format \"%1\": use .png, .pdf, .svg or .csv")
                             .arg(QFileInfo(path).suffix())
                             .toStdString());
    auto bytes = renderFile(*format, scale, size);
    if (!bytes)
        return bytes.error();
    return writeFileAtomically(path, *bytes, fileKindOf(*format));
}

void ChartWidget::render(QCPPainter* painter, int width, int height) {
    painter->setMode(QCPPainter::pmVectorized);
    painter->setMode(QCPPainter::pmNoCaching);
    m_plot->toPainter(painter, width, height);
    requestReplot();
}

int ChartWidget::seriesCount() const {
    return m_plot->graphCount();
}

QString ChartWidget::seriesName(int index) const {
    return m_plot->graph(index)->name();
}

namespace {
// One column (key or value) of a graph's points, in order.
QVector<double> graphColumn(const QCPGraph* graph, double QCPGraphData::*column) {
    QVector<double> out;
    const auto data = graph->data();
    out.reserve(data->size());
    for (auto it = data->constBegin(); it != data->constEnd(); ++it)
        out.push_back((*it).*column);
    return out;
}
} // namespace

QVector<double> ChartWidget::seriesKeys(int index) const {
    return graphColumn(m_plot->graph(index), &QCPGraphData::key);
}

QVector<double> ChartWidget::seriesValues(int index) const {
    return graphColumn(m_plot->graph(index), &QCPGraphData::value);
}

bool ChartWidget::seriesDashed(int index) const {
    return m_plot->graph(index)->pen().style() != Qt::SolidLine;
}

int ChartWidget::seriesIndex(const QString& name) const {
    for (int i = 0; i < m_plot->graphCount(); ++i)
        if (m_plot->graph(i)->name() == name)
            return i;
    return -1;
}

QPoint ChartWidget::seriesPointPosition(int series, int point) const {
    const QCPGraph* g = m_plot->graph(series);
    const auto it = g->data()->at(point);
    return m_plot->mapTo(this, g->coordsToPixels(it->key, it->value).toPoint());
}

QString ChartWidget::describePoint(const QCPGraph* graph, int index) const {
    const auto it = graph->data()->at(index);
    return QStringLiteral("%1\n%2, %3").arg(graph->name()).arg(it->key).arg(it->value);
}

std::optional<QPoint> ChartWidget::plotPointAt(const QPoint& pos) const {
    const QPoint p = m_plot->mapFrom(this, pos);
    if (!m_plot->axisRect()->rect().contains(p))
        return std::nullopt;
    return p;
}

std::optional<QPointF> ChartWidget::plotCoordsAt(const QPoint& pos) const {
    const auto at = plotPointAt(pos);
    if (!at)
        return std::nullopt;
    return QPointF(m_plot->xAxis->pixelToCoord(at->x()), m_plot->yAxis->pixelToCoord(at->y()));
}

QString ChartWidget::tooltipAt(const QPoint& pos) const {
    const auto at = plotPointAt(pos);
    if (!at)
        return {};
    const QPoint p = *at;
    const QCPGraph* best = nullptr;
    int bestIndex = -1;
    double bestDist = 12.0 * 12.0; // px^2: only points near the mouse
    // Topmost (last drawn, the emphasized current) first, so it wins ties with the curve below.
    for (int g = m_plot->graphCount() - 1; g >= 0; --g) {
        const QCPGraph* graph = m_plot->graph(g);
        if (!graph->visible())
            continue;
        const auto data = graph->data();
        for (int i = 0; i < data->size(); ++i) {
            const auto it = data->at(i);
            const QPointF px = graph->coordsToPixels(it->key, it->value);
            const double d =
                (px.x() - p.x()) * (px.x() - p.x()) + (px.y() - p.y()) * (px.y() - p.y());
            if (d < bestDist) {
                bestDist = d;
                best = graph;
                bestIndex = i;
            }
        }
    }
    return best ? describePoint(best, bestIndex) : QString();
}

bool ChartWidget::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_plot && event->type() == QEvent::MouseMove) {
        auto* me = static_cast<QMouseEvent*>(event);
        const QPoint pos = m_plot->mapTo(this, me->position().toPoint());
        m_lastTooltip = tooltipAt(pos);
        if (m_lastTooltip.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(me->globalPosition().toPoint(), m_lastTooltip, m_plot);
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace kvl::widgets
