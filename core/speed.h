#pragma once
// Speed beside memory: the decode step time of a replica at b running requests of context T,
// from the bytes each GPU reads per step (its weights, the experts the batch touches, the KV
// of every request, Mamba state) and the FLOPs it does, against the GPU's bandwidth and
// TFLOP/s: t = max(bytes / (bandwidth x eta_mem), flops / (peak x eta_flops)) + t_fixed.
// A roofline estimate, labelled as one; the probe's measured decode-attention bandwidth can
// replace eta_mem for the KV term.

#include "core/kv_format.h"
#include "core/scenario.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kvl::core {

// Defaults and their sources. eta_mem 0.8: decode kernels reach 82-89% of datasheet HBM
// bandwidth on an H100 at batch 16-64 (FlashInfer's and vLLM's paged-attention v2 published
// figures); weights and KV share it. eta_flops 0.6: large dense GEMMs reach 60-75% of the
// tensor-core peak (cuBLAS on H100), decode GEMMs less. t_fixed 0: vLLM's async scheduling and
// CUDA graphs overlap the host's per-step work with the GPU.
inline constexpr double kDefaultMemoryEfficiency = 0.8;
inline constexpr double kDefaultFlopsEfficiency = 0.6;
inline constexpr double kDefaultFixedStepMs = 0.0;

struct SpeedAssumptions {
    double memoryEfficiency = kDefaultMemoryEfficiency;
    double flopsEfficiency = kDefaultFlopsEfficiency;
    double fixedStepMs = kDefaultFixedStepMs;
    // Measured decode attention, per KV format label ("FP16", "INT8", ...): the fraction of the
    // datasheet bandwidth it reached on this GPU kind (probe results). Replaces eta_mem for the
    // KV term of a matching format.
    std::string calibratedGpuId;
    std::map<std::string, double> attentionEfficiency;
    std::string calibrationSource; // "kvprobe bench, NVIDIA H200, 2026-12-01"
};

enum class Regime : std::uint8_t { MemoryBound, ComputeBound };
std::string_view regimeName(Regime r); // "memory-bound" / "compute-bound"

struct DecodeStep {
    std::int64_t batch = 0;
    std::int64_t context = 0;
    // Per GPU of the busiest stage, one step.
    double weightBytes = 0; // dense share + the experts the batch touches
    double kvBytes = 0;     // every request's KV on this GPU (shared prefix blocks once)
    double stateBytes = 0;  // Mamba / linear-attention state
    double flops = 0;
    double memoryMs = 0, computeMs = 0;
    double stepMs = 0; // the whole replica: every PP stage in turn, plus t_fixed
    Regime regime = Regime::MemoryBound;
    bool calibrated = false; // the KV term used a measured attention efficiency
    double tokensPerSecondPerUser = 0;
    double replicaTokensPerSecond = 0;
    double clusterTokensPerSecond = 0; // x data parallel replicas
};

// The efficiency the KV term runs at (eta_kv): the measured decode-attention efficiency of the
// stored KV format on GPU kind `gpuId` when the assumptions hold one (BF16 reads as FP16: the
// same bytes and kernel path), else eta_mem. `calibrated` says which.
double kvEfficiency(const SpeedAssumptions& a, std::string_view gpuId, const KvFormat& stored,
                    bool* calibrated = nullptr);

// The KV term of a decode step on its own: `kvBytes` read once at `bandwidthGBs` x
// `efficiency`. decodeStep's memory time is this plus the weights' and state's terms; a probe's
// paged-attention step is this alone, which is what the Measured tab compares it with.
struct KvReadEstimate {
    double ms = 0;           // 0 when the bandwidth or the bytes are not positive
    double effectiveGBs = 0; // bandwidthGBs x efficiency
};
KvReadEstimate kvReadEstimate(double kvBytes, double bandwidthGBs, double efficiency);

// Expected distinct experts `tokens` tokens touch when each picks top-k of E uniformly:
// E x (1 - (1 - k/E)^tokens).
double expectedExpertsTouched(int experts, int topK, double tokens);

