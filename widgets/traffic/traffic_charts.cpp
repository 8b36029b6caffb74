#include "widgets/traffic/traffic_charts.h"

#include "widgets/charts/chart_text_p.h"
#include "widgets/export/csv.h"
#include "widgets/state/ledger_view_state.h"

#include <QCoreApplication>
#include <QFontMetrics>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvl::widgets {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString msText(double ms) {
    return ms >= 100 ? thousandsQ(std::llround(ms)) : QString::number(ms, 'f', 1);
}

// Rows under the plot: legend, then a small note (the assumptions).
QCPTextElement* addLegendAndNote(QCustomPlot* p, const QFont& base) {
    QFont small = base;
    small.setPointSizeF(small.pointSizeF() * 0.85);
    placeLegendInRow(p, 2);
    p->legend->setFont(small);
    p->legend->setIconSize(24, 10);
    QFont tiny = base;
    tiny.setPointSizeF(tiny.pointSizeF() * 0.78);
    auto* note = new CachedTextElement(p, QString(), tiny);
    note->setMargins(QMargins(6, 2, 6, 4));
    note->setTextFlags(Qt::AlignLeft | Qt::AlignVCenter);
    p->plotLayout()->addElement(3, 0, note);
    p->plotLayout()->setRowStretchFactor(3, 0.001);
    return note;
}

QString shortAssumptions(const TrafficInputs& in) {
    return QCoreApplication::translate("kvl::widgets::TrafficLatencyChart",
                                       "Simulated (vLLM v1 scheduler, Poisson arrivals, at least "
                                       "%1 requests per point, seed %2), one replica.")
        .arg(thousandsQ(in.requests))
        .arg(in.seed);
}

} // namespace

// ---- both charts ------------------------------------------------------------------------------

void TrafficChart::setResult(std::shared_ptr<const TrafficResult> result, const QString& status) {
    m_result = std::move(result);
    m_status = status;
    rebuild();
}

void TrafficChart::resizeEvent(QResizeEvent* event) {
    ChartWidget::resizeEvent(event);
    rebuild();
}

void TrafficChart::styleCommon() {
    styleAxes();
    const ChartColors& c = colors();
    m_note->setTextColor(c.cursor.darker(c.dark ? 70 : 130));
    m_emptyLabel->setColor(c.foreground);
}

// ---- latency vs rate --------------------------------------------------------------------------

TrafficLatencyChart::TrafficLatencyChart(TrafficMetric metric, QWidget* parent)
    : TrafficChart(parent), m_metric(metric) {
    QCustomPlot* p = plot();
    p->xAxis->setScaleType(QCPAxis::stLogarithmic);
    p->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog));
    p->yAxis->setScaleType(QCPAxis::stLogarithmic);
    p->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog));
    p->yAxis->setNumberFormat(QStringLiteral("gb"));
    p->xAxis->setNumberFormat(QStringLiteral("gb"));
    m_note = addLegendAndNote(p, font());
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    addMarkedLines(p, small, m_slo, m_rate);
    // The SLO label sits above its line at the left; the rate label reads upwards along its
    // line, on the right of it, at the bottom (the curves rise to the right, away from it).
    m_slo.text->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    m_slo.text->position->setTypeY(QCPItemPosition::ptPlotCoords);
    m_slo.text->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_slo.text->setPadding(QMargins(4, 1, 4, 2));
    // The rate label: level, ending at its line near the top, on the chart's background so
    // that a curve behind it never makes it unreadable.
    m_rate.text->position->setTypeX(QCPItemPosition::ptPlotCoords);
    m_rate.text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_rate.text->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    m_rate.text->setPadding(QMargins(4, 1, 4, 1));
    m_emptyLabel = addEmptyLabel(p);
    applyColors();
}

void TrafficLatencyChart::applyColors() {
    styleCommon();
    const ChartColors& c = colors();
    styleMarkedLines(c, m_slo, m_rate);
    m_rate.text->setBrush(QBrush(c.background));
    m_slo.text->setBrush(QBrush(c.background));
    rebuild();
}

double TrafficLatencyChart::slo() const {
    if (!m_result)
        return 0;
    return m_metric == TrafficMetric::Ttft ? m_result->inputs.sloTtftMs
                                           : m_result->inputs.sloTpotMs;
}

const core::sim::Percentiles& TrafficLatencyChart::of(const TrafficPoint& p) const {
    return m_metric == TrafficMetric::Ttft ? p.ttftMs : p.tpotMs;
}

double TrafficLatencyChart::sustainableLineX() const {
    if (!m_result || !m_status.isEmpty())
        return kNaN;
    const TrafficStep* cur = m_result->currentStep();
    return cur && cur->found && cur->sustainableRate > 0 ? cur->sustainableRate : kNaN;
}

