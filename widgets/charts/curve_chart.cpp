#include "widgets/charts/curve_chart.h"

#include "widgets/charts/axis_tickers_p.h"
#include "widgets/charts/chart_text_p.h"
#include "widgets/charts/text_width.h"
#include "widgets/export/csv.h"
#include "widgets/scenario/token_spin_box.h"

#include "core/engine.h"

#include <QMouseEvent>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvl::widgets {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A positive, finite sweep value (whole bytes or requests held as a double) as the count it
// is, saturated below INT64_MAX.
std::int64_t wholeCount(double v) {
    return static_cast<std::int64_t>(std::llround(std::min(v, 9.2e18)));
}

QString exactInt(double v) {
    return QString::number(static_cast<qlonglong>(std::llround(v)));
}

// The label of a level line (the KV pool, the max_num_seqs cap): x a fraction of the axis
// rect, y the line's level in plot coordinates, standing on the line.
QCPItemText* levelLabel(QCustomPlot* p, Qt::Alignment horizontal, const QFont& font) {
    auto* t = new QCPItemText(p);
    t->setPositionAlignment(horizontal | Qt::AlignBottom);
    t->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    t->position->setTypeY(QCPItemPosition::ptPlotCoords);
    t->setFont(font);
    return t;
}
} // namespace

CurveChart::CurveChart(CurveKind kind, QWidget* parent) : ChartWidget(parent), m_kind(kind) {
    QCustomPlot* p = plot();
    p->xAxis->setScaleType(QCPAxis::stLogarithmic);
    p->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new TokenLogTicker));
    p->xAxis->setLabel(tr("Context length (tokens per request, log scale)"));
    p->yAxis->setScaleType(QCPAxis::stLogarithmic);
    if (kind == CurveKind::Memory)
        p->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ByteLogTicker(units())));
    else
        p->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new CountLogTicker));
    p->xAxis->grid()->setSubGridVisible(false);
    p->yAxis->grid()->setSubGridVisible(kind == CurveKind::Concurrency);
    p->xAxis2->setVisible(true);
    p->yAxis2->setVisible(true);
    p->xAxis2->setTickLabels(false);
    p->yAxis2->setTickLabels(false);
    p->xAxis2->setTicks(false);
    p->yAxis2->setTicks(false);
    p->legend->setVisible(true);
    QFont legendFont = font();
    legendFont.setPointSizeF(legendFont.pointSizeF() * 0.85);
    p->legend->setFont(legendFont);
    p->legend->setRowSpacing(-2);

    m_poolLine = new QCPItemStraightLine(p);
    m_poolLine->setClipToAxisRect(true);
    m_poolLabel = levelLabel(p, Qt::AlignRight, legendFont);
    m_poolLine->setVisible(kind == CurveKind::Memory);
    m_poolLabel->setVisible(kind == CurveKind::Memory);

    m_cursor = new QCPItemStraightLine(p);
    m_cursorLabel = addCursorRow(p, legendFont);
    // The legend goes under the plot, never over a curve: rows are title, cursor, plot, legend.
    placeLegendInRow(p, 3);
    m_capLine = new QCPItemStraightLine(p);
    m_capLine->setClipToAxisRect(true);
    m_capLabelItem = levelLabel(p, Qt::AlignLeft, legendFont);
    m_capLabelItem->setClipToAxisRect(true);
    m_capLine->setVisible(false);
    m_capLabelItem->setVisible(false);
    m_emptyLabel = addEmptyLabel(p);
    // Measured points draw above the legend: it must never hide a measurement.
    p->addLayer(QStringLiteral("measured"), p->layer(QStringLiteral("legend")),
                QCustomPlot::limAbove);
    m_tracer = new QCPItemTracer(p);
    m_tracer->setStyle(QCPItemTracer::tsCircle);
    m_tracer->setSize(8);
    updateLabels();
    applyColors();
}

