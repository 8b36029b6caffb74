#pragma once
// One GPU's memory at the current point: weights / KV cache of the chosen concurrency /
// activations and overhead / free / not requested, as stacked bars (current and pinned
// reference): which is larger, the weights or the KV cache, at a glance.

#include "chart_widget.h"
#include "ledger_view_state.h"

#include <optional>

class QCPBars;
class QCPItemText;

namespace kvl::widgets {

struct BreakdownSegment {
    QString name;
    std::int64_t bytes = 0;
};

std::vector<BreakdownSegment> breakdownSegments(const LedgerSnapshot& snap);

class BreakdownChart : public ChartWidget {
    Q_OBJECT
public:
    explicit BreakdownChart(QWidget* parent = nullptr);
    // The scenario, the pinned reference (a second bar) and the units.
    void setView(const LedgerView& view);

    std::vector<BreakdownSegment> segments(bool reference = false) const;
    QString verdict() const { return m_verdict; } // "KV (31 requests) is 3.2x the weights"
    QString csv() const override;
    QString tooltipAt(const QPoint& pos) const override;

protected:
    void applyColors() override;
    void unitsChanged() override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuild();
    std::shared_ptr<const LedgerSnapshot> m_snapshot;
    std::shared_ptr<const LedgerSnapshot> m_reference;
    std::vector<QCPBars*> m_bars;
    QCPItemText* m_verdictItem = nullptr;
    QString m_verdict;
};

} // namespace kvl::widgets