double TrafficLatencyChart::sloLineY() const {
    return m_result && m_status.isEmpty() && slo() > 0 ? slo() : kNaN;
}

void TrafficLatencyChart::rebuild() {
    QCustomPlot* p = plot();
    const ChartColors& c = colors();
    const bool ttft = m_metric == TrafficMetric::Ttft;
    setTitle(ttft ? tr("Time to first token vs arrival rate, per replica (simulated)")
                  : tr("Time per output token vs arrival rate, per replica (simulated)"));
    p->xAxis->setLabel(tr("Arrival rate, requests/s per replica (log)"));
    p->yAxis->setLabel(ttft ? tr("TTFT, ms (log)") : tr("TPOT, ms (log)"));
    p->clearGraphs();
    const bool show = m_result && m_status.isEmpty() && m_result->error.empty();
    double xmin = std::numeric_limits<double>::infinity(), xmax = 0;
    double ymin = std::numeric_limits<double>::infinity(), ymax = 0;
    if (show) {
        for (const TrafficStep& st : m_result->steps) {
            const QColor color =
                st.current ? c.current : c.steps[static_cast<std::size_t>(st.id) % c.steps.size()];
            const double width = st.current ? 2.5 : 1.5;
            QVector<double> keys, p99, p50;
            for (const TrafficPoint& pt : st.points) {
                const core::sim::Percentiles& v = of(pt);
                if (!pt.problem.empty() || v.count == 0 || !(v.p99 > 0) || !(v.p50 > 0))
                    continue;
                keys << pt.rate;
                p99 << v.p99;
                p50 << v.p50;
                xmin = std::min(xmin, pt.rate);
                xmax = std::max(xmax, pt.rate);
                ymin = std::min(ymin, v.p50);
                ymax = std::max(ymax, v.p99);
            }
            if (keys.isEmpty())
                continue; // the step does not run (its note says why, in the table)
            QCPGraph* g99 = p->addGraph();
            g99->setName(st.current ? tr("Current: %1").arg(qs(st.label)) : qs(st.label));
            g99->setPen(QPen(color, width));
            g99->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
            g99->setData(keys, p99, true);
            QCPGraph* g50 = p->addGraph();
            g50->setName(g99->name() + tr(" (p50)"));
            g50->setPen(QPen(color, 1.2, Qt::DashLine));
            g50->setData(keys, p50, true);
            g50->removeFromLegend(); // one entry per step; the note says dashed is p50
        }
    }
    const double sloY = sloLineY(), rateX = sustainableLineX();
    showMarkedLine(m_slo, show && !std::isnan(sloY));
    showMarkedLine(m_rate, show && !std::isnan(rateX));
    if (show && !std::isnan(sloY)) {
        m_slo.line->point1->setCoords(1, sloY);
        m_slo.line->point2->setCoords(2, sloY);
        m_slo.text->position->setCoords(0.01, sloY);
        m_slo.text->setText(tr("SLO %1 ms (%2% of requests)")
                                .arg(msText(sloY))
                                .arg(m_result->inputs.attainment * 100, 0, 'g', 3));
        ymin = std::min(ymin, sloY);
        ymax = std::max(ymax, sloY);
    }
    if (show && !std::isnan(rateX)) {
        m_rate.line->point1->setCoords(rateX, 1);
        m_rate.line->point2->setCoords(rateX, 2);
        m_rate.text->position->setCoords(rateX, 0.03);
        m_rate.text->setText(tr("sustainable: %1 req/s").arg(trafficRateQ(rateX)));
        xmin = std::min(xmin, rateX);
        xmax = std::max(xmax, rateX);
    }
    if (std::isfinite(xmin) && xmax > 0) {
        p->xAxis->setRange(xmin / 1.3, xmax * 1.3);
    } else {
        p->xAxis->setRange(0.1, 10);
    }
    if (std::isfinite(ymin) && ymax > 0)
        p->yAxis->setRange(ymin / 1.6, ymax * 2.5);
    else
        p->yAxis->setRange(1, 1000);
    if (show && !std::isnan(rateX)) {
        // The label reads away from the nearer edge: right of the line in the axis's left half
        // (a sustainable rate at the lowest rates had its label cut off at the left).
        const QCPRange r = p->xAxis->range();
        const bool leftHalf = std::log(rateX) < 0.5 * (std::log(r.lower) + std::log(r.upper));
        m_rate.text->setPositionAlignment((leftHalf ? Qt::AlignLeft : Qt::AlignRight) |
                                          Qt::AlignTop);
    }
    QString empty = m_status;
    if (empty.isEmpty() && m_result && !m_result->error.empty())
        empty = tr("Not simulated: %1").arg(qs(m_result->error));
    else if (empty.isEmpty() && !m_result)
        empty = tr("Not simulated yet");
    else if (empty.isEmpty() && p->graphCount() == 0)
        empty = tr("No ladder step runs this workload (the table says why)");
    // Inside the plot, clear of the axes' labels (the axis rect of the last layout).
    m_emptyLabel->setText(wrapToWidth(
        empty, font(), std::max(120, std::min(plotAreaRect().width(), width() - 110) - 16)));
    m_emptyLabel->setVisible(!empty.isEmpty());
    p->legend->setVisible(p->legend->itemCount() > 0);
    const int w = std::max(160, width() - 24);
    const QString note =
        m_result ? tr("Solid: p99; dashed: p50. %1").arg(shortAssumptions(m_result->inputs))
                 : QString();
    m_note->setText(wrapToWidth(note, m_note->font(), w));
    fitLegendColumns(p->legend, w);
    requestReplot();
}