void CurveChart::updateLabels() {
    QCustomPlot* p = plot();
    const QString scope = scopeLabel(m_scope);
    if (m_kind == CurveKind::Memory) {
        setTitle(tr("KV cache per request vs context (%1)").arg(scope));
        p->yAxis->setLabel(tr("KV per request, %1 (log)").arg(scope));
    } else {
        // Every GPU of a replica serves the same requests: they are per replica or cluster.
        setTitle(tr("Max concurrent requests vs context (%1)")
                     .arg(m_scope == FigureScope::Cluster ? scope
                                                          : scopeLabel(FigureScope::PerReplica)));
        p->yAxis->setLabel(m_scope == FigureScope::Cluster
                               ? tr("Requests that fit, cluster (log)")
                               : tr("Requests that fit, per replica (log)"));
    }
}

double CurveChart::scoped(double v, const core::Scenario& s) const {
    if (!(v > 0) || !std::isfinite(v))
        return v;
    const std::int64_t n = wholeCount(v);
    return static_cast<double>(m_kind == CurveKind::Memory ? scopeBytes(n, s, m_scope)
                                                           : scopeRequests(n, s, m_scope));
}

void CurveChart::resizeEvent(QResizeEvent* event) {
    ChartWidget::resizeEvent(event);
    const int columns = width() < 480 ? 2 : 3;
    if (plot()->legend->wrap() != columns) {
        plot()->legend->setWrap(columns);
        plot()->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
    }
    updateAxes(); // the placeholder wraps to the new width
    requestReplot();
}

std::int64_t CurveChart::contextAt(const QPoint& pos) const {
    if (!m_snapshot || m_snapshot->sweep.contexts.empty())
        return 0;
    const auto at = plotCoordsAt(pos);
    if (!at)
        return 0;
    const double key = at->x();
    const auto& ctx = m_snapshot->sweep.contexts;
    const double lo = double(ctx.front()), hi = double(ctx.back());
    // The slider's stops (1, 1.25, 1.5, 1.75 x 2^k): a click gives the round number the slider
    // would, not 17,381 tokens; nearest in log space.
    std::int64_t best = 0;
    double bestDist = std::numeric_limits<double>::infinity();
    for (std::int64_t stop : contextSliderStops()) {
        if (double(stop) < lo || double(stop) > hi)
            continue;
        const double d = std::abs(std::log(double(stop)) - std::log(std::max(1.0, key)));
        if (d < bestDist) {
            bestDist = d;
            best = stop;
        }
    }
    if (best == 0) // a range between two stops, or beyond the slider's 1M
        best = static_cast<std::int64_t>(std::llround(std::clamp(key, lo, hi)));
    return best;
}

bool CurveChart::eventFilter(QObject* watched, QEvent* event) {
    if (watched == plot() &&
        (event->type() == QEvent::MouseButtonPress || event->type() == QEvent::MouseMove)) {
        auto* me = static_cast<QMouseEvent*>(event);
        const bool pressed = event->type() == QEvent::MouseButtonPress
                                 ? me->button() == Qt::LeftButton
                                 : me->buttons().testFlag(Qt::LeftButton);
        if (pressed) {
            const std::int64_t tokens = contextAt(plot()->mapTo(this, me->position().toPoint()));
            if (tokens > 0 &&
                (event->type() == QEvent::MouseButtonPress || tokens != m_lastPicked)) {
                m_lastPicked = tokens;
                emit contextPicked(tokens);
            }
        }
    }
    return ChartWidget::eventFilter(watched, event);
}

void CurveChart::applyColors() {
    styleAxes();
    const ChartColors& c = colors();
    QPen poolPen(c.kvLine, 1.5, Qt::SolidLine);
    m_poolLine->setPen(poolPen);
    m_poolLabel->setColor(c.kvLine);
    m_cursor->setPen(QPen(c.cursor, 1, Qt::DashDotLine));
    m_cursorLabel->setTextColor(c.foreground);
    m_tracer->setPen(QPen(c.current, 1.5));
    m_emptyLabel->setColor(c.kvLine);
    m_tracer->setBrush(QBrush(c.background));
    m_capLine->setPen(QPen(c.cap, 1.5, Qt::DashLine));
    m_capLabelItem->setColor(c.cap);
    rebuild();
}

void CurveChart::unitsChanged() {
    if (auto t = plot()->yAxis->ticker().dynamicCast<ByteLogTicker>())
        t->setUnits(units());
    updateAxes();
    updateCursor();
}

