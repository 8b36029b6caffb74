#pragma once
// Reading kvprobe's results JSON back (`kvprobe run --json`, `kvprobe bench --json`, schema in
// gpu_probe/README.md) into a value type, so the explorer can show a GPU machine's results.
// Strict: a foreign, future, truncated or ill-typed file is rejected with one line that names
// the file and the field. Never throws (it is fuzzed). No Qt.

#include "gpu_probe/probe.h"

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kvl::probe {

// ProbeReport, the one result type, is defined in probe.h.

// Parses the JSON text; `source` names the file in error messages.
std::variant<ProbeReport, std::string> parseProbeReport(std::string_view text,
                                                        const std::string& source);
// Reads and parses a file (at most 64 MiB).
std::variant<ProbeReport, std::string> loadProbeReport(const std::string& path);

// The report as kvprobe's JSON (bench layout: results + quality_vs_context), for saving the
// explorer's own runs; parseProbeReport reads it back.
std::string probeReportToJson(const ProbeReport& report);

} // namespace kvl::probe