QString TrafficLatencyChart::describePoint(const QCPGraph* graph, int index) const {
    const QString name = graph->name();
    const double key = graph->data()->at(index)->key;
    if (!m_result)
        return ChartWidget::describePoint(graph, index);
    for (const TrafficStep& st : m_result->steps)
        for (const TrafficPoint& pt : st.points)
            if (pt.rate == key && name.contains(qs(st.label)))
                return tr("%1\n%2 req/s per replica\nTTFT p50 %3 ms, p99 %4 ms\nTPOT p50 %5 ms, "
                          "p99 %6 ms\n%7% of requests within the SLO")
                    .arg(qs(st.label), trafficRateQ(pt.rate), msText(pt.ttftMs.p50),
                         msText(pt.ttftMs.p99), msText(pt.tpotMs.p50), msText(pt.tpotMs.p99))
                    .arg(pt.attainment * 100, 0, 'f', 1);
    return ChartWidget::describePoint(graph, index);
}

QString TrafficLatencyChart::csv() const {
    QString out = QStringLiteral("# simulated per replica: %1\n")
                      .arg(m_result ? qs(trafficAssumptions(m_result->inputs)) : QString());
    out += QStringLiteral("series,rate_req_per_s,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,tpot_p99_ms,"
                          "slo_attainment,meets_slo,sustainable_rate_req_per_s,problem\n");
    if (!m_result)
        return out;
    for (const TrafficStep& st : m_result->steps)
        for (const TrafficPoint& pt : st.points)
            out += csvQuote(qs(st.label)) + QLatin1Char(',') + QString::number(pt.rate, 'g', 10) +
                   QLatin1Char(',') + QString::number(pt.ttftMs.p50, 'g', 10) + QLatin1Char(',') +
                   QString::number(pt.ttftMs.p99, 'g', 10) + QLatin1Char(',') +
                   QString::number(pt.tpotMs.p50, 'g', 10) + QLatin1Char(',') +
                   QString::number(pt.tpotMs.p99, 'g', 10) + QLatin1Char(',') +
                   QString::number(pt.attainment, 'g', 6) + QLatin1Char(',') +
                   (pt.meets ? QStringLiteral("yes") : QStringLiteral("no")) + QLatin1Char(',') +
                   (st.found ? QString::number(st.sustainableRate, 'g', 6) : QString()) +
                   QLatin1Char(',') + csvQuote(qs(pt.problem)) + QLatin1Char('\n');
    return out;
}

// ---- the timeline ----------------------------------------------------------------------------

TrafficTimelineChart::TrafficTimelineChart(QWidget* parent) : TrafficChart(parent) {
    QCustomPlot* p = plot();
    p->yAxis2->setVisible(true);
    m_note = addLegendAndNote(p, font());
    m_emptyLabel = addEmptyLabel(p);
    applyColors();
}

void TrafficTimelineChart::applyColors() {
    styleCommon();
    rebuild();
}

