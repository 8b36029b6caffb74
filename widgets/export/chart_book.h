#pragma once
// Every chart and table of the chart registry, made on demand from a ScenarioDocument's view,
// with no window and no tab: what `kvledger export` draws. A chart is fed the way the window's
// tab feeds it, through the same functions (planRequestFor, scenarioTrafficInputs and
// computeTraffic, compareEngines, calibrationFromReport), and exports through the window's one
// export path (chart_export.h), so the files are the ones the window writes for the same
// scenario.

#include "widgets/export/chart_export.h"
#include "widgets/probe/calibration.h"
#include "widgets/traffic/traffic_sim.h"

#include "core/result.h"
#include "gpu_probe/io/results_io.h"

#include <QObject>
#include <QSet>
#include <QString>

#include <map>
#include <memory>
#include <optional>

namespace kvl::widgets {

class EnginesModel;
class LadderModel;
class PlanTableModel;
class ProbeResultsModel;
class ScenarioDocument;

class ChartBook : public QObject {
    Q_OBJECT
public:
    // The book reads `doc` (which must outlive it) and follows its view: a chart made before a
    // change is fed again when it is next read.
    explicit ChartBook(const ScenarioDocument* doc, QObject* parent = nullptr);
    ~ChartBook() override;

    // Probe results (kvprobe's JSON), as the Measured tab loads them: the measured charts and
    // table, and the speed model's calibration. The error is the file's, one line.
    Status loadProbeResults(const QString& path);
    bool hasProbeResults() const;
    const probe::ProbeReport& probeReport() const;
    SpeedCalibration calibration() const { return m_calibration; }

    // The Traffic tab's inputs: the scenario's until set (set ones are held as its fields hold
    // them: traffic_fields.h).
    TrafficInputs trafficInputs() const;
    void setTrafficInputs(const TrafficInputs& in);

    // The chart of a registry name, fed from the current view; nullptr for a table.
    ChartWidget* chart(const QString& name);
    LadderModel* ladderModel();
    PlanTableModel* planModel();
    ProbeResultsModel* probeModel(); // empty without probe results
    EnginesModel* enginesModel();
    std::shared_ptr<const core::PlanResult> plan();
    std::shared_ptr<const TrafficResult> traffic(); // null when the view is not valid

    // The export path the window takes, over the book's charts (font and palette: the
    // application's, --theme applied before the book's charts are made).
    ChartSource source();
    bool exportChart(const QString& name, const QString& path, double scale = 1.0, QSize size = {},
                     QString* error = nullptr);
    ReportInputs reportInputs();
    bool exportReport(const QString& path, QString* error = nullptr);

private:
    void markStale();
    ChartWidget* made(const ChartSpec& spec);
    void feed(const ChartSpec& spec, ChartWidget* c);
    void feedPlan();
    void feedTraffic();
    QString tableCsv(const QString& name);

    const ScenarioDocument* m_doc;
    std::map<QString, std::unique_ptr<ChartWidget>> m_charts;
    QSet<QString> m_fed; // charts and models that took the current view
    LadderModel* m_ladder = nullptr;
    PlanTableModel* m_planModel = nullptr;
    ProbeResultsModel* m_probeModel = nullptr;
    EnginesModel* m_enginesModel = nullptr;
    std::optional<probe::ProbeReport> m_probe;
    QString m_probeOrigin;
    SpeedCalibration m_calibration = defaultCalibration();
    std::optional<TrafficInputs> m_trafficInputs;
    std::shared_ptr<const core::PlanResult> m_plan;
    core::PlanRequest m_planRequest;
    std::shared_ptr<const TrafficResult> m_traffic;
};

} // namespace kvl::widgets
