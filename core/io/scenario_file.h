#pragma once
// Scenario files (.kvl.json): a versioned JSON document holding the whole scenario, the model
// spec included (so imported and edited models survive), and the CLI's scenario options.

#include "catalog.h"
#include "core/result.h"
#include "core/scenario.h"

#include <string>
#include <string_view>
#include <vector>

namespace kvl::io {

// Still 1: every field added since (the layout, engine options, the GPU's compute capability,
// chunked / state / none layers, per-layer heads, the state spec, MLA and MoE numbers) is
// optional with its old default, so version-1 files load as before, and no field changed its
// meaning. A reader that predates them refuses the new layer kinds by name.
inline constexpr int kScenarioFileVersion = 1;

std::string scenarioToJson(const core::Scenario& s);
// Rejects a newer version ("written by a newer KV Ledger (version 3); this one reads 1"),
// wrong types and out-of-range values, naming the field.
Result<core::Scenario> scenarioFromJson(std::string_view json, std::string_view sourceName);
// Reads `path` through io::readFile (regular files only, at most 64 MiB) and parses it;
// messages name the path.
Result<core::Scenario> loadScenarioFile(const std::string& path);

// The default scenario: Llama-3-8B on an H100 80GB, vLLM defaults (auto KV dtype, paging 16).
core::Scenario defaultScenario();

} // namespace kvl::io