void TrafficTimelineChart::rebuild() {
    QCustomPlot* p = plot();
    const ChartColors& c = colors();
    p->clearGraphs();
    const bool show = m_result && m_status.isEmpty() && m_result->error.empty() &&
                      m_result->current.error.empty() && !m_result->current.series.t.empty();
    setTitle(m_result && m_result->currentRate > 0
                 ? tr("KV occupancy and queue at %1 req/s per replica (simulated)")
                       .arg(trafficRateQ(m_result->currentRate))
                 : tr("KV occupancy and queue over time, per replica (simulated)"));
    p->xAxis->setLabel(tr("Simulated time, s"));
    p->yAxis->setLabel(tr("KV blocks in use, % of pool"));
    p->yAxis2->setLabel(tr("Requests"));
    double ymax2 = 1, tmax = 1;
    QString noneNote;
    if (show) {
        const core::sim::SimResult& r = m_result->current;
        const core::sim::TimeSeries& s = r.series;
        QVector<double> t(s.t.begin(), s.t.end());
        tmax = std::max(tmax, s.t.back());
        const double pool = std::max<double>(1, static_cast<double>(r.numBlocks));
        const QList<QColor> groupColors{c.current, c.steps[1], c.steps[3], c.steps[4]};
        for (std::size_t g = 0; g < s.blocksInUse.size(); ++g) {
            QVector<double> v;
            for (const std::int64_t b : s.blocksInUse[g])
                v << 100.0 * static_cast<double>(b) / pool;
            QCPGraph* gr = p->addGraph(p->xAxis, p->yAxis);
            gr->setName(
                tr("KV blocks: %1")
                    .arg(g < r.groupLabels.size() ? qs(r.groupLabels[g]) : QString::number(g)));
            gr->setPen(QPen(groupColors[static_cast<int>(g) % groupColors.size()], 2));
            gr->setData(t, v, true);
        }
        QStringList none;
        auto queue = [&](const std::vector<std::int64_t>& v, const QString& name, QPen pen) {
            // A series that stays 0 lies on the axis: named in the note, not in the legend.
            if (std::all_of(v.begin(), v.end(), [](std::int64_t x) { return x == 0; })) {
                none << name;
                return;
            }
            QVector<double> y;
            for (const std::int64_t x : v) {
                y << static_cast<double>(x);
                ymax2 = std::max(ymax2, static_cast<double>(x));
            }
            QCPGraph* gr = p->addGraph(p->xAxis, p->yAxis2);
            gr->setName(name);
            gr->setPen(pen);
            gr->setData(t, y, true);
        };
        queue(s.running, tr("running"), QPen(c.steps[2], 1.5));
        queue(s.waiting, tr("waiting"), QPen(c.cap, 1.5, Qt::DashLine));
        queue(s.preempted, tr("preempted (so far)"), QPen(c.kvLine, 1.5, Qt::DotLine));
        if (!none.isEmpty())
            noneNote = tr("Always 0: %1. ").arg(none.join(QStringLiteral(", ")));
    }
    p->xAxis->setRange(0, tmax * 1.02);
    p->yAxis->setRange(0, 105);
    p->yAxis2->setRange(0, ymax2 * 1.15);
    QString empty = m_status;
    if (empty.isEmpty() && !m_result)
        empty = tr("Not simulated yet");
    else if (empty.isEmpty() && !m_result->error.empty())
        empty = tr("Not simulated: %1").arg(qs(m_result->error));
    else if (empty.isEmpty() && !m_result->current.error.empty())
        empty = tr("Not simulated: %1").arg(qs(m_result->current.error));
    // Inside the plot, clear of the axes' labels (the axis rect of the last layout).
    m_emptyLabel->setText(wrapToWidth(
        empty, font(), std::max(120, std::min(plotAreaRect().width(), width() - 110) - 16)));
    m_emptyLabel->setVisible(!empty.isEmpty());
    p->legend->setVisible(p->legend->itemCount() > 0);
    const int w = std::max(160, width() - 24);
    QString note;
    if (show) {
        const core::sim::SimResult& r = m_result->current;
        note = tr("Pool: %1 blocks; %2 requests served, %3 preemptions, p99 TTFT %4 ms. ")
                   .arg(thousandsQ(r.numBlocks), thousandsQ(r.completed), thousandsQ(r.preemptions),
                        msText(r.ttftMs.p99)) +
               noneNote;
        if (!r.capped.empty())
            note += qs(r.capped) + QStringLiteral(". ");
    }
    if (m_result)
        note += shortAssumptions(m_result->inputs);
    m_note->setText(wrapToWidth(note, m_note->font(), w));
    fitLegendColumns(p->legend, w);
    requestReplot();
}

QString TrafficTimelineChart::csv() const {
    QString out = QStringLiteral("# simulated per replica: %1\n")
                      .arg(m_result ? qs(trafficAssumptions(m_result->inputs)) : QString());
    if (!m_result || m_result->current.series.t.empty())
        return out + QStringLiteral("time_s,running,waiting,preempted\n");
    const core::sim::SimResult& r = m_result->current;
    const core::sim::TimeSeries& s = r.series;
    out += QStringLiteral("time_s,running,waiting,preempted");
    for (const std::string& g : r.groupLabels)
        out += QStringLiteral(",blocks_in_use ") + csvQuote(qs(g));
    out += QStringLiteral(",pool_blocks\n");
    for (std::size_t i = 0; i < s.t.size(); ++i) {
        out += QString::number(s.t[i], 'g', 10) + QLatin1Char(',') + QString::number(s.running[i]) +
               QLatin1Char(',') + QString::number(s.waiting[i]) + QLatin1Char(',') +
               QString::number(s.preempted[i]);
        for (const auto& g : s.blocksInUse)
            out += QLatin1Char(',') + QString::number(g[i]);
        out += QLatin1Char(',') + QString::number(r.numBlocks) + QLatin1Char('\n');
    }
    return out;
}

} // namespace kvl::widgets
