#pragma once
// Measured points for the charts, computed from a probe report and the current scenario: the
// probe measures ONE layer, so per-request memory is scaled to the whole model as
// (per-layer pool bytes / batch) x layers, and the concurrency overlay divides the scenario's
// memory for KV by that. Every point carries a tooltip that states the scaling.

#include "gpu_probe/io/results_io.h"
#include "widgets/state/ledger_view_state.h"

#include <QColor>
#include <QString>

#include <vector>

namespace kvl::widgets {

struct MeasuredPoint {
    double x = 0;
    double y = 0;
    QString tooltip;
};

struct MeasuredSeries {
    QString name; // legend: "Measured INT8 (CPU)"
    std::string formatId;
    int colorIndex = 0;                // index into the format colours
    std::vector<MeasuredPoint> points; // sorted by x
};

// Layers the per-layer measurement is multiplied by: the scenario's model when the probe ran
// its layer, else the catalog entry of the probed model, else 1 (`known` false).
int probedLayers(const probe::ProbeResult& r, const core::ModelSpec& scenarioModel,
                 bool* known = nullptr);

// Whole-model KV bytes per token of a probed format (per-layer page bytes / block x layers).
double measuredBytesPerToken(const probe::ProbeResult& r, const core::ModelSpec& scenarioModel);

std::vector<MeasuredSeries> measuredOverlay(const probe::ProbeReport& report,
                                            const LedgerSnapshot& snap, CurveKind kind,
                                            core::UnitSystem units);

// The line under a chart's title: "Markers: measured on <device · date>, one layer's pool /
// batch x 32 layers". Rows measured for another model than the scenario's are left out of the
// overlay; when that leaves nothing, the note says so: "Markers hidden: measured for
// llama-3-8b on <device · date>, not for the Qwen3-32B shown".
QString measuredNote(const probe::ProbeReport& report, const LedgerSnapshot& snap);

// A stable colour and marker per probe format (index in allProbeFormats()).
int formatColorIndex(const std::string& formatId);
QColor formatColor(int index, bool dark);
int formatMarker(int index); // QCPScatterStyle::ScatterShape

// Timed rows whose pool was small enough to stay partly in the device's last-level cache (the
// probe notes it on the row): their step times are short and their bandwidth overstated.
int cacheResidentRows(const probe::ProbeReport& report);
bool isCacheResident(const probe::ProbeResult& row);
// That caveat as one line to show, not hover: "" when no timed row is affected. `brief`: the
// short form a chart's title note has room for.
QString cacheCaveat(const probe::ProbeReport& report, bool brief = false);

// "CPU" / "CUDA" and the device for legends.
QString backendLabel(const probe::ProbeReport& report);

} // namespace kvl::widgets
