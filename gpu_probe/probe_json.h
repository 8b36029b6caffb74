#pragma once
// kvprobe's JSON (schema_version 1, documented in gpu_probe/README.md). The GUI loads it.

#include "core/io/json.h"
#include "gpu_probe/backend.h"
#include "gpu_probe/probe.h"

#include <string>

namespace kvl::probe {

inline constexpr int kSchemaVersion = 1;

// The envelope every command writes: tool, schema_version, command, backend, device, date,
// host, copy_bandwidth_gbs; the caller adds results / checks / backends.
// When and where a report was made: "2026-11-29T10:21:22Z" (UTC) and the host name.
std::string utcNow();
std::string hostName();

io::Json envelope(const std::string& command, const std::string& backend, const std::string& device,
                  double copyGBs);
io::Json toJson(const ProbeResult& r);
io::Json toJson(const std::vector<QualityPoint>& q);
io::Json toJson(const CheckReport& r);
io::Json toJson(const ProbeReport& r); // the bench layout: results + quality_vs_context
io::Json toJson(const std::vector<BackendInfo>& b);

} // namespace kvl::probe
