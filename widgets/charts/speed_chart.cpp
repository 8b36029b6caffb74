#include "widgets/charts/speed_chart.h"

#include "widgets/charts/axis_tickers_p.h"
#include "widgets/charts/chart_text_p.h"
#include "widgets/charts/text_width.h"
#include "widgets/export/csv.h"

#include "core/engine.h"

#include <QFontMetrics>

#include <cmath>
#include <limits>

namespace kvl::widgets {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString rate(double tokensPerSecond) {
    return thousandsQ(static_cast<std::int64_t>(std::llround(tokensPerSecond)));
}

QString perUser(double tokensPerSecond) {
    return QString::number(tokensPerSecond, 'f', tokensPerSecond < 100 ? 1 : 0);
}

} // namespace

PredictedSpeedChart::PredictedSpeedChart(SpeedView view, QWidget* parent)
    : ChartWidget(parent), m_view(view) {
    QCustomPlot* p = plot();
    m_metric = view == SpeedView::Concurrency ? SpeedMetric::ClusterTokensPerSecond
                                              : SpeedMetric::TokensPerSecondPerUser;
    p->xAxis->setScaleType(QCPAxis::stLogarithmic);
    if (view == SpeedView::Concurrency)
        p->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new CountLogTicker));
    else
        p->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new TokenLogTicker));
    p->xAxis->grid()->setSubGridVisible(false);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    // Rows: title, cursor line, plot, legend, assumptions. The legend sits under the plot, where
    // it never hides a curve.
    m_cursorLabel = addCursorRow(p, small);
    placeLegendInRow(p, 3);
    p->legend->setVisible(true);
    p->legend->setFont(small);
    p->legend->setIconSize(24, 10);
    QFont tiny = font();
    tiny.setPointSizeF(tiny.pointSizeF() * 0.78);
    m_assumptionsLabel = new CachedTextElement(p, QString(), tiny);
    m_assumptionsLabel->setMargins(QMargins(6, 2, 6, 4));
    m_assumptionsLabel->setTextFlags(Qt::AlignLeft | Qt::AlignVCenter);
    p->plotLayout()->addElement(4, 0, m_assumptionsLabel);
    p->plotLayout()->setRowStretchFactor(1, 0.001);
    p->plotLayout()->setRowStretchFactor(4, 0.001);

    addMarkedLines(p, small, m_memory, m_seqs);
    for (QCPItemText* t : {m_memory.text, m_seqs.text}) {
        t->position->setTypeX(QCPItemPosition::ptPlotCoords);
        t->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        // Along the line, on its right, reading upwards: every curve ends at or left of the
        // nearer line, so no curve crosses the labels, nor do they cross each other.
        t->setRotation(-90);
        t->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
        t->setPadding(QMargins(0, 3, 4, 1));
    }
    m_emptyLabel = addEmptyLabel(p);
    m_tracer = new QCPItemTracer(p);
    m_tracer->setStyle(QCPItemTracer::tsCircle);
    m_tracer->setSize(8);
    m_tracer->setVisible(false);
    setTitle(view == SpeedView::Concurrency ? tr("Decode speed vs concurrency (estimate)")
                                            : tr("Decode speed vs context (estimate)"));
    applyColors();
}

void PredictedSpeedChart::applyColors() {
    styleAxes();
    const ChartColors& c = colors();
    styleMarkedLines(c, m_memory, m_seqs);
    m_cursorLabel->setTextColor(c.foreground);
    m_assumptionsLabel->setTextColor(c.cursor.darker(c.dark ? 70 : 130));
    m_emptyLabel->setColor(c.kvLine);
    m_tracer->setPen(QPen(c.current, 1.5));
    m_tracer->setBrush(QBrush(c.background));
    rebuild();
}

void PredictedSpeedChart::resizeEvent(QResizeEvent* event) {
    ChartWidget::resizeEvent(event);
    updateAssumptions(); // re-wraps the text lines and the legend to the new width
    requestReplot();
}

void PredictedSpeedChart::setView(const LedgerView& view) {
    const bool data = view.snapshot != m_snapshot;
    m_snapshot = view.snapshot;
    setUnits(view.units);
    if (data) {
        recompute();
        rebuild();
    }
}

void PredictedSpeedChart::setCalibration(const SpeedCalibration& calibration) {
    m_calibration = calibration;
    recompute();
    rebuild();
}

void PredictedSpeedChart::setMetric(SpeedMetric metric) {
    if (metric == m_metric)
        return;
    m_metric = metric;
    rebuild(); // the curves hold both columns: nothing to recompute
}

QString PredictedSpeedChart::emptyText() const {
    return m_error;
}