// One decode step of the scenario's replica (its layout), at `batch` running requests of
// `context` tokens each.
DecodeStep decodeStep(const Scenario& s, std::int64_t batch, std::int64_t context,
                      const SpeedAssumptions& a = {});

// Time to the first token of one prompt, compute-bound: 2 x active parameters x tokens over
// the GPUs' tensor-core peak, in chunks of max_num_batched_tokens, each chunk reading the
// weights at least once. An estimate.
double prefillMsEstimate(const Scenario& s, std::int64_t promptTokens,
                         const SpeedAssumptions& a = {});

// One engine step of the traffic simulation (core/sim), where vLLM's scheduler mixes decode
// tokens and prefill chunks in one batch. Built once per scenario; stepMs is a few
// multiplications per PP stage. Per stage, as decodeStep and prefillMsEstimate do:
//   memory  = (dense weights + the experts the step's tokens touch + state) / (bw x eta_mem)
//             + KV bytes / (bw x eta_kv)
//   compute = decode tokens x decodeStep's FLOPs per token (attention excluded)
//             + prefill tokens x 2 x active parameters / TP (prefillMsEstimate's FLOPs)
//   step    = sum over stages of max(memory, compute), + t_fixed.
// What it assumes: the KV a step reads is every block in use (the simulation passes its own
// count, shared prefix blocks once), attention FLOPs are left out (decode is memory-bound,
// prefillMsEstimate leaves them out too), and the host's scheduling overlaps the GPU (async
// scheduling), so a step costs only its GPU time. At one decode token of one request it is
// decodeStep(s, 1, T) less the attention FLOPs; at P prefill tokens of a dense model it is one
// chunk of prefillMsEstimate.
class StepCost {
public:
    explicit StepCost(const Scenario& s, const SpeedAssumptions& a = {});
    // kvBytes, stateBytes: per GPU over the whole model's layers at the replica's TP (the
    // stages' shares are taken here).
    // Not for concurrent calls on one instance: it remembers the experts a step of each token
    // count touches (a pow per step otherwise; the simulation asks for the same few counts
    // millions of times).
    double stepMs(std::int64_t decodeTokens, std::int64_t prefillTokens, double kvBytes,
                  double stateBytes) const;
    bool valid() const { return m_valid; }

private:
    struct Stage {
        double share = 0;        // of the model's layers
        double dense = 0;        // bytes
        double experts = 0;      // bytes, all of the stage's experts on this GPU
        double decodeFlops = 0;  // per decode token, on this GPU
        double prefillFlops = 0; // per prefill token, on this GPU
    };
    std::vector<Stage> m_stages;
    double m_memBw = 0, m_kvBw = 0, m_flops = 0; // bytes/s, bytes/s, FLOP/s (with the etas)
    int m_experts = 0, m_topK = 0, m_routedScale = 1;
    double m_fixedMs = 0;
    bool m_valid = false;
    mutable std::vector<double> m_touched; // [tokens]: the fraction touched; < 0 = not yet
};

// The peak tensor-core rate the weights' dtype runs at on the GPU, TFLOP/s (FP8 weights use
// the FP8 rate where the GPU has one).
double peakTflops(const Scenario& s);

// Speed vs concurrency at the scenario's context, up to what memory and max_num_seqs allow
// (both returned), and per-user speed vs context at a fixed concurrency.
struct SpeedCurve {
    std::vector<std::int64_t> x; // batch (concurrency) or context
    std::vector<double> clusterTokensPerSecond;
    std::vector<double> tokensPerSecondPerUser;
    std::vector<double> stepMs;
    std::int64_t memoryLimit = 0; // requests that fit per replica
    std::int64_t maxNumSeqs = 0;  // vLLM's cap per replica
};
SpeedCurve speedVsConcurrency(const Scenario& s, const SpeedAssumptions& a = {}, int points = 48);
SpeedCurve speedVsContext(const Scenario& s, std::int64_t batch, const SpeedAssumptions& a = {},
                          int pointsPerOctave = 4);

} // namespace kvl::core
