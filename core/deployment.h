#pragma once
// Where a model's bytes go in a vLLM deployment: the layout (TP x PP x DP, expert and decode
// context parallel) and the rules vLLM holds it to, the weights each GPU keeps, and the memory
// reserves vLLM's profiler takes before the KV cache (activation peak, non-torch memory,
// CUDA graphs), estimated from the model when the user has not measured them.

#include "core/result.h"
#include "core/scenario.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kvl::core {

struct Layout {
    int tp = 1;
    int pp = 1;
    int dp = 1;
    bool ep = false;
    int dcp = 1;
    int gpus() const { return tp * pp * dp; }
    friend bool operator==(const Layout&, const Layout&) = default;
};
Layout layoutOf(const Scenario& s);
void applyLayout(Scenario& s, const Layout& l);
// "TP 4 x PP 3", "TP 1 x DP 8 + EP", "TP 8 (DCP 8)".
std::string layoutLabel(const Layout& l);

// The layers [first, last) of each PP stage (vllm/distributed/utils.py get_pp_indices):
// layers / PP each, the remainder one each to the stages before the last.
std::vector<std::pair<int, int>> pipelineStages(int layers, int pp);

// vLLM's rules for a layout of this model: TP divides the attention heads; KV heads split or
// replicate evenly; the Mamba state shards; PP has at most one stage per layer; EP needs
// experts; DCP divides TP, and is for MLA or replicated KV heads, never sliding windows.
Status checkLayout(const ModelSpec& m, const Layout& l);
// Copies of the KV cache that tensor parallel `tp` keeps: MLA's latent on every rank, or KV
// heads replicated where there are fewer than ranks. Decode context parallel shards them.
int kvCopiesUnderTp(const ModelSpec& m, int tp);
// The one check of a scenario every front end runs (the window, the CLI, scenario files): the
// fields (Scenario::validate), then the layout vLLM would refuse to start with, named
// "layout TP 3: ...".
Status checkScenario(const Scenario& s);

// The model's parameters by where they live (estimated from the architecture numbers when the
// config has them): the embedding and LM head on the first and last stage, the routed experts
// (split by EP), and the rest spread evenly over the decoder layers.
struct ParamSplit {
    std::int64_t embedding = 0;
    std::int64_t lmHead = 0; // 0 when tied to the embedding
    std::int64_t experts = 0;
    std::int64_t denseLayers = 0;    // everything else, over all layers
    std::int64_t activePerToken = 0; // parameters one token reads (top-k experts only)
};
ParamSplit splitParams(const ModelSpec& m);

// What the weights per GPU depend on, computed once per model, levers and TP.
struct WeightModel {
    ParamSplit split;
    WeightDtype dtype = WeightDtype::Bf16;
    std::int64_t scaleBytesPerLayer = 0; // vLLM's k_scale / v_scale on each attention layer
    int layers = 1;
    int firstDenseLayers = 0;
    bool tied = false;
};
WeightModel weightModel(const Scenario& s);
// One GPU's weights of the stage holding layers [first, last) of `stages` stages, split into
// the dense part (every token reads it) and the routed experts (tokens read their top-k).
struct StageWeights {
    std::int64_t dense = 0;
    std::int64_t experts = 0;
    std::int64_t total() const { return dense + experts; }
};
StageWeights stageWeights(const WeightModel& w, const Layout& l, int first, int last, int stage,
                          int stages);
std::int64_t weightsPerGpu(const WeightModel& w, const Layout& l, int first, int last, int stage,
                           int stages);

// Weight bytes one GPU of PP stage `stage` holds: its layers' dense share over TP, its experts'
// share over TP (or over TP x DP with expert parallel), and the embedding / LM head on the
// first / last stage, plus vLLM's per-layer KV scales.
std::int64_t weightsPerGpu(const Scenario& s, const Layout& l, int stage);
// The largest of them (the stage that limits the layout).
std::int64_t maxWeightsPerGpu(const Scenario& s, const Layout& l);

// The memory vLLM's profiler keeps out of the KV pool on every GPU. An estimate from ~45
// public vLLM startup logs (vLLM issues 10517, 15815, 13882): the activation peak is the larger
// of the forward over max_num_batched_tokens, T x (3 x intermediate / TP + 4 x hidden) x 2
// bytes, and the dummy sampler over max_num_seqs rows, 40 x S x vocab bytes; non-torch memory
// grows with TP (NCCL buffers); CUDA graphs (captured by default since vLLM 0.21) take about
// 0.5 GiB for dense models and more for MoE.
struct Reserves {
    std::int64_t activation = 0;
    std::int64_t nonTorch = 0;
    std::int64_t cudaGraphs = 0;
    std::int64_t total() const { return activation + nonTorch + cudaGraphs; }
};
Reserves estimateReserves(const Scenario& s, const Layout& l);

} // namespace kvl::core
