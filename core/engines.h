#pragma once
// One answer per engine for the same scenario: how big the KV pool is, how many tokens and
// requests of the workload's context it holds, and the lines the engine itself prints at
// startup for it, with its launch command. vLLM's answer is computeLedger's (core/ledger.h);
// SGLang's, TensorRT-LLM's and llama.cpp's come from their own units, each citing the engine's
// source files it follows.

#include "core/ledger.h"
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
    // false when the KV format lever asks for a dtype the engine has no cache of
    // (engineOffersKvDtype); `error` then says so and nothing else is computed.
    bool formatOffered = true;
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
// The KV dtypes each engine's own flag offers: vLLM --kv-cache-dtype (vllm/config/cache.py,
// read through core::vllmCacheDtypeNames), SGLang --kv-cache-dtype (sglang::kvCacheDtypeName),
// TensorRT-LLM kv_cache_config.dtype (trtllm::kvCacheDtypeName), llama.cpp -ctk / -ctv
// (llamacpp::kvTypeForDtype). In allDtypes() order.
std::vector<KvDtype> offeredKvDtypes(Engine e);
bool engineOffersKvDtype(Engine e, KvDtype d);
// The flag of engine `e` that names the KV dtype, and what it takes, for messages:
// "--kv-cache-dtype takes auto, fp8_e4m3, fp8_e5m2, fp4_e2m1, bf16".
std::string kvDtypeFlagText(Engine e);
// The error of engine `e` asked for a KV cache of `d` it has none of, naming what its flag takes:
// "SGLang has no int8 KV cache (--kv-cache-dtype takes auto, fp8_e4m3, fp8_e5m2, fp4_e2m1, bf16)".
std::string noKvCacheError(Engine e, KvDtype d);

// The scenario as engine `e` runs it: s.engine.kind = e; for SGLang, TensorRT-LLM and llama.cpp
// the attention lever's KV heads become the model's (a regrouped checkpoint); for llama.cpp,
// -ctk / -ctv from the KV format lever when it is on and llama.cpp has the dtype (INT8 -> q8_0,
// INT4 -> q4_0); with the lever off llama.cpp keeps the scenario's own -ctk / -ctv. The paging
// and prefix levers are vLLM's: the other engines always page with their own page size.
Scenario scenarioForEngine(const Scenario& s, Engine e);
// computeEngine(scenarioForEngine(s, e)), or, when the lever asks for a dtype `e` does not offer,
// a result with formatOffered false and the reason, without computing anything.
EngineResult computeEngineAs(const Scenario& s, Engine e);

// The engines side by side: per step of the lever ladder (computeLadder), the requests of the
// workload's context each engine runs at once, per replica, for the same model, GPU and
// workload, each by its own rules (computeEngineAs). vLLM's cell is the ladder step's own
// requestsYouCanRun; a step whose KV format vLLM has no --kv-cache-dtype for is not offered.
struct EngineCell {
    Engine engine = Engine::Vllm;
    bool offered = true;
    std::int64_t requests = 0; // per replica; 0 when not offered or it does not run
    std::int64_t poolTokens = 0;
    std::int64_t kvBytesPerTokenPerGpu = 0;
    std::string error; // why not (not offered, or does not run)
};
struct EngineLadderRow {
    LadderStepId step = LadderStepId::Baseline;
    std::string label;
    bool applied = true;
    std::vector<EngineCell> cells; // vLLM, SGLang, TensorRT-LLM, llama.cpp
};
std::vector<Engine> allEngines(); // vLLM, SGLang, TensorRT-LLM, llama.cpp
std::vector<EngineLadderRow> compareEngines(const Scenario& s);

std::vector<EnginePlanRow> planEngine(const Scenario& base, const std::vector<GpuSpec>& gpus,
                                      std::int64_t users, int maxGpus);

} // namespace kvl::core