void PredictedSpeedChart::recompute() {
    ++m_recomputes;
    m_series.clear();
    m_error.clear();
    m_cursorText.clear();
    m_memoryLimit = m_maxNumSeqs = m_concurrency = 0;
    if (!m_snapshot)
        return;
    const core::Scenario& s = m_snapshot->scenario;
    const core::LedgerResult& r = m_snapshot->ledger;
    m_maxNumSeqs = core::effectiveMaxNumSeqs(s);
    m_memoryLimit = r.maxRequestsAtContext;
    m_concurrency = chosenConcurrency(s, r);
    // The error state: never the previous scenario's curves.
    if (!r.error.empty()) {
        m_error = (r.refused ? tr("vLLM refuses to start:\n%1") : tr("Not computed:\n%1"))
                      .arg(qs(r.error));
        return;
    }
    if (m_memoryLimit <= 0) {
        m_error = tr("No request of %1 tokens fits").arg(formatTokensQ(r.contextTokens));
        return;
    }
    const core::SpeedAssumptions& a = m_calibration.assumptions;
    const auto& ladder = m_snapshot->ladder;
    std::size_t lastApplied = 0;
    for (std::size_t i = 0; i < ladder.size(); ++i)
        if (ladder[i].applied)
            lastApplied = i;
    const std::int64_t batch = std::max<std::int64_t>(1, m_concurrency);
    for (std::size_t i = 0; i < ladder.size(); ++i) {
        const core::LadderStep& st = ladder[i];
        if (!st.applied)
            continue;
        Series sr;
        sr.step = st.id;
        sr.current = i == lastApplied;
        sr.name = sr.current ? tr("Current: %1").arg(qs(st.label)) : qs(st.label);
        sr.scenario = st.scenario;
        if (m_view == SpeedView::Concurrency) {
            sr.curve = core::speedVsConcurrency(st.scenario, a);
            // Only what fits: a step that holds no request has no curve.
            while (!sr.curve.x.empty() && sr.curve.x.back() > sr.curve.memoryLimit) {
                sr.curve.x.pop_back();
                sr.curve.stepMs.pop_back();
                sr.curve.tokensPerSecondPerUser.pop_back();
                sr.curve.clusterTokensPerSecond.pop_back();
            }
        } else {
            const core::SpeedCurve all = core::speedVsContext(st.scenario, batch, a);
            sr.curve.memoryLimit = all.memoryLimit;
            sr.curve.maxNumSeqs = all.maxNumSeqs;
            // The curve ends where `batch` requests of the context no longer fit.
            for (std::size_t k = 0; k < all.x.size(); ++k) {
                if (core::computePoint(st.scenario, all.x[k]).maxRequests < batch)
                    break;
                sr.curve.x.push_back(all.x[k]);
                sr.curve.stepMs.push_back(all.stepMs[k]);
                sr.curve.tokensPerSecondPerUser.push_back(all.tokensPerSecondPerUser[k]);
                sr.curve.clusterTokensPerSecond.push_back(all.clusterTokensPerSecond[k]);
            }
        }
        if (sr.curve.x.empty())
            sr.name += m_view == SpeedView::Concurrency
                           ? tr(" (no request fits)")
                           : tr(" (%1 never fit)").arg(thousandsQ(batch));
        m_series.push_back(std::move(sr));
    }
    if (m_concurrency > 0) {
        const core::DecodeStep d = core::decodeStep(s, m_concurrency, r.contextTokens, a);
        m_cursorText =
            tr("At %1 requests per replica (%2) × %3 tokens: %4 tokens/s per user · %5 tokens/s "
               "cluster · %6 ms per step, %7")
                .arg(thousandsQ(m_concurrency),
                     s.workload.concurrency > 0 ? tr("the scenario's concurrency")
                                                : tr("as many as fit"),
                     formatTokensQ(r.contextTokens), perUser(d.tokensPerSecondPerUser),
                     rate(d.clusterTokensPerSecond), QString::number(d.stepMs, 'f', 1),
                     qs(core::regimeName(d.regime)));
    }
}

double PredictedSpeedChart::value(const core::SpeedCurve& c, std::size_t i) const {
    const auto& v = m_metric == SpeedMetric::ClusterTokensPerSecond ? c.clusterTokensPerSecond
                                                                    : c.tokensPerSecondPerUser;
    return i < v.size() ? v[i] : kNaN;
}

double PredictedSpeedChart::memoryLineX() const {
    return m_view == SpeedView::Concurrency && m_error.isEmpty() && m_memoryLimit > 0
               ? double(m_memoryLimit)
               : kNaN;
}

