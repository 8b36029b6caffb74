#pragma once
// The speed model's calibration by measurement: probe results (`kvprobe bench --json`) from a
// GPU of a catalog kind turn into core::SpeedAssumptions, the measured decode-attention
// bandwidth of each KV format as a fraction of that GPU's datasheet bandwidth (replacing
// eta_mem for the KV term, core/speed.h), and the one line every speed view prints beside its
// figures: the efficiencies, bandwidth, TFLOP/s, their sources, and whether measured.

#include "core/ledger.h"
#include "core/scenario.h"
#include "core/speed.h"
#include "gpu_probe/run/probe.h"

#include <QString>

#include <span>
#include <string_view>

namespace kvl::widgets {

// The catalog GPU a probe's device name is ("NVIDIA H100 80GB HBM3" -> H100 SXM 80GB), or
// nullptr when none or more than one matches. See calibration.cpp for the rule.
const core::GpuSpec* matchCatalogGpu(std::string_view deviceName,
                                     std::span<const core::GpuSpec> gpus);

struct SpeedCalibration {
    core::SpeedAssumptions assumptions; // the defaults, plus the measured formats if any
    bool calibrated = false;            // assumptions.attentionEfficiency is filled
    QString gpuId, gpuName;             // the catalog kind the results came from
    // "calibrated by kvprobe bench on NVIDIA H200 2026-11-29" or why not: "datasheet defaults,
    // no probe results loaded", "... (no catalog GPU matches 'Intel Xeon')".
    QString status;
};

// The calibration a results file gives: for each KV format with a measured decode step (the
// row that read the most bytes: the least cache-resident), its attention GB/s over the
// datasheet GB/s of the matching catalog GPU, keyed as core::decodeStep looks it up
// (shortLabel of the stored format, BF16 as FP16). No matching GPU, no measured row: no
// calibration, and the status says why.
SpeedCalibration calibrationFromReport(const probe::ProbeReport& report,
                                       std::span<const core::GpuSpec> gpus);
// The defaults: nothing measured.
SpeedCalibration defaultCalibration();

// What core's speed model predicts for one measured decode-attention step (a probe row), on the
// backend that ran it: the row's KV bytes read at that backend's bandwidth figure
// (core::kvReadEstimate). CUDA: the datasheet bandwidth of the catalog GPU the device matches,
// at the KV efficiency `assumptions` give that GPU and format. CPU: the read stream measured in
// the same run (decode reads and writes almost nothing), or in a file without one the copy (read
// + write bytes over time); an achieved rate already, so at efficiency 1. The emulator
// proves indexing, not speed: no prediction. Pass the defaults, not a calibration taken from the
// same rows, or the prediction agrees with them by construction.
struct PredictedAttention {
    bool valid = false;
    double ms = 0;           // predicted step time of the whole batch
    double bandwidthGBs = 0; // the backend's figure
    double efficiency = 0;
    double effectiveGBs = 0; // bandwidthGBs x efficiency
    double ratio = 0;        // measured ms / predicted ms: above 1 is slower than predicted
    QString basis;           // "H200 datasheet 4,800 GB/s x eta_kv 0.80", or why there is none
};
PredictedAttention predictedAttention(const probe::ProbeResult& row,
                                      std::span<const core::GpuSpec> gpus,
                                      const core::SpeedAssumptions& assumptions = {});

// Whether `assumptions` calibrate the scenario's GPU kind for its KV format.
bool calibratesScenario(const core::SpeedAssumptions& assumptions, const core::Scenario& s);

// The running requests per replica the speed figures are quoted at: the scenario's
// concurrency when set, else as many as fit (memory and max_num_seqs); 0 when none fits.
std::int64_t chosenConcurrency(const core::Scenario& s, const core::LedgerResult& r);

// "Estimate: eta_mem 0.80, eta_flops 0.60 (defaults: decode kernels, cuBLAS); H100 SXM 80GB
//  3,350 GB/s, 989 TFLOP/s BF16 (datasheet); datasheet defaults, no probe results loaded"
QString speedAssumptionsLine(const core::Scenario& s, const SpeedCalibration& calibration);

} // namespace kvl::widgets
