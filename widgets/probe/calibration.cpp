#include "widgets/probe/calibration.h"

#include "widgets/state/ledger_view_state.h"

#include "core/engine.h"
#include "core/kv_format.h"

#include <QObject>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace kvl::widgets {

namespace {

// Lower-case alphanumeric words: "NVIDIA A100-SXM4-80GB" -> nvidia, a100, sxm4, 80gb.
std::vector<std::string> words(std::string_view text) {
    std::vector<std::string> out;
    std::string cur;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (std::isalnum(c)) {
            cur += static_cast<char>(std::tolower(c));
        } else if (!cur.empty()) {
            out.push_back(cur);
            cur.clear();
        }
    }
    if (!cur.empty())
        out.push_back(cur);
    return out;
}

bool isMemoryWord(const std::string& w) { // "80gb", "141gb"
    return w.size() > 2 && w.ends_with("gb") &&
           std::all_of(w.begin(), w.end() - 2, [](char c) { return std::isdigit(c); });
}

bool has(const std::vector<std::string>& ws, std::string_view w) {
    return std::find(ws.begin(), ws.end(), w) != ws.end();
}

std::string memoryWord(const std::vector<std::string>& ws) {
    for (const auto& w : ws)
        if (isMemoryWord(w))
            return w;
    return {};
}

// The key core::decodeStep looks a measured efficiency up by (core/speed.cpp replicaOf).
std::string formatKey(const core::KvFormat& f) {
    std::string key = core::shortLabel(f);
    return key == "BF16" ? std::string("FP16") : key;
}

QString two(double v) {
    return QString::number(v, 'f', 2);
}

} // namespace

// A catalog GPU matches a device name when every word of its name is in the device's, except
// the memory size ("80GB") and "SXM" (CUDA names the SXM H100 "NVIDIA H100 80GB HBM3"), and
// the device names no other form factor (PCIe, NVL) and no other memory size. The most
// specific of the matches wins; a tie is no match. Device names as CUDA and ROCm report them
// (cudaDeviceProp::name: "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-80GB", "NVIDIA L4").
const core::GpuSpec* matchCatalogGpu(std::string_view deviceName,
                                     std::span<const core::GpuSpec> gpus) {
    const auto dev = words(deviceName);
    const std::string devMemory = memoryWord(dev);
    const core::GpuSpec* best = nullptr;
    std::size_t bestWords = 0;
    bool tie = false;
    for (const core::GpuSpec& g : gpus) {
        const auto name = words(g.name);
        std::vector<std::string> required;
        for (const auto& w : name)
            if (!isMemoryWord(w) && w != "sxm")
                required.push_back(w);
        if (required.empty())
            continue;
        const bool all = std::all_of(required.begin(), required.end(),
                                     [&](const std::string& w) { return has(dev, w); });
        if (!all)
            continue;
        bool otherForm = false;
        for (const char* form : {"pcie", "nvl"})
            otherForm = otherForm || (has(dev, form) && !has(name, form));
        if (otherForm)
            continue;
        const std::string gMemory = memoryWord(name);
        if (!devMemory.empty() && !gMemory.empty() && devMemory != gMemory)
            continue;
        if (required.size() > bestWords) {
            best = &g;
            bestWords = required.size();
            tie = false;
        } else if (required.size() == bestWords) {
            tie = true;
        }
    }
    return tie ? nullptr : best;
}

PredictedAttention predictedAttention(const probe::ProbeResult& row,
                                      std::span<const core::GpuSpec> gpus,
                                      const core::SpeedAssumptions& assumptions) {
    PredictedAttention p;
    if (!row.ok() || !row.speedMeasured) {
        p.basis = QObject::tr("no decode step measured");
        return p;
    }
    const auto format = probe::parseProbeFormat(row.formatId);
    if (!format) {
        p.basis = QObject::tr("unknown KV format %1").arg(qs(row.formatId));
        return p;
    }
    if (row.backend == "cpu") {
        // Decode reads K and V and writes almost nothing: the read stream is its yardstick. A
        // file from a kvprobe without one has the copy alone (read + write traffic, a lower
        // figure than a read stream on most CPUs, so such a prediction errs slow).
        const auto gbs = [](double v) { return QString::number(v, 'f', v < 10 ? 2 : 1); };
        p.efficiency = 1.0;
        if (row.readGBs > 0) {
            p.bandwidthGBs = row.readGBs;
            p.basis =
                QObject::tr("read stream measured in the same run, %1 GB/s").arg(gbs(row.readGBs));
        } else {
            p.bandwidthGBs = row.copyGBs;
            p.basis = QObject::tr("copy measured in the same run, %1 GB/s (read + write; no read "
                                  "stream measured: a results file from an older kvprobe)")
                          .arg(gbs(row.copyGBs));
        }
    } else if (row.backend == "cuda") {
        const core::GpuSpec* gpu = matchCatalogGpu(row.device, gpus);
        if (!gpu || gpu->bandwidthGBs <= 0) {
            p.basis = QObject::tr("%1 matches no GPU of the catalog").arg(qs(row.device));
            return p;
        }
        p.bandwidthGBs = gpu->bandwidthGBs;
        bool calibrated = false;
        p.efficiency = core::kvEfficiency(assumptions, gpu->id, format->format, &calibrated);
        p.basis =
            QObject::tr("%1 datasheet %2 GB/s x eta_kv %3%4")
                .arg(qs(gpu->name), thousandsQ(std::llround(gpu->bandwidthGBs)), two(p.efficiency),
                     calibrated ? QObject::tr(" (measured)") : QObject::tr(" (default)"));
    } else {
        p.basis = QObject::tr("the %1 backend proves indexing, not speed").arg(qs(row.backend));
        return p;
    }
    const core::KvReadEstimate e =
        core::kvReadEstimate(double(row.attentionBytes), p.bandwidthGBs, p.efficiency);
    p.effectiveGBs = e.effectiveGBs;
    p.ms = e.ms;
    p.valid = e.ms > 0 && row.attentionMs > 0;
    if (p.valid)
        p.ratio = row.attentionMs / e.ms;
    else
        p.basis = QObject::tr("no bandwidth figure for %1").arg(qs(row.device));
    return p;
}

