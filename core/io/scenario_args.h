#pragma once
// The CLI's scenario options, shared by kvledger ledger / export / --screenshot.

#include "catalog.h"
#include "core/scenario.h"

#include <string>
#include <vector>

namespace kvl::io {

// The CLI's scenario options (kvledger ledger / export / --screenshot):
// --model ID | --config PATH, --layers N, --attention native|mha|gqa:G|mqa,
// --kv-dtype auto|fp32|fp16|bf16|fp8|fp8_e4m3|fp8_e5m2|int8|int4|int2, --kv-group-size G,
// --kv-granularity NAME, --block-size N | --no-paging, --prefix-tokens N, --prefix-requests N,
// --context N, --max-model-len N, --gpu ID, --tp N, --gpu-mem-util F, --activation-gib F,
// --overhead-gib F, --kv-memory-gib F | --kv-memory-bytes N, --weight-dtype D,
// --target-requests N, --scenario FILE (start from a saved scenario).
// Starts from `base`; unknown options are returned in `rest` for the caller to handle.
struct ParsedArgs {
    core::Scenario scenario;
    std::vector<std::string> rest;
};
Result<ParsedArgs> parseScenarioArgs(const std::vector<std::string>& args,
                                     const core::Scenario& base);
// The help text for those options.
std::string scenarioOptionsHelp();

} // namespace kvl::io
