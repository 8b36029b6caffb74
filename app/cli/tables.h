#pragma once
// The human-readable output of kvledger's ledger, plan, models and gpus commands (their --json
// documents are core/io/ledger_json.h's and commands.cpp's). Names from catalogs and
// config.json files go through printable().

#include "core/engines.h"
#include "core/ledger.h"
#include "core/model.h"
#include "core/planner.h"
#include "core/scenario.h"
#include "core/units.h"

#include <cstdint>
#include <ostream>
#include <vector>

namespace kvl::app::cli {

// kvledger ledger: the scenario, the ledger's rows, vLLM v1's KV cache groups and log line,
// the decode estimate, the GPUs --target-requests needs, the lever ladder and the warnings.
// `r` and `ladder` are core::computeLedger(s) and core::computeLadder(s).
void printLedgerTable(std::ostream& out, const core::Scenario& s, const core::LedgerResult& r,
                      const std::vector<core::LadderStep>& ladder, core::UnitSystem u);

// kvledger plan: one row per GPU kind of `plan` (core::planDeployments(req)), best first, with
// up to three other layouts, and the vLLM command of the best plan.
void printPlanTable(std::ostream& out, const core::PlanRequest& req, const core::PlanResult& plan,
                    core::UnitSystem u);

// kvledger ledger --engine sglang|trtllm|llamacpp: the engine's pool, tokens and requests, its
// startup lines and launch command.
void printEngineTable(std::ostream& out, const core::Scenario& s, const core::EngineResult& r,
                      core::UnitSystem u);
// kvledger plan --engine sglang|trtllm|llamacpp: one row per GPU kind (core::planEngine).
void printEnginePlanTable(std::ostream& out, const core::Scenario& base, std::int64_t users,
                          const std::vector<core::EnginePlanRow>& rows);

// KV bytes per token in the model's own dtype (vLLM "auto"), whole model.
std::int64_t nativeBytesPerToken(const core::ModelSpec& m);

// kvledger models and kvledger gpus.
void printModelsTable(std::ostream& out, const std::vector<core::ModelSpec>& models);
void printGpusTable(std::ostream& out, const std::vector<core::GpuSpec>& gpus);

} // namespace kvl::app::cli
