#pragma once
// One GPU's memory at the current point: weights / KV cache of the chosen concurrency / its
// Mamba or linear-attention state / block padding / activations and overhead / free / not
// requested, as stacked bars (current and pinned reference): which is larger, the weights or
// the KV cache, at a glance. Every figure is per GPU (the limiting PP stage's), as vLLM logs.

#include "widgets/charts/chart_widget.h"
#include "widgets/state/ledger_view_state.h"

#include <optional>

class QCPBars;
class QCPTextElement;

namespace kvl::widgets {

struct BreakdownSegment {
    QString name;
    std::int64_t bytes = 0;
};

// The segments, in bar order (the indexes below); zero segments stay out of the legend.
enum BreakdownIndex : int {
    kWeights,
    kKv,         // attention / MLA KV of the requests
    kState,      // Mamba / linear-attention state (stateBytesPerRequest)
    kPadding,    // padding slots and padded pages (paddingBytesPerRequest)
    kOverBudget, // what the requests need beyond the memory for KV
    kReserves,   // activations + non-torch memory
    kCudaGraphs, // CUDA graphs, where the vLLM release profiles them before the KV cache
    kFree,
    kNotRequested,
    kSegments
};
std::vector<BreakdownSegment> breakdownSegments(const LedgerSnapshot& snap);

// The per-GPU bytes `requests` requests of the context take (core::kvBytesForRequests) and
// the parts of it that are state and padding, from the KV cache groups' blocks.
struct BreakdownParts {
    std::int64_t total = 0;
    std::int64_t state = 0;
    std::int64_t padding = 0;
};
BreakdownParts breakdownParts(const LedgerSnapshot& snap, std::int64_t requests);

// "32 layers: 32 full · 1 KV cache group: full_attention ×32 · block 16 tokens, 2.00 MiB" (per
// GPU): the layer mix and vLLM v1's KV cache groups (core/ledger.h), as the breakdown shows
// them under its bar. Kinds with no layer are left out; a group's window is named.
QString layerMixText(const core::LedgerResult& r, core::UnitSystem units);

class BreakdownChart : public ChartWidget {
    Q_OBJECT
public:
    explicit BreakdownChart(QWidget* parent = nullptr);
    // The scenario, the pinned reference (a second bar) and the units.
    void setView(const LedgerView& view);

    std::vector<BreakdownSegment> segments(bool reference = false) const;
    // The verdict, then the layer mix and KV cache groups line (layerMixText).
    QString verdict() const { return m_verdict; } // "KV (31 requests) is 3.2x the weights"
    QString csv() const override;
    QString tooltipAt(const QPoint& pos) const override;

protected:
    void applyColors() override;
    void unitsChanged() override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuild();
    void updateTitle();
    void fitText();
    std::shared_ptr<const LedgerSnapshot> m_snapshot;
    std::shared_ptr<const LedgerSnapshot> m_reference;
    std::vector<QCPBars*> m_bars;
    std::vector<bool> m_legendSet; // the segments the legend lists (rebuilt when it changes)
    QCPTextElement* m_verdictItem = nullptr;
    QString m_verdict;
    QString m_layerMix; // its last line, left out of the drawn text when the chart is short
};

} // namespace kvl::widgets
