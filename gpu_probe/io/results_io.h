#pragma once
// Reading kvprobe's results JSON back (`kvprobe run --json`, `kvprobe bench --json`, schema in
// gpu_probe/README.md) into a value type, so the explorer can show a GPU machine's results.
// Strict: a foreign, future, truncated or ill-typed file is rejected with one line that names
// the file and the JSON path (core/io/json_fields.h). Never throws (it is fuzzed). No Qt.
// Reading needs nlohmann-json, so parseProbeReport and loadProbeReport exist only in builds
// that have it (every full build); the probe-only build of the GPU machine only writes
// (probe_json.h).

#include "core/result.h"
#include "gpu_probe/run/probe.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvl::probe {

// ProbeReport, the one result type, is defined in probe.h.

// Parses the JSON text; `source` names the file in error messages (BadFile).
Result<ProbeReport> parseProbeReport(std::string_view text, const std::string& source);
// Reads a file through io::readFile (regular files only, at most 64 MiB) and parses it; parse
// errors name the file by its base name, read errors by the path.
Result<ProbeReport> loadProbeReport(const std::string& path);

// Writing: probeReportToJson in probe_json.h.

} // namespace kvl::probe
