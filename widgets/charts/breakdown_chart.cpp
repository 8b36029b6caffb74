#include "widgets/charts/breakdown_chart.h"

#include "widgets/charts/axis_tickers_p.h"
#include "widgets/charts/chart_text_p.h"
#include "widgets/charts/text_width.h"

#include "core/kv_cache.h"
#include "core/saturating.h"

#include <QFontMetrics>
#include <QList>
#include <QPair>
#include <QStringList>

#include <algorithm>
#include <cmath>

namespace kvl::widgets {

BreakdownParts breakdownParts(const LedgerSnapshot& snap, std::int64_t requests) {
    BreakdownParts out;
    const core::LedgerResult& r = snap.ledger;
    const core::Scenario& s = snap.scenario;
    out.total = core::kvBytesForRequests(s, requests);
    if (requests <= 0 || out.total <= 0)
        return out;
    if (r.blockSize == 0 || r.kvCacheGroups.empty()) {
        // Unpaged: each request keeps its own state beside its KV; nothing is padded.
        out.state = std::min(out.total, core::satMulCounts(r.stateBytesPerRequest, requests));
        return out;
    }
    // Paged: a group's blocks for `requests` requests (a shared prefix's full blocks once per
    // sharing group, as the ledger counts them), each block holding real pages and padding.
    const bool sharing = s.levers.prefix.enabled && s.levers.paging.enabled;
    const std::int64_t per = s.levers.prefix.sharingRequests;
    const std::int64_t groups = sharing && per > 0 ? (requests + per - 1) / per : 1;
    for (const core::KvCacheGroupUsage& g : r.kvCacheGroups) {
        const std::int64_t shared = std::min(g.sharedBlocksAtContext, g.blocksAtContext);
        const std::int64_t blocks =
            core::satMulCounts(requests, g.blocksAtContext) -
            core::satMulCounts(std::max<std::int64_t>(0, requests - std::min(requests, groups)),
                               shared);
        const std::int64_t real =
            g.uniformType ? g.pageBytes : core::satMulCounts(g.layers, g.realPageBytes);
        const std::int64_t waste = std::max<std::int64_t>(0, r.bytesPerBlock - real);
        out.padding = core::satAdd(out.padding, core::satMulCounts(blocks, waste));
        if (g.type == core::SpecType::Mamba)
            out.state = core::satAdd(out.state,
                                     core::satMulCounts(blocks, std::min(real, r.bytesPerBlock)));
    }
    out.state = std::min(out.state, out.total);
    out.padding = std::min(out.padding, out.total - out.state);
    return out;
}

std::vector<BreakdownSegment> breakdownSegments(const LedgerSnapshot& snap) {
    const core::LedgerResult& r = snap.ledger;
    const BreakdownParts parts = breakdownParts(snap, snap.requests);
    const std::int64_t kv = parts.total;
    const std::int64_t used = r.weightsBytesPerGpu + r.activationBytes + r.overheadBytes;
    const std::int64_t budget = r.kvMemoryOverridden ? used + r.availableKvBytes : r.requestedBytes;
    const std::int64_t kvFit = std::min(kv, std::max<std::int64_t>(0, budget - used));
    // What fits is filled state first, then padding, then the attention KV; the rest is over.
    const std::int64_t state = std::min(parts.state, kvFit);
    const std::int64_t padding = std::min(parts.padding, kvFit - state);
    std::vector<BreakdownSegment> out;
    out.push_back({QObject::tr("Weights"), r.weightsBytesPerGpu});
    out.push_back({snap.requests == 1
                       ? QObject::tr("KV cache (1 request)")
                       : QObject::tr("KV cache (%1 requests)").arg(thousandsQ(snap.requests)),
                   kvFit - state - padding});
    out.push_back({QObject::tr("Mamba / linear-attention state"), state});
    out.push_back({QObject::tr("Block padding"), padding});
    out.push_back({QObject::tr("KV over budget"), std::max<std::int64_t>(0, kv - kvFit)});
    out.push_back({QObject::tr("Activations + overhead"),
                   r.activationBytes + r.overheadBytes - r.cudaGraphBytes});
    out.push_back({QObject::tr("CUDA graphs (vLLM %1)").arg(qs(r.vllmVersion)), r.cudaGraphBytes});
    out.push_back({QObject::tr("Free for KV"), std::max<std::int64_t>(0, budget - used - kvFit)});
    out.push_back({QObject::tr("Not requested (1 - utilization)"),
                   std::max<std::int64_t>(0, r.gpuMemoryBytes - std::max(budget, used))});
    return out;
}

QString layerMixText(const core::LedgerResult& r, core::UnitSystem units) {
    const core::LayerMix& m = r.layerMix;
    QStringList kinds;
    const int total = m.full + m.sliding + m.chunked + m.mla + m.state + m.none;
    for (const auto& [n, name] : {std::pair{m.full, "full"}, std::pair{m.sliding, "sliding"},
                                  std::pair{m.chunked, "chunked"}, std::pair{m.mla, "MLA"},
                                  std::pair{m.state, "state"}, std::pair{m.none, "no KV"}})
        if (n > 0)
            kinds << QStringLiteral("%1 %2").arg(n).arg(QLatin1String(name));
    QString out = QObject::tr("%1 layers: %2").arg(total).arg(kinds.join(QStringLiteral(", ")));
    if (r.kvCacheGroups.empty())
        return out;
    QList<QPair<int, QString>> groups;
    for (const core::KvCacheGroupUsage& g : r.kvCacheGroups) {
        QString t = QStringLiteral("%1 ×%2").arg(qs(core::specTypeName(g.type))).arg(g.layers);
        if (g.window > 0)
            t += QObject::tr(" (window %1)").arg(thousandsQ(g.window));
        if (g.paddingSlots > 0)
            t += QObject::tr(" +%1 padding").arg(g.paddingSlots);
        // Equal groups (a hybrid's layers[i::n] split) are counted, not repeated.
        if (!groups.isEmpty() && groups.back().second == t)
            ++groups.back().first;
        else
            groups.append({1, t});
    }
    QStringList shown;
    int count = 0;
    for (const auto& [n, t] : groups) {
        shown << (n > 1 ? QStringLiteral("%1 × %2").arg(n).arg(t) : t);
        count += n;
    }
    out += (count == 1 ? QObject::tr(" · 1 KV cache group: ")
                       : QObject::tr(" · %1 KV cache groups: ").arg(count)) +
           shown.join(QStringLiteral(", "));
    if (r.blockSize > 0 && r.bytesPerBlock > 0)
        out += QObject::tr(" · block %1 tokens, %2")
                   .arg(r.blockSize)
                   .arg(formatBytesQ(r.bytesPerBlock, units, 2));
    return out;
}

BreakdownChart::BreakdownChart(QWidget* parent) : ChartWidget(parent) {
    setTitle(tr("Memory per GPU"));
    QCustomPlot* p = plot();
    p->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ByteLinearTicker(units())));
    p->xAxis->setLabel(tr("Memory per GPU"));
    p->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTickerText));
    p->yAxis->grid()->setVisible(false);
    p->yAxis->setRange(-0.6, 0.6);
    // Legend below the bars, filled row-wise.
    placeLegendInRow(p, 2);
    p->legend->setVisible(true);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    p->legend->setFont(small);
    p->legend->setIconSize(18, 10); // two columns of entries fit a 1366 x 768 window
    for (int i = 0; i < kSegments; ++i) {
        auto* bars = new QCPBars(p->yAxis, p->xAxis);
        bars->setWidth(0.55);
        bars->setStackingGap(0);
        if (!m_bars.empty())
            bars->moveAbove(m_bars.back());
        m_bars.push_back(bars);
    }
    // The verdict sits under the title, where it never covers a bar.
    p->plotLayout()->insertRow(1);
    m_verdictItem = new CachedTextElement(p, QString(), small);
    m_verdictItem->setMargins(QMargins(4, 0, 4, 4));
    p->plotLayout()->addElement(1, 0, m_verdictItem);
    p->plotLayout()->setRowStretchFactor(1, 0.001);
    applyColors();
}

