#pragma once
// The design-review report: a two-page PDF (vector) with the scenario, the memory and
// concurrency charts, the breakdown, the lever ladder table and the vLLM command.

#include "ledger_view_state.h"

#include <QString>

#include <optional>

namespace kvl::widgets {

class ChartWidget;
class LadderModel;
class ProbeResultsModel;

struct ReportInputs {
    const LedgerSnapshot* snapshot = nullptr;
    const LedgerSnapshot* reference = nullptr; // optional
    ChartWidget* memoryChart = nullptr;
    ChartWidget* concurrencyChart = nullptr;
    ChartWidget* breakdownChart = nullptr;
    const LadderModel* ladder = nullptr;
    core::UnitSystem units = core::UnitSystem::Binary;
    // Measured results (a third page) when set.
    const ProbeResultsModel* probe = nullptr;
    ChartWidget* qualityChart = nullptr;
    ChartWidget* speedChart = nullptr;
    QString probeSource; // "NVIDIA H200 · 2026-11-29 (from bench.json)"
};

bool writeReviewReport(const QString& path, const ReportInputs& in, QString* error = nullptr);

// The scenario as an HTML definition table (report) and as plain text lines.
QString scenarioHtml(const LedgerSnapshot& snap, core::UnitSystem units);

} // namespace kvl::widgets
