#pragma once
// Memory per request vs context and max concurrent requests vs context: log-log curves, one
// per applied ladder step plus the current scenario (emphasized), the pinned reference dashed,
// the KV pool as a horizontal line and a cursor at the current context with exact values.

#include "chart_widget.h"
#include "ledger_view_state.h"
#include "probe_overlay.h"

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

    static QString currentSeriesName() { return tr("Current"); }
    static QString referenceSeriesName() { return tr("Pinned reference"); }
    // The y value plotted for a curve at sweep index i (NaN when not plotted).
    double curveValue(const core::Curve& curve, std::size_t i) const;

protected:
    void applyColors() override;
    void unitsChanged() override;
    QString describePoint(const QCPGraph* graph, int index) const override;

private:
    struct Series {
        QString name;
        int colorIndex = -1; // ladder step colour; -1 = current
        bool reference = false;
        const core::Curve* curve = nullptr;
        const std::vector<std::int64_t>* contexts = nullptr;
    };
    std::vector<Series> seriesList() const;
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
    QCPItemText* m_emptyLabel = nullptr; // "no request fits" when nothing is plotted
    QString m_cursorText;
    std::vector<MeasuredSeries> m_measured;
    QString m_measuredNote;
    std::vector<QCPItemText*> m_measuredLabels;
    int m_curveGraphs = 0; // graphs [0, m_curveGraphs) are curves, the rest measured points
};

} // namespace kvl::widgets
