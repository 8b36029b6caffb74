#pragma once
// Predicted decode speed beside memory (core/speed.h): output tokens/s of the cluster or per
// user vs concurrency (running requests per replica) at the scenario's context, one series per
// ladder step, with the memory limit and vLLM's max_num_seqs as labelled vertical lines: what
// a narrower KV format buys in users and in speed. The second view is tokens/s vs context at
// the chosen concurrency. Both are estimates; the assumptions (efficiencies, bandwidth,
// TFLOP/s, calibration by the probe) are printed under the plot, in exports too.
//
// The curves are recomputed when the snapshot or the calibration changes (a few ms), never on
// paint; a metric switch only swaps the plotted column.

#include "widgets/charts/chart_widget.h"
#include "widgets/probe/calibration.h"
#include "widgets/state/ledger_view_state.h"

#include "core/speed.h"

#include <vector>

class QCPItemText;
class QCPItemTracer;
class QCPTextElement;

namespace kvl::widgets {

enum class SpeedView : std::uint8_t { Concurrency, Context };
enum class SpeedMetric : std::uint8_t { ClusterTokensPerSecond, TokensPerSecondPerUser };

class PredictedSpeedChart : public ChartWidget {
    Q_OBJECT
public:
    explicit PredictedSpeedChart(SpeedView view, QWidget* parent = nullptr);

    SpeedView speedView() const { return m_view; }
    void setView(const LedgerView& view);
    void setCalibration(const SpeedCalibration& calibration);
    const SpeedCalibration& calibration() const { return m_calibration; }
    void setMetric(SpeedMetric metric);
    SpeedMetric metric() const { return m_metric; }

    // One plotted ladder step: its scenario and its speed curve (x = batch or context).
    struct Series {
        QString name;
        core::LadderStepId step = core::LadderStepId::Baseline;
        bool current = false; // the scenario itself (the last applied step), emphasized
        core::Scenario scenario;
        core::SpeedCurve curve;
    };
    const std::vector<Series>& series() const { return m_series; }
    // The current scenario's limits, per replica (the vertical lines), and the concurrency the
    // context view and the cursor use.
    std::int64_t memoryLimit() const { return m_memoryLimit; }
    std::int64_t maxNumSeqs() const { return m_maxNumSeqs; }
    std::int64_t concurrency() const { return m_concurrency; }
    // Where the vertical lines are drawn (plot x), NaN when hidden.
    double memoryLineX() const;
    double maxNumSeqsLineX() const;
    QString memoryLineLabel() const;
    QString maxNumSeqsLineLabel() const;
    QString assumptionsText() const { return m_assumptions; }
    QString cursorText() const { return m_cursorText; }
    QString emptyText() const; // the error state's message, empty when curves are shown
    // Times the curves were recomputed (not replotted): once per snapshot or calibration.
    int recomputeCount() const { return m_recomputes; }

    QString csv() const override;

protected:
    void applyColors() override;
    void resizeEvent(QResizeEvent* event) override;
    QString describePoint(const QCPGraph* graph, int index) const override;

private:
    void recompute();
    void rebuild();
    void updateAssumptions();
    double value(const core::SpeedCurve& c, std::size_t i) const;

    SpeedView m_view;
    SpeedMetric m_metric = SpeedMetric::ClusterTokensPerSecond;
    std::shared_ptr<const LedgerSnapshot> m_snapshot;
    SpeedCalibration m_calibration = defaultCalibration();
    std::vector<Series> m_series;
    std::int64_t m_memoryLimit = 0, m_maxNumSeqs = 0, m_concurrency = 0;
    QString m_error;
    QString m_assumptions;
    QString m_cursorText;
    int m_recomputes = 0;

    QCPTextElement* m_cursorLabel = nullptr;
    QCPTextElement* m_assumptionsLabel = nullptr;
    MarkedLine m_memory; // the memory limit's line and label
    MarkedLine m_seqs;   // max_num_seqs
    QCPItemText* m_emptyLabel = nullptr;
    QCPItemTracer* m_tracer = nullptr;
};

} // namespace kvl::widgets
