// Fuzzes loading kvprobe results JSON: any bytes give a report or a one-line error naming the
// file; a loaded report survives a write/read round trip with the same rows.
#include "gpu_probe/io/probe_json.h"
#include "gpu_probe/io/results_io.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

using kvl::probe::ProbeReport;

namespace {
bool same(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto r = kvl::probe::parseProbeReport(text, "fuzz.json");
    if (!r) {
        const std::string& e = r.error().message;
        if (e.rfind("fuzz.json", 0) != 0 || e.find('\n') != std::string::npos)
            std::abort(); // errors are one line and name the file
        return 0;
    }
    const ProbeReport& rep = r.value();
    (void)rep.label();
    auto again = kvl::probe::parseProbeReport(kvl::probe::probeReportToJson(rep), "again.json");
    const ProbeReport* rep2 = again ? &again.value() : nullptr;
    if (!rep2 || rep2->rows.size() != rep.rows.size())
        std::abort(); // what we write, we must read back
    for (std::size_t i = 0; i < rep.rows.size(); ++i) {
        const auto& a = rep.rows[i];
        const auto& b = rep2->rows[i];
        if (a.ok() != b.ok() || a.formatId != b.formatId || a.batch != b.batch ||
            a.context != b.context || a.poolBytes != b.poolBytes ||
            a.predictedPoolBytes != b.predictedPoolBytes || a.pagesUsed != b.pagesUsed ||
            !same(a.relL2, b.relL2) || !same(a.attentionMs, b.attentionMs))
            std::abort();
    }
    return 0;
}
