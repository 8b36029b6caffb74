#pragma once
// One answer per engine for the same scenario: how big the KV pool is, how many tokens and
// requests of the workload's context it holds, and the lines the engine itself prints at
// startup for it, with its launch command. vLLM's answer is computeLedger's (core/ledger.h);
// SGLang's, TensorRT-LLM's and llama.cpp's come from their own units, each citing the engine's
// source files it follows.

#include "core/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvl::core {

struct EngineResult {
    Engine engine = Engine::Vllm;
    std::string version;                    // the engine release whose rules these figures follow
    std::int64_t kvPoolBytesPerGpu = 0;     // what the engine allocates for KV (and state) per GPU
    std::int64_t poolTokens = 0;            // tokens the pool holds (per replica)
    std::int64_t kvBytesPerTokenPerGpu = 0; // one token across the layers that keep every token
    std::int64_t requestsAtContext = 0;     // requests of workload.context that fit at once
    std::vector<std::string> logLines;      // the engine's own startup lines, verbatim format
    std::string command;                    // the launch command with the flags that matter
    std::vector<std::string> notes;
    std::string
        error; // non-empty when the engine cannot run the scenario (a result, not bad input)
};

// A fraction as Python's repr prints it ("0.9", "0.835", "1.0"): SGLang and TensorRT-LLM print
// their memory fractions that way in their startup lines and take them so in their flags.
std::string pythonFloat(double v);

// The scenario's engine (s.engine.kind). For vLLM, computeLedger's figures in this shape.
EngineResult computeEngine(const Scenario& s);

// The fewest GPUs of each kind that hold `users` requests of the scenario's context with the
// scenario's engine: per kind, every TP of 1, 2, 4, ... up to maxGpus, replicated (DP) until the
// users fit. PP and expert parallelism are vLLM's planner's (core/planner.h), not these engines'.
// llama.cpp splits layers, not heads, over its GPUs (-sm layer): its cache does not shrink per
// GPU, so a replica of n GPUs is taken to fit when the weights and the cache fit in n GPUs'
// memory.
struct EnginePlanRow {
    GpuSpec gpu;
    int gpusPerReplica = 0; // 0 = none fits
    std::int64_t requestsPerReplica = 0;
    int replicas = 0;
    int gpus = 0;
    std::string why; // when none fits
};
std::vector<EnginePlanRow> planEngine(const Scenario& base, const std::vector<GpuSpec>& gpus,
                                      std::int64_t users, int maxGpus);

} // namespace kvl::core