void BreakdownChart::applyColors() {
    styleAxes();
    const ChartColors& c = colors();
    // State in the +quantization step's hue; padding hatched in the KV colour: bytes vLLM
    // allocates that hold nothing.
    const QBrush fills[kSegments] = {QBrush(c.weights),
                                     QBrush(c.kv),
                                     QBrush(c.steps[2]),
                                     QBrush(c.kv, Qt::BDiagPattern),
                                     QBrush(c.overflow),
                                     QBrush(c.activations),
                                     QBrush(c.activations, Qt::Dense4Pattern),
                                     QBrush(c.free),
                                     QBrush(c.reserved)};
    for (std::size_t i = 0; i < m_bars.size(); ++i) {
        m_bars[i]->setBrush(fills[i]);
        m_bars[i]->setPen(QPen(i == kPadding      ? c.kv
                               : i == kCudaGraphs ? c.activations
                                                  : c.background,
                               1));
    }
    m_verdictItem->setTextColor(c.foreground);
    requestReplot();
}

void BreakdownChart::updateTitle() {
    // The longest title that fits the chart's width: the title is never clipped.
    QStringList candidates;
    if (m_snapshot) {
        const core::Scenario& s = m_snapshot->scenario;
        const QString point = tr("%1 requests × %2 tokens")
                                  .arg(thousandsQ(m_snapshot->requests),
                                       formatTokensQ(m_snapshot->ledger.contextTokens));
        const std::int64_t gpus = gpusPerReplica(s) * replicaCount(s);
        if (gpus > 1)
            candidates << tr("Memory per GPU (1 of %1: %2) at %3")
                              .arg(gpus)
                              .arg(qs(core::layoutLabel(core::layoutOf(s)))
                                       .replace(QStringLiteral(" x "), QStringLiteral(" × ")),
                                   point);
        candidates << tr("Memory per GPU at %1").arg(point);
    }
    candidates << tr("Memory per GPU");
    const QFont f(font().family(), -1, QFont::Bold);
    const QFontMetrics fm(f);
    const int room = std::max(120, width() - 16);
    for (const QString& t : candidates)
        if (fm.horizontalAdvance(t) <= room || t == candidates.back()) {
            if (t != title())
                setTitle(t);
            break;
        }
}

