#pragma once
// The Traffic tab's charts, drawn from one TrafficResult (traffic_sim.h), every figure per
// replica and labelled a simulation:
//   - latency vs arrival rate: p99 (solid) and p50 (dashed) TTFT or TPOT per ladder step, the
//     SLO as a horizontal line and the scenario's sustainable rate as a vertical one;
//   - the timeline: KV blocks in use per KV cache group (% of the pool) and the running,
//     waiting and preempted requests over the simulated time at the chosen rate.

#include "widgets/charts/chart_widget.h"
#include "widgets/traffic/traffic_sim.h"

#include <memory>

class QCPItemText;
class QCPTextElement;

namespace kvl::widgets {

// trafficRateText as a QString: the tab's one rate format.
inline QString trafficRateQ(double requestsPerSecond) {
    return QString::fromStdString(trafficRateText(requestsPerSecond));
}

enum class TrafficMetric : std::uint8_t { Ttft, Tpot };

// What the two traffic charts share: the result they draw, the status shown instead of it, the
// note under the legend and the empty-state label. Both redraw on a new result, on a resize and
// on new colours.
class TrafficChart : public ChartWidget {
    Q_OBJECT
public:
    using ChartWidget::ChartWidget;
    // The result to draw (null: nothing yet); `status` replaces the curves when not empty
    // ("Simulating…", an error).
    void setResult(std::shared_ptr<const TrafficResult> result, const QString& status = {});
    std::shared_ptr<const TrafficResult> result() const { return m_result; }
    QString emptyText() const { return m_status; }

protected:
    void resizeEvent(QResizeEvent* event) override;
    // Styles the axes, the note and the empty label: the first of each chart's applyColors.
    void styleCommon();
    virtual void rebuild() = 0;

    std::shared_ptr<const TrafficResult> m_result;
    QString m_status;
    QCPTextElement* m_note = nullptr;
    QCPItemText* m_emptyLabel = nullptr;
};

class TrafficLatencyChart : public TrafficChart {
    Q_OBJECT
public:
    explicit TrafficLatencyChart(TrafficMetric metric, QWidget* parent = nullptr);
    TrafficMetric metric() const { return m_metric; }
    double sustainableLineX() const; // NaN when hidden
    double sloLineY() const;         // NaN when hidden
    QString csv() const override;

protected:
    void applyColors() override;
    QString describePoint(const QCPGraph* graph, int index) const override;

private:
    void rebuild() override;
    double slo() const;
    const core::sim::Percentiles& of(const TrafficPoint& p) const;

    TrafficMetric m_metric;
    MarkedLine m_slo;  // the SLO: a horizontal line
    MarkedLine m_rate; // the sustainable rate: a vertical line
};

class TrafficTimelineChart : public TrafficChart {
    Q_OBJECT
public:
    explicit TrafficTimelineChart(QWidget* parent = nullptr);
    QString csv() const override;

protected:
    void applyColors() override;

private:
    void rebuild() override;
};

} // namespace kvl::widgets