void CurveChart::setView(const LedgerView& view) {
    const bool scopeChanged = view.scope != m_scope;
    const bool data = view.snapshot != m_snapshot || view.reference != m_reference || scopeChanged;
    const bool relabel = view.units != units();
    m_snapshot = view.snapshot;
    m_reference = view.reference;
    m_scope = view.scope;
    if (scopeChanged)
        updateLabels();
    setUnits(view.units); // re-labels the axes and the cursor
    // The measured points' tooltips carry units too.
    if (data || (relabel && m_report)) {
        updateMeasured();
        rebuild();
    }
}

void CurveChart::setProbeReport(const probe::ProbeReport& report) {
    m_report = report.rows.empty() ? nullptr : std::make_shared<const probe::ProbeReport>(report);
    const bool had = !m_measured.empty();
    updateMeasured();
    if (had || !m_measured.empty())
        rebuild();
}

void CurveChart::updateMeasured() {
    m_measured.clear();
    m_measuredNote.clear();
    if (!m_report || !m_snapshot)
        return;
    if (m_snapshot->invalid)
        return;
    m_measured = measuredOverlay(*m_report, *m_snapshot, m_kind, units());
    for (MeasuredSeries& m : m_measured)
        for (MeasuredPoint& pt : m.points)
            pt.y = scoped(pt.y, m_snapshot->scenario);
    // Points measured for another model are not shown; the note says for which they were.
    m_measuredNote = widgets::measuredNote(*m_report, *m_snapshot);
}

double CurveChart::curveValue(const core::Curve& curve, std::size_t i,
                              const core::Scenario& s) const {
    if (m_kind == CurveKind::Memory) {
        if (i >= curve.bytesPerRequestPerGpu.size() || i >= curve.bytesPerRequest.size())
            return kNaN;
        const double gpu = curve.bytesPerRequestPerGpu[i];
        if (!(gpu > 0) || !std::isfinite(gpu))
            return gpu;
        // Per replica, the sweep's exact total (PP stages of unequal layers hold unequally).
        return static_cast<double>(
            scopeBytes(wholeCount(gpu), wholeCount(curve.bytesPerRequest[i]), s, m_scope));
    }
    const double v = i < curve.maxRequests.size() ? curve.maxRequests[i] : kNaN;
    return v > 0 ? scoped(v, s) : kNaN; // zero requests has no place on a log axis
}

std::vector<CurveChart::Series> CurveChart::seriesList(bool drawnOnly) const {
    std::vector<Series> out;
    if (!m_snapshot)
        return out;
    const LedgerSnapshot& s = *m_snapshot;
    const auto& curves = s.sweep.curves;
    const core::Curve* current = nullptr;
    for (const auto& c : curves)
        if (c.isCurrent)
            current = &c;
    // What this chart draws of a curve: a step with no point to draw (a baseline that holds 0
    // requests everywhere) or drawn exactly under a later one (a "+paging" hidden by the
    // emphasized current) is left out, so the legend lists only the lines one can see.
    auto drawn = [&](const core::Curve& c) {
        std::vector<double> v(s.sweep.contexts.size());
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = curveValue(c, i, s.scenario);
        return v;
    };
    auto sameLine = [](const std::vector<double>& a, const std::vector<double>& b) {
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))))
                return false;
        return a.size() == b.size();
    };
    std::vector<std::vector<double>> lines(curves.size());
    for (std::size_t i = 0; i < curves.size(); ++i)
        if (curves[i].isCurrent || curves[i].applied)
            lines[i] = drawn(curves[i]);
    const std::vector<double> currentLine = current ? drawn(*current) : std::vector<double>{};
    for (std::size_t i = 0; i < curves.size(); ++i) {
        const core::Curve& c = curves[i];
        if (c.isCurrent || !c.applied)
            continue;
        if (!drawnOnly) {
            out.push_back({qs(c.label), static_cast<int>(c.step), false, &c, &s.sweep.contexts});
            continue;
        }
        if (std::all_of(lines[i].begin(), lines[i].end(), [](double v) { return std::isnan(v); }))
            continue;
        bool hidden = current && sameLine(lines[i], currentLine);
        for (std::size_t j = i + 1; !hidden && j < curves.size(); ++j)
            hidden = !curves[j].isCurrent && curves[j].applied && sameLine(lines[i], lines[j]);
        if (hidden)
            continue;
        out.push_back({qs(c.label), static_cast<int>(c.step), false, &c, &s.sweep.contexts});
    }
    if (current)
        out.push_back({currentSeriesName(), -1, false, current, &s.sweep.contexts});
    if (m_reference) {
        for (const auto& c : m_reference->sweep.curves)
            if (c.isCurrent)
                out.push_back({referenceSeriesName(), -1, true, &c, &m_reference->sweep.contexts});
    }
    return out;
}