SpeedCalibration defaultCalibration() {
    SpeedCalibration c;
    c.status = QObject::tr("datasheet defaults, no probe results loaded");
    return c;
}

SpeedCalibration calibrationFromReport(const probe::ProbeReport& report,
                                       std::span<const core::GpuSpec> gpus) {
    SpeedCalibration c = defaultCalibration();
    if (report.rows.empty())
        return c;
    const QString device = qs(report.device.empty() ? report.backend : report.device);
    const core::GpuSpec* gpu = matchCatalogGpu(report.device, gpus);
    if (!gpu || gpu->bandwidthGBs <= 0) {
        c.status = QObject::tr("datasheet defaults: the probe results are from %1, which matches "
                               "no GPU of the catalog")
                       .arg(device);
        return c;
    }
    // Per format, the measured row that read the most bytes: the one least helped by caches.
    struct Pick {
        double gbs = 0;
        std::int64_t bytes = -1;
    };
    std::map<std::string, Pick> picks;
    for (const probe::ProbeResult& r : report.rows) {
        if (!r.ok() || !r.speedMeasured || !(r.attentionGBs > 0))
            continue;
        const auto format = probe::parseProbeFormat(r.formatId);
        if (!format)
            continue;
        Pick& p = picks[formatKey(format->format)];
        if (r.attentionBytes > p.bytes || (r.attentionBytes == p.bytes && r.attentionGBs > p.gbs))
            p = Pick{r.attentionGBs, r.attentionBytes};
    }
    if (picks.empty()) {
        c.status =
            QObject::tr("datasheet defaults: the probe results from %1 measured no decode speed")
                .arg(device);
        return c;
    }
    const std::string date = report.date.substr(0, std::min<std::size_t>(10, report.date.size()));
    const std::string command = "kvprobe " + (report.command.empty() ? "bench" : report.command);
    for (const auto& [key, p] : picks)
        c.assumptions.attentionEfficiency[key] = p.gbs / gpu->bandwidthGBs;
    c.assumptions.calibratedGpuId = gpu->id;
    c.assumptions.calibrationSource =
        command + ", " + (report.device.empty() ? report.backend : report.device) + ", " + date;
    c.calibrated = true;
    c.gpuId = qs(gpu->id);
    c.gpuName = qs(gpu->name);
    c.status = QObject::tr("calibrated by %1 on %2 %3").arg(qs(command), device, qs(date));
    return c;
}

std::int64_t chosenConcurrency(const core::Scenario& s, const core::LedgerResult& r) {
    if (!r.error.empty())
        return 0;
    if (s.workload.concurrency > 0)
        return s.workload.concurrency;
    return std::min(r.maxRequestsAtContext, core::effectiveMaxNumSeqs(s));
}

bool calibratesScenario(const core::SpeedAssumptions& a, const core::Scenario& s) {
    if (a.attentionEfficiency.empty() ||
        (!a.calibratedGpuId.empty() && a.calibratedGpuId != s.hardware.gpu.id))
        return false;
    return a.attentionEfficiency.count(formatKey(core::storedKvFormat(s))) > 0;
}

QString speedAssumptionsLine(const core::Scenario& s, const SpeedCalibration& calibration) {
    const core::SpeedAssumptions& a = calibration.assumptions;
    const core::GpuSpec& g = s.hardware.gpu;
    QStringList parts;
    parts << QObject::tr("Estimate (roofline): η_mem %1, η_flops %2 (defaults: decode kernels "
                         "reach ~80% of HBM bandwidth, GEMMs ~60% of peak)")
                 .arg(two(a.memoryEfficiency), two(a.flopsEfficiency));
    const double tflops = core::peakTflops(s);
    const QString bandwidth = QObject::tr("%1 GB/s").arg(
        thousandsQ(static_cast<std::int64_t>(std::llround(g.bandwidthGBs))));
    const QString compute =
        tflops > 0 ? QObject::tr("%1 TFLOP/s")
                         .arg(thousandsQ(static_cast<std::int64_t>(std::llround(tflops))))
                   : QObject::tr("no TFLOP/s in the catalog (compute term off)");
    // Where the GPU's figures come from, as the catalog (resources/gpus.json) cites it.
    parts << QObject::tr("%1: %2, %3 (source: %4)")
                 .arg(qs(g.name), bandwidth, compute,
                      g.source.empty() ? QObject::tr("the GPU catalog, no source given")
                                       : qs(g.source));
    if (calibration.calibrated && calibratesScenario(a, s)) {
        const std::string key = formatKey(core::storedKvFormat(s));
        parts << QObject::tr("attention η %1 for %2, %3")
                     .arg(two(a.attentionEfficiency.at(key)), qs(key), calibration.status);
    } else if (calibration.calibrated && a.calibratedGpuId != s.hardware.gpu.id) {
        parts << QObject::tr("datasheet defaults (the probe results are from %1, not this GPU)")
                     .arg(calibration.gpuName);
    } else if (calibration.calibrated) {
        parts << QObject::tr("datasheet defaults (the probe results from %1 have no %2 row)")
                     .arg(calibration.gpuName, qs(core::shortLabel(core::storedKvFormat(s))));
    } else {
        parts << calibration.status;
    }
    return parts.join(QStringLiteral("; "));
}

} // namespace kvl::widgets