double PredictedSpeedChart::maxNumSeqsLineX() const {
    return m_view == SpeedView::Concurrency && m_error.isEmpty() && m_maxNumSeqs > 0
               ? double(m_maxNumSeqs)
               : kNaN;
}

QString PredictedSpeedChart::memoryLineLabel() const {
    return tr("memory holds %1").arg(thousandsQ(m_memoryLimit));
}

QString PredictedSpeedChart::maxNumSeqsLineLabel() const {
    return m_memoryLimit > m_maxNumSeqs ? tr("max_num_seqs %1 (caps)").arg(thousandsQ(m_maxNumSeqs))
                                        : tr("max_num_seqs %1").arg(thousandsQ(m_maxNumSeqs));
}

void PredictedSpeedChart::updateAssumptions() {
    // The text rows and the legend fit the chart's width: never clipped, whatever the size.
    const int w = std::max(160, width() - 24);
    m_assumptions =
        m_snapshot ? speedAssumptionsLine(m_snapshot->scenario, m_calibration) : QString();
    m_assumptionsLabel->setText(wrapToWidth(m_assumptions, m_assumptionsLabel->font(), w));
    const bool empty = !m_error.isEmpty() || !m_snapshot;
    m_cursorLabel->setText(empty ? QString() : wrapToWidth(m_cursorText, m_cursorLabel->font(), w));
    fitLegendColumns(plot()->legend, w);
}

void PredictedSpeedChart::rebuild() {
    QCustomPlot* p = plot();
    const ChartColors& c = colors();
    const bool concurrencyView = m_view == SpeedView::Concurrency;
    const bool cluster = m_metric == SpeedMetric::ClusterTokensPerSecond;
    QString scopeNote;
    if (m_snapshot && replicaCount(m_snapshot->scenario) > 1)
        scopeNote = tr(" (DP %1 × replica)").arg(replicaCount(m_snapshot->scenario));
    p->yAxis->setLabel(cluster ? tr("Output tokens/s, cluster%1").arg(scopeNote)
                               : tr("Output tokens/s per user"));
    if (concurrencyView) {
        p->xAxis->setLabel(tr("Running requests per replica (concurrency, log)"));
        setTitle(m_snapshot ? tr("Decode speed vs concurrency at %1 tokens (estimate)")
                                  .arg(formatTokensQ(m_snapshot->ledger.contextTokens))
                            : tr("Decode speed vs concurrency (estimate)"));
    } else {
        p->xAxis->setLabel(tr("Context length (tokens per request, log)"));
        setTitle(m_snapshot && m_concurrency > 0
                     ? tr("Decode speed vs context at %1 requests per replica (estimate)")
                           .arg(thousandsQ(m_concurrency))
                     : tr("Decode speed vs context (estimate)"));
    }
    if (p->graphCount() != static_cast<int>(m_series.size())) {
        p->clearGraphs();
        for (std::size_t i = 0; i < m_series.size(); ++i)
            p->addGraph();
    }
    double xmax = 1, ymax = 0;
    double xmin = std::numeric_limits<double>::infinity();
    QVector<double> keys, values;
    for (std::size_t gi = 0; gi < m_series.size(); ++gi) {
        const Series& s = m_series[gi];
        QCPGraph* g = p->graph(static_cast<int>(gi));
        g->setName(s.name);
        g->setPen(s.current
                      ? QPen(c.current, 2.5)
                      : QPen(c.steps[static_cast<std::size_t>(s.step) % c.steps.size()], 1.5));
        keys.clear();
        values.clear();
        for (std::size_t i = 0; i < s.curve.x.size(); ++i) {
            const double v = value(s.curve, i);
            if (!std::isfinite(v))
                continue;
            keys.push_back(double(s.curve.x[i]));
            values.push_back(v);
            xmax = std::max(xmax, keys.back());
            xmin = std::min(xmin, keys.back());
            ymax = std::max(ymax, v);
        }
        g->setData(keys, values, true);
    }
    const bool empty = !m_error.isEmpty() || !m_snapshot;
    m_emptyLabel->setVisible(empty && m_snapshot);
    m_emptyLabel->setText(m_error);
    // The limits of the current scenario, per replica: a vertical line at x (NaN: hidden) with
    // its label `textY` up the plot, the label made only when shown.
    auto placeLimit = [&](const MarkedLine& m, double x, double textY,
                          QString (PredictedSpeedChart::*label)() const) {
        showMarkedLine(m, !std::isnan(x));
        if (std::isnan(x))
            return;
        m.line->point1->setCoords(x, 0);
        m.line->point2->setCoords(x, 1);
        m.text->position->setCoords(x, textY);
        m.text->setText((this->*label)());
        xmax = std::max(xmax, x);
    };
    placeLimit(m_memory, memoryLineX(), 0.02, &PredictedSpeedChart::memoryLineLabel);
    placeLimit(m_seqs, maxNumSeqsLineX(), 0.12, &PredictedSpeedChart::maxNumSeqsLineLabel);
    if (concurrencyView) {
        p->xAxis->setRange(0.8, std::max(4.0, xmax * 1.35));
    } else if (m_snapshot && !m_snapshot->sweep.contexts.empty()) {
        p->xAxis->setRange(double(m_snapshot->sweep.contexts.front()),
                           double(std::max<std::int64_t>(m_snapshot->sweep.contexts.back(),
                                                         m_snapshot->ledger.contextTokens)));
    } else if (std::isfinite(xmin)) {
        p->xAxis->setRange(xmin, xmax);
    }
    p->yAxis->setRange(0, ymax > 0 ? ymax * 1.22 : 1);
    // The cursor: the chosen concurrency on the current curve (the current context in the
    // context view).
    m_tracer->setVisible(false);
    if (!empty && m_concurrency > 0 && !m_series.empty() && m_series.back().current) {
        const core::Scenario& s = m_snapshot->scenario;
        const core::DecodeStep d = core::decodeStep(
            s, m_concurrency, m_snapshot->ledger.contextTokens, m_calibration.assumptions);
        const double y = cluster ? d.clusterTokensPerSecond : d.tokensPerSecondPerUser;
        const double x =
            concurrencyView ? double(m_concurrency) : double(m_snapshot->ledger.contextTokens);
        m_tracer->position->setCoords(x, y);
        m_tracer->setVisible(y > 0);
    }
    p->legend->setVisible(!m_series.empty());
    updateAssumptions();
    requestReplot();
}