void CurveChart::rebuild() {
    QCustomPlot* p = plot();
    const ChartColors& c = colors();
    const std::vector<Series> list = seriesList();
    // Reuse the graphs (and their legend items) while the number of curves and of measured
    // series stays the same: a lever change then swaps data and names in place (a legend item
    // reads its graph's name when drawn). Removing and adding graphs cost about 3% of a paging
    // toggle's time (perf of bench_replot), most of it QCustomPlot unhooking the legend items.
    QStringList names;
    for (const Series& s : list)
        names << s.name;
    for (const MeasuredSeries& m : m_measured)
        names << m.name;
    if (p->graphCount() == static_cast<int>(names.size()) &&
        m_curveGraphs == static_cast<int>(list.size())) {
        for (int i = 0; i < names.size(); ++i)
            if (p->graph(i)->name() != names[i])
                p->graph(i)->setName(names[i]);
    } else {
        p->clearGraphs();
        for (const QString& n : names)
            p->addGraph()->setName(n);
    }
    m_curveGraphs = static_cast<int>(list.size());
    QVector<double> keys, values;
    for (std::size_t gi = 0; gi < list.size(); ++gi) {
        const Series& s = list[gi];
        QCPGraph* g = p->graph(static_cast<int>(gi));
        QPen pen;
        if (s.colorIndex >= 0)
            pen = QPen(c.steps[static_cast<std::size_t>(s.colorIndex) % c.steps.size()], 1.5);
        else
            pen = QPen(c.current, s.reference ? 2.0 : 2.5);
        if (s.reference)
            pen.setStyle(Qt::DashLine);
        g->setPen(pen);
        keys.clear();
        values.clear();
        keys.reserve(static_cast<qsizetype>(s.contexts->size()));
        values.reserve(static_cast<qsizetype>(s.contexts->size()));
        const core::Scenario& scen =
            s.reference && m_reference ? m_reference->scenario : m_snapshot->scenario;
        for (std::size_t i = 0; i < s.contexts->size(); ++i) {
            const double v = curveValue(*s.curve, i, scen);
            if (std::isnan(v))
                continue;
            keys.push_back(static_cast<double>((*s.contexts)[i]));
            values.push_back(v);
        }
        g->setData(keys, values, true);
    }
    for (QCPItemText* t : m_measuredLabels)
        p->removeItem(t);
    m_measuredLabels.clear();
    QFont labelFont = font();
    labelFont.setPointSizeF(labelFont.pointSizeF() * 0.8);
    for (std::size_t mi = 0; mi < m_measured.size(); ++mi) {
        const MeasuredSeries& m = m_measured[mi];
        QCPGraph* g = p->graph(m_curveGraphs + static_cast<int>(mi));
        g->setLayer(QStringLiteral("measured"));
        g->removeFromLegend(); // one label per format beside its last point instead
        const QColor col = formatColor(m.colorIndex, c.dark);
        g->setLineStyle(QCPGraph::lsNone);
        g->setPen(QPen(col, 1.5));
        g->setScatterStyle(
            QCPScatterStyle(static_cast<QCPScatterStyle::ScatterShape>(formatMarker(m.colorIndex)),
                            QPen(col, 1.5), QBrush(c.background), 9));
        keys.clear();
        values.clear();
        for (const MeasuredPoint& pt : m.points) {
            if (!(pt.y > 0) || !(pt.x > 0))
                continue;
            keys.push_back(pt.x);
            values.push_back(pt.y);
        }
        g->setData(keys, values, true);
        if (!keys.isEmpty()) {
            auto* t = new QCPItemText(p);
            t->setLayer(QStringLiteral("measured"));
            t->position->setCoords(keys.back(), values.back());
            t->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
            t->setPadding(QMargins(8, 0, 0, 0));
            t->setFont(labelFont);
            t->setColor(col);
            t->setClipToAxisRect(true);
            QString label = m.name;
            label.remove(QStringLiteral("Measured "));
            t->setText(label);
            m_measuredLabels.push_back(t);
        }
    }
    updateAxes();
    updateCursor();
    requestReplot();
}