void BreakdownChart::resizeEvent(QResizeEvent* event) {
    ChartWidget::resizeEvent(event);
    updateTitle();
    fitText();
    requestReplot();
}

void BreakdownChart::fitText() {
    // The verdict and the legend fit the chart's width: nothing is clipped at 1366 x 768.
    const int w = std::max(160, width() - 16);
    // A short chart (a 1366 x 768 window gives it about 240 px) shows the verdict alone: the
    // layer-mix line, the bar and the legend would not all fit, and the scenario panel and the
    // kvledger ledger output carry the groups.
    QString text = m_verdict;
    if (height() < 330 && !m_layerMix.isEmpty() && text.endsWith(m_layerMix))
        text.chop(m_layerMix.size() + 1);
    m_verdictItem->setText(wrapToWidth(text, m_verdictItem->font(), w));
    fitLegendColumns(plot()->legend, std::max(160, width() - 16));
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
        if (i == kKv)
            name = m_snapshot->requests == 1
                       ? tr("KV cache (1 request)")
                       : tr("KV cache (%1 requests)").arg(thousandsQ(m_snapshot->requests));
        else if (i == kNotRequested)
            name = tr("Not requested"); // the tooltip says: 1 - utilization
        m_bars[i]->setName(name);
    }
    // The legend lists the segments present, in bar order. Its items are rebuilt only when
    // that set changes: an item draws its bar's current name, and a new item lays its text out
    // anew, which a slider drag would otherwise pay at every step.
    std::vector<bool> present(m_bars.size());
    for (std::size_t i = 0; i < m_bars.size(); ++i)
        present[i] = cur[i].bytes > 0 || (!ref.empty() && ref[i].bytes > 0);
    if (present != m_legendSet || p->legend->itemCount() == 0) {
        m_legendSet = present;
        p->legend->clearItems();
        for (std::size_t i = 0; i < m_bars.size(); ++i)
            if (present[i])
                m_bars[i]->addToLegend();
    }
    for (const auto& seg : cur)
        total += double(seg.bytes);
    double refTotal = 0;
    for (const auto& seg : ref)
        refTotal += double(seg.bytes);
    p->xAxis->setRange(0, std::max(total, refTotal) * 1.02);
    updateTitle();

    const core::LedgerResult& r = m_snapshot->ledger;
    const std::int64_t kv = core::kvBytesForRequests(m_snapshot->scenario, m_snapshot->requests);
    const std::int64_t w = r.weightsBytesPerGpu;
    const QString requests = m_snapshot->requests == 1
                                 ? tr("1 request")
                                 : tr("%1 requests").arg(thousandsQ(m_snapshot->requests));
    QString verdict;
    if (kv > w)
        verdict = tr("KV cache for %1 (%2) is %3x the weights (%4)")
                      .arg(requests, formatBytesQ(kv, units()))
                      .arg(w > 0 ? double(kv) / double(w) : 0.0, 0, 'f', 1)
                      .arg(formatBytesQ(w, units()));
    else
        verdict = tr("Weights (%1) outweigh the KV cache for %2 (%3)")
                      .arg(formatBytesQ(w, units()), requests, formatBytesQ(kv, units()));
    if (cur[kOverBudget].bytes > 0) {
        verdict +=
            QLatin1Char('\n') +
            tr("%1 over the memory for KV").arg(formatBytesQ(cur[kOverBudget].bytes, units()));
        if (m_snapshot->gpusNeeded && m_snapshot->gpusNeeded->gpus > 0)
            verdict += tr(": needs %1 GPUs (%2)")
                           .arg(m_snapshot->gpusNeeded->gpus)
                           .arg(qs(core::layoutLabel(m_snapshot->gpusNeeded->layout))
                                    .replace(QStringLiteral(" x "), QStringLiteral(" × ")));
    }
    m_layerMix = layerMixText(r, units());
    m_verdict = verdict + QLatin1Char('\n') + m_layerMix;
    fitText();
    requestReplot();
}

QString BreakdownChart::tooltipAt(const QPoint& pos) const {
    if (!m_snapshot)
        return {};
    const auto at = plotCoordsAt(pos);
    if (!at)
        return {};
    const double key = at->y(); // the bars lie along the y axis
    const double value = at->x();
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
