#include "breakdown_chart.h"

#include "axis_tickers_p.h"

#include <algorithm>
#include <cmath>

namespace kvl::widgets {

std::vector<BreakdownSegment> breakdownSegments(const LedgerSnapshot& snap) {
    const core::LedgerResult& r = snap.ledger;
    const std::int64_t kv = core::kvBytesForRequests(snap.scenario, snap.requests);
    const std::int64_t used = r.weightsBytesPerGpu + r.activationBytes + r.overheadBytes;
    const std::int64_t budget = r.kvMemoryOverridden ? used + r.availableKvBytes : r.requestedBytes;
    const std::int64_t kvFit = std::min(kv, std::max<std::int64_t>(0, budget - used));
    std::vector<BreakdownSegment> out;
    out.push_back({QObject::tr("Weights"), r.weightsBytesPerGpu});
    out.push_back({QObject::tr("KV cache (%1 requests)").arg(thousandsQ(snap.requests)), kvFit});
    out.push_back({QObject::tr("KV over budget"), std::max<std::int64_t>(0, kv - kvFit)});
    out.push_back({QObject::tr("Activations + overhead"), r.activationBytes + r.overheadBytes});
    out.push_back({QObject::tr("Free for KV"), std::max<std::int64_t>(0, budget - used - kvFit)});
    out.push_back({QObject::tr("Not requested (1 - utilization)"),
                   std::max<std::int64_t>(0, r.gpuMemoryBytes - std::max(budget, used))});
    return out;
}

BreakdownChart::BreakdownChart(QWidget* parent) : ChartWidget(parent) {
    setTitle(tr("Memory per GPU at the current point"));
    QCustomPlot* p = plot();
    p->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ByteLinearTicker(units())));
    p->xAxis->setLabel(tr("Memory per GPU"));
    p->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTickerText));
    p->yAxis->grid()->setVisible(false);
    p->yAxis->setRange(-0.6, 0.6);
    // Legend below the bars, filled row-wise.
    p->axisRect()->insetLayout()->take(p->legend);
    p->plotLayout()->addElement(2, 0, p->legend);
    p->plotLayout()->setRowStretchFactor(2, 0.001);
    p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    p->legend->setWrap(3);
    p->legend->setVisible(true);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    p->legend->setFont(small);
    p->legend->setMargins(QMargins(4, 2, 4, 2));
    for (int i = 0; i < 6; ++i) {
        auto* bars = new QCPBars(p->yAxis, p->xAxis);
        bars->setWidth(0.55);
        bars->setStackingGap(0);
        if (!m_bars.empty())
            bars->moveAbove(m_bars.back());
        m_bars.push_back(bars);
    }
    m_verdictItem = new QCPItemText(p);
    m_verdictItem->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_verdictItem->position->setCoords(0.5, 0.02);
    m_verdictItem->setPositionAlignment(Qt::AlignTop | Qt::AlignHCenter);
    m_verdictItem->setFont(small);
    applyColors();
}

void BreakdownChart::applyColors() {
    styleAxes();
    const ChartColors& c = colors();
    const QColor fills[] = {c.weights, c.kv, c.overflow, c.activations, c.free, c.reserved};
    for (std::size_t i = 0; i < m_bars.size(); ++i) {
        m_bars[i]->setBrush(fills[i]);
        m_bars[i]->setPen(QPen(c.background, 1));
    }
    m_verdictItem->setColor(c.foreground);
    requestReplot();
}

void BreakdownChart::resizeEvent(QResizeEvent* event) {
    ChartWidget::resizeEvent(event);
    const int columns = width() < 620 ? 2 : 3;
    if (plot()->legend->wrap() != columns) {
        plot()->legend->setWrap(columns);
        plot()->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
        requestReplot();
    }
}

void BreakdownChart::unitsChanged() {
    if (auto t = plot()->xAxis->ticker().dynamicCast<ByteLinearTicker>())
        t->setUnits(units());
    rebuild();
}

void BreakdownChart::setView(const LedgerView& view) {
    const bool data = view.snapshot != m_snapshot || view.reference != m_reference;
    m_snapshot = view.snapshot;
    m_reference = view.reference;
    if (view.units != units())
        setUnits(view.units); // rebuilds
    else if (data)
        rebuild();
}

std::vector<BreakdownSegment> BreakdownChart::segments(bool reference) const {
    if (reference)
        return m_reference ? breakdownSegments(*m_reference) : std::vector<BreakdownSegment>{};
    return m_snapshot ? breakdownSegments(*m_snapshot) : std::vector<BreakdownSegment>{};
}

