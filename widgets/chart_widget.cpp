#include "chart_widget.h"

#include <qcustomplot.h>

#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
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

bool ChartWidget::exportTo(const QString& path, double scale, QSize size, QString* error) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    bool ok = false;
    if (suffix == QLatin1String("png"))
        ok = exportPng(path, scale, size);
    else if (suffix == QLatin1String("pdf"))
        ok = exportPdf(path, size);
    else if (suffix == QLatin1String("svg"))
        ok = exportSvg(path, size);
    else if (suffix == QLatin1String("csv"))
        return exportCsv(path, error);
    else {
        if (error)
            *error = tr("Unknown export format \"%1\": use .png, .pdf, .svg or .csv").arg(suffix);
        return false;
    }
    if (!ok && error)
        *error = tr("Could not write %1").arg(QDir::toNativeSeparators(path));
    return ok;
}

bool ChartWidget::exportPng(const QString& path, double scale, QSize size) {
    const QSize s = exportSize(size);
    const bool ok = m_plot->savePng(path, s.width(), s.height(), scale);
    requestReplot();
    return ok;
}

bool ChartWidget::exportPdf(const QString& path, QSize size) {
    const QSize s = exportSize(size);
    const bool ok = m_plot->savePdf(path, s.width(), s.height(), QCP::epAllowCosmetic,
                                    QStringLiteral("KV Ledger"), m_title);
    requestReplot();
    return ok && QFileInfo(path).size() > 0;
}

bool ChartWidget::exportSvg(const QString& path, QSize size) {
    const QSize s = exportSize(size);
    QSvgGenerator generator;
    generator.setFileName(path);
    generator.setSize(s);
    generator.setViewBox(QRect(QPoint(0, 0), s));
    generator.setTitle(m_title);
    generator.setDescription(QStringLiteral("KV Ledger chart"));
    QCPPainter painter;
    if (!painter.begin(&generator))
        return false;
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    m_plot->toPainter(&painter, s.width(), s.height());
    painter.end();
    requestReplot();
    return QFileInfo(path).size() > 0;
}

bool ChartWidget::exportCsv(const QString& path, QString* error) {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        if (error)
            *error = tr("Could not open %1: %2").arg(path, file.errorString());
        return false;
    }
    file.write(csv().toUtf8());
    if (!file.commit()) {
        if (error)
            *error = tr("Could not write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
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
