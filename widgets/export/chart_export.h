#pragma once
// One export path for the chart registry and the review report. The window (its live charts
// and models) and ChartBook (charts made from a ScenarioDocument, no window) each describe
// what they hold as a ChartSource; the format checks, the table drawn as an image, the CSV with
// its '#' lines, the atomic write and the report's inputs are worked out here, once, so a file
// exported headless is made exactly as the window makes it.

#include "widgets/charts/chart_widget.h"
#include "widgets/export/report.h"
#include "widgets/state/ledger_view_state.h"

#include <QFont>
#include <QPalette>
#include <QSize>
#include <QString>

#include <functional>
#include <memory>

namespace kvl::widgets {

class LadderModel;
class ScenarioDocument;

struct ChartSource {
    LedgerView view;
    // The chart of a registry name, up to date (its plan or simulation done); nullptr for a
    // table or an unknown name.
    std::function<ChartWidget*(const QString& name)> chart;
    // The CSV of the plan or probe table, as its model writes it (the ladder's: ladderCsv).
    std::function<QString(const QString& name)> tableCsv;
    const LadderModel* ladder = nullptr;
    QFont font;       // the ladder image's
    QPalette palette; // and its colours (--theme, View > Theme)
};

// Exports the chart or table `name` in the format of `path`'s suffix; the file is replaced only
// by a complete export. False with `error` (naming the file) otherwise.
bool exportRegistryChart(const ChartSource& src, const QString& name, const QString& path,
                         double scale = 1.0, QSize size = {}, QString* error = nullptr);

// The ladder as CSV, with the '#' lines of the view's scenario in front.
QString ladderCsv(const LadderModel& ladder, const LedgerView& view);

// The caption and '#' lines of a chart of registry scope `scope`: the document's scenario and
// scope when the export reads them.
ChartWidget::CaptionSource documentCaptionSource(const ScenarioDocument* doc, ChartScope scope);
// Sets that source on `chart`, with the scope of its registry entry (by object name), and
// invalidates the chart's caption at each of the document's new views.
void setDocumentCaptionSource(ChartWidget* chart, const ScenarioDocument* doc);

// The note beside the Ledger tab's charts' titles when the scenario names another engine: the
// curves and the breakdown are vLLM's accounting whatever the engine. Empty for vLLM.
QString engineRulesNote(const LedgerSnapshot& snap);

// What the review report adds to the registry's charts.
struct ReportExtras {
    SpeedCalibration calibration = defaultCalibration();
    std::shared_ptr<const core::PlanResult> plan; // null: the report plans the catalog itself
    std::int64_t planUsers = 0;
    std::shared_ptr<const TrafficResult> traffic; // null: no Traffic page
    const EnginesModel* engines = nullptr;
    const ProbeResultsModel* probe = nullptr; // null: no measured page
    QString probeSource;
};
// The report's inputs: the view's snapshot, reference, units and scope, the source's charts
// and ladder, and `extras`.
ReportInputs reportInputs(const ChartSource& src, const ReportExtras& extras);

} // namespace kvl::widgets