void BreakdownChart::rebuild() {
    QCustomPlot* p = plot();
    if (!m_snapshot)
        return;
    const auto cur = breakdownSegments(*m_snapshot);
    std::vector<BreakdownSegment> ref;
    if (m_reference)
        ref = breakdownSegments(*m_reference);
    auto ticker = p->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    ticker->clear();
    // Current on top (key 1) when a reference is pinned.
    const double curKey = m_reference ? 1.0 : 0.0;
    ticker->addTick(curKey, tr("Current"));
    if (m_reference)
        ticker->addTick(0.0, tr("Reference"));
    p->yAxis->setRange(-0.6, m_reference ? 1.9 : 0.9);
    double total = 0;
    for (std::size_t i = 0; i < m_bars.size(); ++i) {
        QVector<double> keys{curKey}, values{double(cur[i].bytes)};
        if (m_reference) {
            keys.prepend(0.0);
            values.prepend(double(ref[i].bytes));
        }
        m_bars[i]->setData(keys, values, true);
        QString name = cur[i].name;
        if (i == 1)
            name = tr("KV cache (%1 requests)").arg(thousandsQ(m_snapshot->requests));
        m_bars[i]->setName(name);
    }
    // The legend lists the segments present, in bar order.
    p->legend->clearItems();
    for (std::size_t i = 0; i < m_bars.size(); ++i)
        if (cur[i].bytes > 0 || (!ref.empty() && ref[i].bytes > 0))
            m_bars[i]->addToLegend();
    p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
    for (const auto& seg : cur)
        total += double(seg.bytes);
    double refTotal = 0;
    for (const auto& seg : ref)
        refTotal += double(seg.bytes);
    p->xAxis->setRange(0, std::max(total, refTotal) * 1.02);

    const core::LedgerResult& r = m_snapshot->ledger;
    const std::int64_t kv = core::kvBytesForRequests(m_snapshot->scenario, m_snapshot->requests);
    const std::int64_t w = r.weightsBytesPerGpu;
    QString verdict;
    if (kv > w)
        verdict = tr("KV cache for %1 requests (%2) is %3x the weights (%4)")
                      .arg(thousandsQ(m_snapshot->requests), formatBytesQ(kv, units()))
                      .arg(w > 0 ? double(kv) / double(w) : 0.0, 0, 'f', 1)
                      .arg(formatBytesQ(w, units()));
    else
        verdict = tr("Weights (%1) outweigh the KV cache for %2 requests (%3)")
                      .arg(formatBytesQ(w, units()), thousandsQ(m_snapshot->requests),
                           formatBytesQ(kv, units()));
    if (cur[2].bytes > 0) {
        verdict += QLatin1Char('\n') +
                   tr("%1 over the memory for KV").arg(formatBytesQ(cur[2].bytes, units()));
        if (m_snapshot->gpusNeeded && m_snapshot->gpusNeeded->gpus > 0)
            verdict += tr(": needs %1 GPUs (TP %2)")
                           .arg(m_snapshot->gpusNeeded->gpus)
                           .arg(m_snapshot->gpusNeeded->tensorParallel);
    }
    m_verdict = verdict;
    m_verdictItem->setText(verdict);
    requestReplot();
}

QString BreakdownChart::tooltipAt(const QPoint& pos) const {
    if (!m_snapshot)
        return {};
    const QCustomPlot* p = plot();
    const QPoint local = p->mapFrom(this, pos);
    if (!p->axisRect()->rect().contains(local))
        return {};
    const double key = p->yAxis->pixelToCoord(local.y());
    const double value = p->xAxis->pixelToCoord(local.x());
    const bool onCurrent = std::abs(key - (m_reference ? 1.0 : 0.0)) <= 0.3;
    const bool onReference = m_reference && std::abs(key) <= 0.3;
    if (!onCurrent && !onReference)
        return {};
    const auto segs = segments(onReference);
    double start = 0;
    for (const auto& seg : segs) {
        const double end = start + double(seg.bytes);
        if (seg.bytes > 0 && value >= start && value < end)
            return tr("%1 (%2)\n%3 (%4 bytes) of %5 per GPU")
                .arg(seg.name, onReference ? tr("reference") : tr("current"),
                     formatBytesQ(seg.bytes, units()), thousandsQ(seg.bytes),
                     formatBytesQ((onReference ? m_reference : m_snapshot)->ledger.gpuMemoryBytes,
                                  units()));
        start = end;
    }
    return {};
}

QString BreakdownChart::csv() const {
    QString out = QStringLiteral("row,segment,bytes_per_gpu\n");
    auto emitRow = [&](const QString& row, const std::vector<BreakdownSegment>& segs) {
        for (const auto& s : segs)
            out += row + QLatin1Char(',') + QLatin1Char('"') + s.name + QLatin1Char('"') +
                   QLatin1Char(',') + QString::number(s.bytes) + QLatin1Char('\n');
    };
    emitRow(QStringLiteral("current"), segments(false));
    if (m_reference)
        emitRow(QStringLiteral("reference"), segments(true));
    return out;
}

} // namespace kvl::widgets
