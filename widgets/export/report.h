#pragma once
// The design-review report: a PDF (vector) that opens with the verdict (the target against the
// layout, and what the deployment planner says it needs), then the scenario with every figure's
// scope, the memory and concurrency charts, the breakdown, the lever ladder table, the vLLM
// command, the deployment plan table, the predicted Speed chart with its data, and the
// assumptions (reserves, efficiencies, max_num_seqs, the quality caveats of low-bit KV).

#include "widgets/probe/calibration.h"
#include "widgets/state/ledger_view_state.h"
#include "widgets/traffic/traffic_sim.h"

#include "core/planner.h"

#include <QImage>
#include <QList>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

namespace kvl::widgets {

class ChartWidget;
class EnginesModel;
class LadderModel;
class PredictedSpeedChart;
class ProbeResultsModel;

// The report's first line, from the planner: the users (the target, else the scenario's
// concurrency) against the current layout (core::evaluateDeployment) and, when it misses, the
// fewest GPUs of the same kind that hold them (core::planDeployments).
struct ReviewVerdict {
    std::int64_t users = 0; // 0: no target and no concurrency set
    bool usersAreTarget = false;
    core::Deployment current;            // the current GPU and layout holding `users`
    std::optional<core::GpuPlan> needed; // the current GPU kind's plan, when the layout misses
    // "50 users at 32K on 4 × H100 SXM 80GB: does not fit, 13 fit; needs 12 × H100 SXM 80GB
    //  as TP 4 × PP 3"
    QString text;
};
ReviewVerdict reviewVerdict(const LedgerSnapshot& snap, int gpusPerNode = 8,
                            int maxGpus = core::kMaxPlanGpus);

struct ReportInputs {
    const LedgerSnapshot* snapshot = nullptr;
    const LedgerSnapshot* reference = nullptr; // optional
    ChartWidget* memoryChart = nullptr;
    ChartWidget* concurrencyChart = nullptr;
    ChartWidget* breakdownChart = nullptr;
    const LadderModel* ladder = nullptr;
    // The predicted Speed chart (its image and data) and the calibration behind it.
    PredictedSpeedChart* predictedSpeedChart = nullptr;
    SpeedCalibration calibration = defaultCalibration();
    // The Deployment tab's latest plan over GPU kinds (the plan table's "other kinds"); when
    // null the report plans the catalog itself (tens of milliseconds).
    std::shared_ptr<const core::PlanResult> plan;
    std::int64_t planUsers = 0; // the users that plan is for
    core::UnitSystem units = core::UnitSystem::Binary;
    // The window's scope: the subtitle, the scenario's byte figures and the charts all use it.
    FigureScope scope = FigureScope::PerGpu;
    // Measured results (a third page) when set.
    const ProbeResultsModel* probe = nullptr;
    ChartWidget* qualityChart = nullptr;
    ChartWidget* speedChart = nullptr;
    QString probeSource; // "NVIDIA H200 · 2026-11-29 (from bench.json)"
    // The Traffic tab's simulation (a page of its own, labelled a simulation) when set.
    std::shared_ptr<const TrafficResult> traffic;
    ChartWidget* trafficTtftChart = nullptr;
    ChartWidget* trafficTpotChart = nullptr;
    ChartWidget* trafficTimelineChart = nullptr;
    // The Engines tab's chart and table (a page "Engines side by side") when set.
    ChartWidget* enginesChart = nullptr;
    const EnginesModel* engines = nullptr;
};

// What a written report holds, for checks: its pages, the section headings and charts in
// order (charts by object name), and its text (the HTML parts as plain text).
struct ReportOutline {
    int pages = 0;
    QStringList sections;
    QList<int> sectionPages; // the page (from 1) each section starts on
    QStringList charts;
    QString text;
};

bool writeReviewReport(const QString& path, const ReportInputs& in, QString* error = nullptr,
                       ReportOutline* outline = nullptr);

// The same pages as images (a preview; `scale` 2 for a sharp look), white, in order.
QList<QImage> renderReviewReportPages(const ReportInputs& in, double scale = 1.0,
                                      ReportOutline* outline = nullptr);

// The scenario as an HTML definition table (report), every figure with its scope.
QString scenarioHtml(const LedgerSnapshot& snap, core::UnitSystem units,
                     FigureScope scope = FigureScope::PerGpu);
// The Assumptions section: reserves, the speed model's efficiencies and their sources,
// max_num_seqs and whether it caps, and the published quality of low-bit KV formats.
QString assumptionsHtml(const LedgerSnapshot& snap, const SpeedCalibration& calibration,
                        core::UnitSystem units);
// The Traffic page's text: what was simulated, with its assumptions, and the sustainable rate
// per ladder step.
QString trafficHtml(const TrafficResult& traffic);
// The plan table: the current GPU kind's best layouts, then the best of the other kinds.
QString planTableHtml(const LedgerSnapshot& snap, const ReviewVerdict& verdict,
                      const core::PlanResult* others, core::UnitSystem units);

} // namespace kvl::widgets