QString PredictedSpeedChart::describePoint(const QCPGraph* graph, int index) const {
    for (int gi = 0; gi < plot()->graphCount() && gi < static_cast<int>(m_series.size()); ++gi) {
        if (plot()->graph(gi) != graph)
            continue;
        const Series& s = m_series[static_cast<std::size_t>(gi)];
        // The graph drops non-finite points, so find the curve point by key.
        const double key = graph->data()->at(index)->key;
        for (std::size_t i = 0; i < s.curve.x.size(); ++i) {
            if (double(s.curve.x[i]) != key)
                continue;
            const std::int64_t batch = m_view == SpeedView::Concurrency
                                           ? s.curve.x[i]
                                           : std::max<std::int64_t>(1, m_concurrency);
            const std::int64_t context =
                m_view == SpeedView::Concurrency ? s.scenario.workload.context : s.curve.x[i];
            return tr("%1\n%2 requests per replica × %3 tokens\n%4 tokens/s per user, %5 tokens/s "
                      "cluster\n%6 ms per decode step")
                .arg(s.name, thousandsQ(batch), formatTokensQ(context),
                     perUser(s.curve.tokensPerSecondPerUser[i]),
                     rate(s.curve.clusterTokensPerSecond[i]),
                     QString::number(s.curve.stepMs[i], 'f', 2));
        }
    }
    return ChartWidget::describePoint(graph, index);
}

QString PredictedSpeedChart::csv() const {
    QString out = QStringLiteral("series,requests_per_replica,context_tokens,decode_step_ms,"
                                 "tokens_per_s_per_user,cluster_tokens_per_s,"
                                 "requests_that_fit_per_replica,max_num_seqs\n");
    const std::int64_t batch = std::max<std::int64_t>(1, m_concurrency);
    for (const Series& s : m_series) {
        for (std::size_t i = 0; i < s.curve.x.size(); ++i) {
            const bool byBatch = m_view == SpeedView::Concurrency;
            out += csvQuote(s.name) + QLatin1Char(',') +
                   QString::number(byBatch ? s.curve.x[i] : batch) + QLatin1Char(',') +
                   QString::number(byBatch ? s.scenario.workload.context : s.curve.x[i]) +
                   QLatin1Char(',') + QString::number(s.curve.stepMs[i], 'g', 10) +
                   QLatin1Char(',') + QString::number(s.curve.tokensPerSecondPerUser[i], 'g', 10) +
                   QLatin1Char(',') + QString::number(s.curve.clusterTokensPerSecond[i], 'g', 10) +
                   QLatin1Char(',') + QString::number(s.curve.memoryLimit) + QLatin1Char(',') +
                   QString::number(s.curve.maxNumSeqs) + QLatin1Char('\n');
        }
    }
    return out;
}

} // namespace kvl::widgets