int CurveChart::placeholderWidth() const {
    // The axis rect's width as last laid out, or 3/5 of the chart's when that is smaller (the
    // plot narrows once tick labels are laid out after a change).
    return std::max(120, std::min(plotAreaRect().width(), width() * 3 / 5) - 24);
}

QString CurveChart::placeholderText() const {
    return m_emptyLabel->visible() ? m_emptyLabel->text() : QString();
}

QRect CurveChart::placeholderRect() const {
    if (!m_emptyLabel->visible())
        return {};
    const QFontMetrics fm(m_emptyLabel->font());
    const QRect area = plotAreaRect();
    const QRect text =
        fm.boundingRect(QRect(0, 0, area.width(), 10000), Qt::AlignCenter, m_emptyLabel->text());
    QRect r(QPoint(0, 0),
            text.size() + QSize(m_emptyLabel->padding().left() + m_emptyLabel->padding().right(),
                                m_emptyLabel->padding().top() + m_emptyLabel->padding().bottom()));
    r.moveCenter(area.center());
    return r;
}

QString CurveChart::capLabel() const {
    return m_capLine->visible() ? m_capLabelItem->text() : QString();
}

void CurveChart::updateAxes() {
    QCustomPlot* p = plot();
    if (!m_snapshot)
        return;
    if (m_snapshot->invalid || m_snapshot->sweep.contexts.empty()) {
        // Not computed: the error instead of the old curves, wrapped to fit the plot.
        const QString why = m_snapshot->invalid
                                ? tr("Not computed: %1").arg(qs(m_snapshot->ledger.error))
                                : tr("Nothing to plot");
        m_emptyLabel->setText(wrapToWidth(why, m_emptyLabel->font(), placeholderWidth()));
        m_emptyLabel->setVisible(true);
        m_poolLine->setVisible(false);
        m_poolLabel->setVisible(false);
        m_capLine->setVisible(false);
        m_capLabelItem->setVisible(false);
        m_capValue = 0;
        return;
    }
    const core::Scenario& scen = m_snapshot->scenario;
    const auto& ctx = m_snapshot->sweep.contexts;
    p->xAxis->setRange(double(ctx.front()), double(ctx.back()));
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (int i = 0; i < p->graphCount(); ++i) {
        const auto data = p->graph(i)->data();
        for (auto it = data->constBegin(); it != data->constEnd(); ++it) {
            if (it->value > 0) {
                lo = std::min(lo, it->value);
                hi = std::max(hi, it->value);
            }
        }
    }
    const double pool = scoped(double(m_snapshot->sweep.availableKvBytes), scen);
    if (m_kind == CurveKind::Memory && pool > 0) {
        hi = std::max(hi, pool);
        lo = std::min(lo, pool);
    }
    const bool empty = !(hi > 0) || !std::isfinite(lo);
    // vLLM never runs more than max_num_seqs requests per replica: the cap, drawn where the
    // curves rise above it.
    m_capValue = 0;
    if (m_kind == CurveKind::Concurrency && !empty) {
        const std::int64_t cap = core::effectiveMaxNumSeqs(scen);
        m_capValue = scoped(double(cap), scen);
        if (hi >= m_capValue) {
            lo = std::min(lo, m_capValue);
        } else {
            m_capValue = 0; // every curve is below it: the cap changes nothing here
        }
        m_capLabelItem->setText(
            tr("max_num_seqs %1 %2%3")
                .arg(thousandsQ(static_cast<std::int64_t>(m_capValue)),
                     m_scope == FigureScope::Cluster ? tr("(cluster)") : tr("per replica"),
                     scen.engine.maxNumSeqs > 0 ? QString() : tr(", vLLM's default")));
    }
    m_capLine->setVisible(m_capValue > 0);
    m_capLabelItem->setVisible(m_capValue > 0);
    m_capLine->point1->setCoords(1, m_capValue);
    m_capLine->point2->setCoords(2, m_capValue);
    m_capLabelItem->position->setCoords(0.01, m_capValue);
    if (empty) {
        lo = 1;
        hi = 100;
    }
    m_emptyLabel->setVisible(empty);
    m_emptyLabel->setText(wrapToWidth(m_kind == CurveKind::Concurrency
                                          ? tr("No request fits at any context (see the banner "
                                               "above the charts)")
                                          : tr("Nothing to plot"),
                                      m_emptyLabel->font(), placeholderWidth()));
    if (m_kind == CurveKind::Concurrency)
        lo = std::max(lo, 0.8);
    p->yAxis->setRange(lo / 1.6, hi * 1.6);
    p->xAxis2->setScaleType(QCPAxis::stLogarithmic);
    p->yAxis2->setScaleType(QCPAxis::stLogarithmic);
    p->xAxis2->setRange(p->xAxis->range());
    p->yAxis2->setRange(p->yAxis->range());

    m_poolLine->setVisible(m_kind == CurveKind::Memory);
    m_poolLabel->setVisible(m_kind == CurveKind::Memory);
    m_poolLine->point1->setCoords(1, pool);
    m_poolLine->point2->setCoords(2, pool);
    m_poolLabel->position->setCoords(0.99, pool);
    m_poolLabel->setText(
        tr("memory for KV, %1: %2")
            .arg(scopeLabel(m_scope), formatBytesQ(static_cast<std::int64_t>(pool), units(), 2)));
}

