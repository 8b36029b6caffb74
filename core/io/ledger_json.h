#pragma once
// The JSON documents of `kvledger ledger --json` and `kvledger plan --json`, built from core's
// results. Pure C++ on nlohmann-json (no Qt), so the documents can be built and tested without
// the command line; app/cli prints them with dumpJson (json.h). Keys come out in the order
// written (ordered_json), which is the order of the documents kvledger has always printed.

#include "core/engines.h"
#include "core/ledger.h"
#include "core/planner.h"
#include "core/scenario.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace kvl::io {

// A GPU of the catalog with every field a scenario file keeps: the scenario file's "gpu" and
// `kvledger gpus --json` write this one object.
nlohmann::ordered_json gpuJson(const core::GpuSpec& g);

// The ledger of one scenario: bytes per token and request, the pool, vLLM's blocks and
// concurrency, vLLM v1's KV cache groups and log line, the decode-speed estimate, the GPUs a
// --target-requests needs, the lever ladder and the vLLM command. `r` and `ladder` are
// core::computeLedger(s) and core::computeLadder(s).
nlohmann::ordered_json ledgerJson(const core::Scenario& s, const core::LedgerResult& r,
                                  const std::vector<core::LadderStep>& ladder);

// The deployment plans of `plan` (core::planDeployments(request)), best first: for each GPU
// kind the best layout (or why none fits) and the alternatives.
nlohmann::ordered_json planJson(const core::PlanRequest& request, const core::PlanResult& plan);

// The ledger of a scenario whose engine is SGLang, TensorRT-LLM or llama.cpp: the engine's pool,
// tokens, requests at the context, its startup lines and launch command, and the engine's own
// intermediate figures under "detail". `r` is core::computeEngine(s).
nlohmann::ordered_json engineJson(const core::Scenario& s, const core::EngineResult& r);

// `plan` for SGLang, TensorRT-LLM or llama.cpp (core::planEngine's rows, best first).
nlohmann::ordered_json enginePlanJson(const core::Scenario& base, std::int64_t users,
                                      const std::vector<core::EnginePlanRow>& rows);

// The concurrency the ledger's decode-speed figures are taken at: the requests asked for
// (--concurrency), else as many as run (those that fit, capped by max_num_seqs), at least one.
// None where no request runs and none was asked for (vLLM refuses to start): then no speed
// is quoted, as a speed for one request would contradict the headline's 0. The ledger's JSON
// (null speed fields) and its table ("none") both use it.
std::optional<std::int64_t> speedBatch(const core::Scenario& s, const core::LedgerResult& r);

} // namespace kvl::io
