#pragma once
// The design-review report: a two-page PDF (vector) with the scenario, the memory and
// concurrency charts, the breakdown, the lever ladder table and the vLLM command.

#include "ledger_view_state.h"

#include <QString>

#include <optional>

namespace kvl::widgets {

class ChartWidget;
class LadderModel;

struct ReportInputs {
    const LedgerSnapshot* snapshot = nullptr;
    const LedgerSnapshot* reference = nullptr; // optional
    ChartWidget* memoryChart = nullptr;
    ChartWidget* concurrencyChart = nullptr;
    ChartWidget* breakdownChart = nullptr;
    const LadderModel* ladder = nullptr;
    core::UnitSystem units = core::UnitSystem::Binary;
};

bool writeReviewReport(const QString& path, const ReportInputs& in, QString* error = nullptr);

// The scenario as an HTML definition table (report) and as plain text lines.
QString scenarioHtml(const LedgerSnapshot& snap, core::UnitSystem units);

} // namespace kvl::widgets
