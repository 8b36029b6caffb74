#pragma once
// Memory per request vs context and max concurrent requests vs context: log-log curves, one
// per applied ladder step plus the current scenario (emphasized), the pinned reference dashed,
// the KV pool as a horizontal line and a cursor at the current context with exact values.

#include "widgets/charts/chart_widget.h"
#include "widgets/probe/probe_overlay.h"
#include "widgets/state/ledger_view_state.h"

#include <optional>

class QCPItemStraightLine;
class QCPItemText;
class QCPTextElement;
class QCPItemTracer;

namespace kvl::widgets {

class CurveChart : public ChartWidget {
    Q_OBJECT
public:
    explicit CurveChart(CurveKind kind, QWidget* parent = nullptr);

    CurveKind kind() const { return m_kind; }
    // The scenario, the pinned reference (dashed) and the units.
    void setView(const LedgerView& view);
    bool hasReference() const { return m_reference != nullptr; }
    // Probe results, drawn over the curves as measured points (scatter markers, one series per
    // probed format) scaled to the scenario; an empty report removes them. The note under the
    // title says where the points come from and how they are scaled.
    void setProbeReport(const probe::ProbeReport& report);
    QString measuredNote() const { return m_measuredNote; }
    const std::vector<MeasuredSeries>& measured() const { return m_measured; }

    QString csv() const override;
    QString cursorText() const;
    double cursorContext() const;
    FigureScope scope() const { return m_scope; }

    // The message drawn in the middle of an empty chart ("Not computed: ..."), and where.
    QString placeholderText() const;
    QRect placeholderRect() const; // empty when no placeholder is shown
    // max_num_seqs drawn on the concurrency chart: the y value (0 = not drawn) and its label.
    double capValue() const { return m_capValue; }
    QString capLabel() const;
    // The context under x (widget coordinates), snapped to the context slider's stops and
    // kept within the plotted range; 0 outside the plot area.
    std::int64_t contextAt(const QPoint& pos) const;

    static QString currentSeriesName() { return tr("Current"); }
    static QString referenceSeriesName() { return tr("Pinned reference"); }
    // A curve's point i as drawn: in the chart's scope, NaN where it has no place.
    double curveValue(const core::Curve& curve, std::size_t i, const core::Scenario& s) const;

signals:
    // A click or drag on the plot: the user points at a context (snapped, see contextAt).
    void contextPicked(std::int64_t tokens);

protected:
    void applyColors() override;
    void unitsChanged() override;
    QString describePoint(const QCPGraph* graph, int index) const override;
    bool eventFilter(QObject* watched, QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    struct Series {
        QString name;
        int colorIndex = -1; // ladder step colour; -1 = current
        bool reference = false;
        const core::Curve* curve = nullptr;
        const std::vector<std::int64_t>* contexts = nullptr;
    };
    // The series drawn (`drawnOnly`: a step hidden under a later one or with no point is left
    // out, so the legend lists only what shows), or every applied step (the CSV's data).
    std::vector<Series> seriesList(bool drawnOnly = true) const;
    // A plotted y in the view's scope: bytes per GPU times the GPUs of the scope, requests
    // per replica times DP for the cluster (ledger_view_state.h scopeBytes / scopeRequests).
    double scoped(double perGpuOrReplica, const core::Scenario& s) const;
    void updateLabels();
    int placeholderWidth() const;
    void rebuild();
    void updateMeasured();
    void updateAxes();
    void updateCursor();

    CurveKind m_kind;
    std::shared_ptr<const LedgerSnapshot> m_snapshot;
    std::shared_ptr<const LedgerSnapshot> m_reference;
    std::shared_ptr<const probe::ProbeReport> m_report;
    QCPItemStraightLine* m_poolLine = nullptr;
    QCPItemText* m_poolLabel = nullptr;
    QCPItemStraightLine* m_cursor = nullptr;
    QCPTextElement* m_cursorLabel = nullptr;
    QCPItemTracer* m_tracer = nullptr;
    QCPItemText* m_emptyLabel = nullptr;      // "no request fits" when nothing is plotted
    QCPItemStraightLine* m_capLine = nullptr; // max_num_seqs (concurrency chart)
    QCPItemText* m_capLabelItem = nullptr;
    double m_capValue = 0;
    FigureScope m_scope = FigureScope::PerGpu;
    std::int64_t m_lastPicked = 0;
    QString m_cursorText;
    std::vector<MeasuredSeries> m_measured;
    QString m_measuredNote;
    std::vector<QCPItemText*> m_measuredLabels;
    int m_curveGraphs = 0; // graphs [0, m_curveGraphs) are curves, the rest measured points
};

} // namespace kvl::widgets