double CurveChart::cursorContext() const {
    return m_snapshot ? double(m_snapshot->ledger.contextTokens) : 0.0;
}

QString CurveChart::cursorText() const {
    return m_cursorText;
}

void CurveChart::updateCursor() {
    if (!m_snapshot || m_snapshot->invalid) {
        m_cursor->setVisible(false);
        m_tracer->setVisible(false);
        m_cursorText.clear();
        m_cursorLabel->setText(m_measuredNote);
        return;
    }
    const core::LedgerResult& r = m_snapshot->ledger;
    const core::Scenario& scen = m_snapshot->scenario;
    const double x = double(r.contextTokens);
    m_cursor->point1->setCoords(x, 1);
    m_cursor->point2->setCoords(x, 2);
    QStringList lines;
    QString note;
    lines << tr("%1 tokens").arg(formatTokensQ(r.contextTokens));
    double y = 0;
    if (m_kind == CurveKind::Memory) {
        const std::int64_t bytes =
            scopeBytes(r.kvBytesPerRequestPerGpu, r.kvBytesPerRequest, scen, m_scope);
        y = double(bytes);
        lines << tr("current: %1 per request %2 (%3 B)")
                     .arg(formatBytesQ(bytes, units()), scopeLabel(m_scope), thousandsQ(bytes));
        if (m_reference && !m_reference->invalid)
            lines << tr("reference: %1")
                         .arg(formatBytesQ(scopeBytes(m_reference->ledger.kvBytesPerRequestPerGpu,
                                                      m_reference->ledger.kvBytesPerRequest,
                                                      m_reference->scenario, m_scope),
                                           units()));
    } else {
        // The curve is what the memory holds; the figure quoted is what vLLM runs at once
        // (capped by max_num_seqs, 0 when it refuses to start), as everywhere else.
        const std::int64_t fit = scopeRequests(r.maxRequestsAtContext, scen, m_scope);
        const std::int64_t run = scopeRequests(r.requestsYouCanRun, scen, m_scope);
        y = double(fit);
        lines << (run == 1 ? tr("current: you can run 1 request")
                           : tr("current: you can run %1 requests").arg(thousandsQ(run)));
        if (r.refused)
            note = tr("vLLM refuses to start; the memory holds %1").arg(thousandsQ(fit));
        else if (run != fit)
            note = tr("the memory holds %1").arg(thousandsQ(fit));
        if (m_reference && !m_reference->invalid)
            lines << tr("reference: %1 requests")
                         .arg(thousandsQ(scopeRequests(m_reference->ledger.maxRequestsAtContext,
                                                       m_reference->scenario, m_scope)));
    }
    // The note on what the memory holds goes on a line of its own: on one line the label ran
    // past both sides of a 1366 px window's chart.
    const QString shown = lines.join(QStringLiteral(" · "));
    m_cursorText = note.isEmpty() ? shown : shown + QStringLiteral(" · ") + note;
    m_cursorLabel->setText(
        tr("Cursor at ") + shown + (note.isEmpty() ? QString() : QStringLiteral("\n") + note) +
        (m_measuredNote.isEmpty() ? QString() : QStringLiteral("\n") + m_measuredNote));
    m_cursor->setVisible(true);
    m_tracer->position->setCoords(x, y);
    m_tracer->setVisible(y > 0);
}

