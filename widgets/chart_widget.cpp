#include "chart_widget.h"

#include <qcustomplot.h>

#include "atomic_write.h"

#include <QBuffer>
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QToolTip>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

namespace kvl::widgets {

namespace {
FileKind fileKindOf(ExportFormat format) {
    switch (format) {
    case ExportFormat::Png:
        return FileKind::Png;
    case ExportFormat::Pdf:
        return FileKind::Pdf;
    case ExportFormat::Svg:
        return FileKind::Svg;
    case ExportFormat::Csv:
        break;
    }
    return FileKind::Data;
}
} // namespace

ChartWidget::ChartWidget(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setMinimumSize(320, 220);
    m_plot->setAntialiasedElements(QCP::aePlottables | QCP::aeItems);
    m_plot->setNotAntialiasedElements(QCP::aeGrid | QCP::aeSubGrid | QCP::aeAxes);
    m_plot->setPlottingHints(QCP::phCacheLabels | QCP::phFastPolylines);
    m_plot->plotLayout()->insertRow(0);
    auto* titleElement =
        new QCPTextElement(m_plot, QString(), QFont(font().family(), -1, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, titleElement);
    m_plot->setMouseTracking(true);
    m_plot->installEventFilter(this);
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
    if (auto* t = qobject_cast<QCPTextElement*>(m_plot->plotLayout()->element(0, 0)))
        t->setText(title);
    requestReplot();
}

void ChartWidget::setUnits(core::UnitSystem units) {
    if (units == m_units)
        return;
    m_units = units;
    unitsChanged();
    requestReplot();
}

void ChartWidget::requestReplot() {
    m_replotPending = true;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
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
        QImage image = m_plot->toPixmap(s.width(), s.height(), scale).toImage();
        // 96 dpi, as QCustomPlot::savePng writes it.
        const int dotsPerMeter = static_cast<int>(std::lround(96 / 0.0254));
        image.setDotsPerMeterX(dotsPerMeter);
        image.setDotsPerMeterY(dotsPerMeter);
        image.save(&buffer, "PNG");
        break;
    }
    case ExportFormat::Pdf: {
        // One page the size of the chart in points, drawn as QCustomPlot::savePdf draws it
        // (screen resolution, cosmetic pens allowed), but into memory.
        QPdfWriter writer(&buffer);
        writer.setResolution(96);
        writer.setCreator(QStringLiteral("KV Ledger"));
        writer.setTitle(m_title);
        writer.setPageLayout(
            QPageLayout(QPageSize(QSizeF(s), QPageSize::Point, QString(), QPageSize::ExactMatch),
                        QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
        QCPPainter painter;
        if (painter.begin(&writer)) {
            painter.setWindow(QRect(QPoint(0, 0), s));
            render(&painter, s.width(), s.height());
            painter.end();
        }
        break;
    }
    case ExportFormat::Svg: {
        QSvgGenerator generator;
        generator.setOutputDevice(&buffer);
        generator.setSize(s);
        generator.setViewBox(QRect(QPoint(0, 0), s));
        generator.setTitle(m_title);
        generator.setDescription(QStringLiteral("KV Ledger chart"));
        QCPPainter painter;
        if (painter.begin(&generator)) {
            render(&painter, s.width(), s.height());
            painter.end();
        }
        break;
    }
    case ExportFormat::Csv:
        buffer.write(csv().toUtf8());
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

QVector<double> ChartWidget::seriesKeys(int index) const {
    QVector<double> out;
    const auto data = m_plot->graph(index)->data();
    out.reserve(data->size());
    for (auto it = data->constBegin(); it != data->constEnd(); ++it)
        out.push_back(it->key);
    return out;
}

QVector<double> ChartWidget::seriesValues(int index) const {
    QVector<double> out;
    const auto data = m_plot->graph(index)->data();
    out.reserve(data->size());
    for (auto it = data->constBegin(); it != data->constEnd(); ++it)
        out.push_back(it->value);
    return out;
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

QString ChartWidget::tooltipAt(const QPoint& pos) const {
    const QPoint p = m_plot->mapFrom(this, pos);
    if (!m_plot->axisRect()->rect().contains(p))
        return {};
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