QString CurveChart::describePoint(const QCPGraph* graph, int index) const {
    for (int gi = m_curveGraphs; gi < plot()->graphCount(); ++gi) {
        if (plot()->graph(gi) != graph)
            continue;
        const auto mi = static_cast<std::size_t>(gi - m_curveGraphs);
        if (mi < m_measured.size() && index >= 0 &&
            static_cast<std::size_t>(index) < m_measured[mi].points.size())
            return m_measured[mi].points[static_cast<std::size_t>(index)].tooltip;
    }
    const auto it = graph->data()->at(index);
    const auto tokens = static_cast<std::int64_t>(std::llround(it->key));
    if (m_kind == CurveKind::Memory) {
        const auto bytes = static_cast<std::int64_t>(std::llround(it->value));
        return tr("%1\n%2 tokens: %3 per request %4\n(%5 bytes)")
            .arg(graph->name(), formatTokensQ(tokens), formatBytesQ(bytes, units()),
                 scopeLabel(m_scope), thousandsQ(bytes));
    }
    return tr("%1\n%2 tokens: %3 concurrent requests %4")
        .arg(graph->name(), formatTokensQ(tokens),
             thousandsQ(static_cast<std::int64_t>(std::llround(it->value))),
             m_scope == FigureScope::Cluster ? tr("in the cluster") : tr("per replica"));
}

QString CurveChart::csv() const {
    QString out;
    const std::int64_t pool = m_snapshot ? m_snapshot->sweep.availableKvBytes : 0;
    if (m_kind == CurveKind::Memory)
        out += QStringLiteral("series,context_tokens,kv_bytes_per_request_per_gpu,"
                              "kv_bytes_per_request,kv_pool_bytes_per_gpu\n");
    else
        out += QStringLiteral("series,context_tokens,max_requests\n");
    const auto measuredRows = [&] {
        QString rows;
        for (const MeasuredSeries& m : m_measured)
            for (const MeasuredPoint& pt : m.points) {
                rows += csvQuote(m.name) + QLatin1Char(',') + exactInt(pt.x) + QLatin1Char(',') +
                        exactInt(pt.y);
                if (m_kind == CurveKind::Memory)
                    rows += QLatin1Char(',') + exactInt(pt.y) + QLatin1Char(',') +
                            QString::number(pool);
                rows += QLatin1Char('\n');
            }
        return rows;
    };
    for (const Series& s : seriesList(false)) {
        for (std::size_t i = 0; i < s.contexts->size(); ++i) {
            const QString ctx = QString::number((*s.contexts)[i]);
            if (m_kind == CurveKind::Memory) {
                out += csvQuote(s.name) + QLatin1Char(',') + ctx + QLatin1Char(',') +
                       exactInt(s.curve->bytesPerRequestPerGpu[i]) + QLatin1Char(',') +
                       exactInt(s.curve->bytesPerRequest[i]) + QLatin1Char(',') +
                       QString::number(s.reference ? m_reference->sweep.availableKvBytes : pool) +
                       QLatin1Char('\n');
            } else {
                out += csvQuote(s.name) + QLatin1Char(',') + ctx + QLatin1Char(',') +
                       exactInt(s.curve->maxRequests[i]) + QLatin1Char('\n');
            }
        }
    }
    out += measuredRows();
    return out;
}

} // namespace kvl::widgets
