#include "ledger_json.h"

#include "core/engine.h"
#include "core/llamacpp/llamacpp.h"
#include "core/saturating.h"
#include "core/sglang/sglang.h"
#include "core/speed.h"
#include "core/trtllm/trtllm.h"
#include "core/vllm_command.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace kvl::io {

namespace {

using Json = nlohmann::ordered_json; // keeps the keys in the order written

// vLLM prints the concurrency with two decimals; JSON carries the same rounding.
double round2(double v) {
    return std::round(v * 100.0) / 100.0;
}

// Saturated arithmetic (core/saturating.h) stops at INT64_MAX, which means "more than 8 EiB",
// never a figure: each such value goes out as null and its path (e.g. "target_kv_bytes",
// "ladder[2].kv_bytes_per_request") in the document's "saturated" list.
void markSaturated(Json& j, const std::string& path, Json& list) {
    if (j.is_number_integer() && !j.is_number_unsigned() &&
        j.get<std::int64_t>() == core::kSaturated) {
        list.push_back(path);
        j = nullptr;
        return;
    }
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it)
            markSaturated(it.value(), path.empty() ? it.key() : path + "." + it.key(), list);
    } else if (j.is_array()) {
        for (std::size_t i = 0; i < j.size(); ++i)
            markSaturated(j[i], path + "[" + std::to_string(i) + "]", list);
    }
}

void putSaturated(Json& o) {
    Json list = Json::array();
    markSaturated(o, "", list);
    o["saturated"] = std::move(list);
}

Json layoutJson(const core::Layout& l) {
    return {{"tp", l.tp},
            {"pp", l.pp},
            {"dp", l.dp},
            {"ep", l.ep},
            {"dcp", l.dcp},
            {"gpus", l.gpus()},
            {"label", core::layoutLabel(l)}};
}

// vLLM v1's accounting: the layer mix, the KV cache groups over one pool, the log line.
void addV1Json(Json& o, const core::Scenario& s, const core::LedgerResult& r) {
    const auto& m = r.layerMix;
    o["layer_mix"] = {{"full", m.full}, {"sliding", m.sliding}, {"chunked", m.chunked},
                      {"mla", m.mla},   {"state", m.state},     {"none", m.none}};
    Json groups = Json::array();
    for (const auto& g : r.kvCacheGroups) {
        Json go = {{"kind", std::string(core::specTypeName(g.type))},
                   {"layers", g.layers},
                   {"padding_slots", g.paddingSlots},
                   {"uniform_type", g.uniformType},
                   {"block_size", g.blockSize},
                   {"page_bytes", g.pageBytes},
                   {"real_page_bytes", g.realPageBytes},
                   {"admission_blocks", g.admissionBlocks},
                   {"blocks_at_context", g.blocksAtContext},
                   {"shared_blocks_at_context", g.sharedBlocksAtContext}};
        if (g.window > 0)
            go["window"] = g.window;
        groups.push_back(std::move(go));
    }
    o["kv_cache_groups"] = std::move(groups);
    o["bytes_per_block"] = r.bytesPerBlock;
    o["blocks_per_request"] = r.blocksPerRequest;
    o["blocks_per_request_at_context"] = r.blocksPerRequestAtContext;
    o["gpu_kv_cache_tokens_legacy"] = r.gpuKvCacheTokensLegacy;
    o["estimated_max_model_len"] = r.estimatedMaxModelLen;
    o["state_bytes_per_request"] = r.stateBytesPerRequest;
    o["padding_bytes_per_request"] = r.paddingBytesPerRequest;
    o["in_flight_tokens"] = r.inFlightTokens;
    o["hybrid_kv_cache_manager_disabled"] = r.hybridKvCacheManagerDisabled;
    o["capacity_log_line"] = r.capacityLogLine;
    o["vllm_version"] = r.vllmVersion;
    o["vllm_log_lines"] = r.vllmLogLines;
    o["attention_backend"] = r.blockSize > 0 ? core::resolveBlockSizes(s).backend : std::string();
    o["layout"] = layoutJson(core::layoutOf(s));
    o["max_num_seqs"] = core::effectiveMaxNumSeqs(s);
    o["max_num_batched_tokens"] = core::effectiveMaxNumBatchedTokens(s);
    o["max_running_requests"] = std::min(r.maxRequestsAtContext, core::effectiveMaxNumSeqs(s));
    o["reserves_estimated"] = r.reservesEstimated;
    Json notes = Json::array();
    for (const auto& n : r.notes)
        notes.push_back(n);
    o["vllm_notes"] = std::move(notes);
}

void addSpeedJson(Json& o, const core::Scenario& s, const core::LedgerResult& r) {
    const core::SpeedAssumptions a;
    if (const auto batch = speedBatch(s, r)) {
        const core::DecodeStep d = core::decodeStep(s, *batch, s.workload.context, a);
        o["concurrency"] = *batch;
        o["decode_step_ms"] = d.stepMs;
        o["tokens_per_s_per_user"] = d.tokensPerSecondPerUser;
        o["cluster_tokens_per_s"] = d.clusterTokensPerSecond;
        o["ttft_ms_estimate"] = core::prefillMsEstimate(s, s.workload.context, a);
        o["regime"] = std::string(core::regimeName(d.regime));
    } else { // no request runs: the same keys, no figure
        o["concurrency"] = 0;
        for (const char* k : {"decode_step_ms", "tokens_per_s_per_user", "cluster_tokens_per_s",
                              "ttft_ms_estimate", "regime"})
            o[k] = nullptr;
    }
    o["speed_assumptions"] = {{"eta_mem", a.memoryEfficiency},
                              {"eta_flops", a.flopsEfficiency},
                              {"fixed_step_ms", a.fixedStepMs},
                              {"bandwidth_gbs", s.hardware.gpu.bandwidthGBs},
                              {"peak_tflops", core::peakTflops(s)}};
}

Json deploymentJson(const core::Deployment& d) {
    Json o = layoutJson(d.layout);
    o["fits"] = d.fits;
    o["requests_per_replica"] = d.requestsPerReplica;
    o["requests_memory_holds"] = d.requestsMemoryHolds;
    o["max_num_seqs"] = d.maxNumSeqs;
    o["capped_by_max_num_seqs"] = d.cappedByMaxNumSeqs;
    o["cluster_requests"] = d.clusterRequests;
    o["kv_bytes_per_gpu"] = d.kvBytesPerGpu;
    o["kv_pool_bytes_per_gpu"] = d.kvPoolBytesPerGpu;
    o["weights_bytes_per_gpu"] = d.weightsBytesPerGpu;
    o["headroom_bytes_per_gpu"] = d.headroomBytesPerGpu;
    o["within_one_node"] = d.withinOneNode;
    o["decode_step_ms"] = d.decodeStepMs;
    o["tokens_per_s_per_user"] = d.tokensPerSecondPerUser;
    o["cluster_tokens_per_s"] = d.clusterTokensPerSecond;
    o["ttft_ms_estimate"] = core::prefillMsEstimate(d.scenario, d.scenario.workload.context);
    o["regime"] = std::string(core::regimeName(
        core::decodeStep(d.scenario, std::max<std::int64_t>(1, d.requestsPerReplica),
                         d.scenario.workload.context)
            .regime));
    o["reason"] = d.reason;
    if (d.sloChecked)
        o["slo"] = {{"meets", d.meetsSlo},
                    {"attainment", d.sloAttainment},
                    {"ttft_p99_ms", d.ttftP99Ms},
                    {"tpot_p99_ms", d.tpotP99Ms},
                    {"note", d.sloNote}};
    // Holds the users but is not one to recommend (too slow per user, too many stages).
    o["flag"] = d.flag.empty() ? Json() : Json(d.flag);
    o["vllm_command"] = core::vllmServeCommand(d.scenario).text();
    return o;
}

} // namespace

// The decode speed at the concurrency asked for (or as many requests as run) and the context.
std::optional<std::int64_t> speedBatch(const core::Scenario& s, const core::LedgerResult& r) {
    if (s.workload.concurrency > 0)
        return s.workload.concurrency;
    if (r.requestsYouCanRun == 0 && !r.error.empty())
        return std::nullopt;
    return std::max<std::int64_t>(1,
                                  std::min(r.maxRequestsAtContext, core::effectiveMaxNumSeqs(s)));
}

Json gpuJson(const core::GpuSpec& g) {
    return {{"id", g.id},
            {"name", g.name},
            {"vendor", g.vendor},
            {"memory_bytes", g.memoryBytes},
            {"bandwidth_gbs", g.bandwidthGBs},
            {"memory_type", g.memoryType},
            {"compute_capability", g.computeCapability},
            {"bf16_tflops", g.bf16Tflops},
            {"fp8_tflops", g.fp8Tflops},
            {"source", g.source}};
}

Json ledgerJson(const core::Scenario& s, const core::LedgerResult& r,
                const std::vector<core::LadderStep>& ladder) {
    Json o = Json::object();
    auto put = [&o](const std::string& k, Json v) { o[k] = std::move(v); };
    put("model", s.model.id);
    put("model_name", s.model.name);
    put("gpu", s.hardware.gpu.id);
    put("gpu_name", s.hardware.gpu.name);
    put("tp", s.hardware.gpuCount);
    put("attention", r.kv.attentionLabel);
    put("kv_heads", r.kv.kvHeads);
    put("kv_heads_per_gpu", r.kv.kvHeadsPerGpu);
    put("kv_dtype", std::string(core::dtypeName(r.kv.format.dtype)));
    put("kv_format", core::formatLabel(r.kv.format));
    put("block_size", r.blockSize);
    put("paging", r.blockSize > 0);
    put("prefix_tokens", s.levers.prefix.enabled ? s.levers.prefix.sharedTokens : std::int64_t{0});
    put("prefix_requests", s.levers.prefix.sharingRequests);
    put("context", r.contextTokens);
    put("max_model_len", r.maxModelLen);
    put("kv_bytes_per_token", r.kvBytesPerToken);
    put("kv_bytes_per_token_per_gpu", r.kvBytesPerTokenPerGpu);
    put("page_bytes_per_gpu", r.pageBytesPerGpu);
    put("kv_bytes_per_request", r.kvBytesPerRequest);
    put("kv_bytes_per_request_per_gpu", r.kvBytesPerRequestPerGpu);
    put("shared_bytes_per_request_per_gpu", r.sharedBytesPerRequestPerGpu);
    put("weights_bytes", r.weightsBytes);
    put("weights_bytes_per_gpu", r.weightsBytesPerGpu);
    put("gpu_memory_bytes", r.gpuMemoryBytes);
    put("requested_bytes", r.requestedBytes);
    put("activation_bytes", r.activationBytes);
    put("overhead_bytes", r.overheadBytes);
    put("cuda_graph_bytes", r.cudaGraphBytes);
    put("available_kv_bytes", r.availableKvBytes);
    put("kv_memory_overridden", r.kvMemoryOverridden);
    put("num_gpu_blocks", r.numGpuBlocks);
    put("gpu_kv_cache_tokens", r.gpuKvCacheTokens);
    put("max_concurrency", round2(r.maxConcurrency));
    put("max_requests_at_context", r.maxRequestsAtContext);
    put("requests_you_can_run", r.requestsYouCanRun);
    Json groups = Json::array();
    for (const auto& g : r.groups) {
        Json go = Json::object();
        go["kind"] = std::string(core::layerKindName(g.kind));
        if (g.kind == core::LayerKind::Sliding)
            go["window"] = g.window;
        go["layers"] = g.layers;
        go["bytes_per_token_per_layer_per_gpu"] = g.bytesPerTokenPerLayerPerGpu;
        go["blocks_per_request"] = g.blocksPerRequest;
        go["tokens_held_per_request"] = g.tokensHeldPerRequest;
        groups.emplace_back(std::move(go));
    }
    put("layer_groups", std::move(groups));
    addV1Json(o, s, r);
    addSpeedJson(o, s, r);
    if (s.workload.targetRequests > 0) {
        const auto need = core::computeGpusNeeded(s, s.workload.targetRequests);
        put("target_requests", s.workload.targetRequests);
        put("gpus_needed", need.gpus);
        put("gpus_needed_layout", need.gpus > 0 ? Json(layoutJson(need.layout)) : Json());
        put("gpus_needed_pooled", need.pooledGpus);
        put("gpus_needed_note", need.note);
        put("gpus_needed_tensor_parallel", need.tensorParallel);
        put("gpus_needed_flag", need.flag.empty() ? Json() : Json(need.flag));
        put("gpus_needed_recommended_layout",
            need.recommended ? Json(layoutJson(*need.recommended)) : Json());
        put("target_weights_bytes", need.weightsBytes);
        put("target_kv_bytes", need.kvBytes);
        put("target_total_bytes", need.totalBytes);
    }
    Json steps = Json::array();
    for (const auto& st : ladder) {
        Json so = Json::object();
        so["label"] = st.label;
        so["applied"] = st.applied;
        so["kv_bytes_per_token"] = st.result.kvBytesPerToken;
        so["kv_bytes_per_request"] = st.result.kvBytesPerRequest;
        so["kv_bytes_per_request_per_gpu"] = st.result.kvBytesPerRequestPerGpu;
        so["max_requests_at_context"] = st.result.maxRequestsAtContext;
        so["max_concurrency"] = round2(st.result.maxConcurrency);
        steps.emplace_back(std::move(so));
    }
    put("ladder", std::move(steps));
    Json warnings = Json::array();
    for (const auto& w : r.warnings)
        warnings.emplace_back(w);
    put("warnings", std::move(warnings));
    put("error", r.error.empty() ? Json() : Json(r.error));
    put("vllm_refused", r.refused);
    put("vllm_command", core::vllmServeCommand(s).text());
    putSaturated(o);
    return o;
}

Json planJson(const core::PlanRequest& req, const core::PlanResult& plan) {
    Json plans = Json::array();
    for (const core::GpuPlan* g : plan.bestFirst()) {
        Json o = g->fits ? deploymentJson(g->layouts.front()) : Json::object();
        o["gpu"] = g->gpu.id;
        o["gpu_name"] = g->gpu.name;
        o["fits"] = g->fits;
        if (!g->fits) {
            // No layout holds the users: no GPU count to give (null, never a fake 0), the
            // binding constraint in the reason, and the nearest layout that holds some.
            o["gpus"] = nullptr;
            o["reason"] = g->reason;
            o["memory_needed_bytes_per_gpu"] =
                g->memoryNeededBytes > 0 ? Json(g->memoryNeededBytes) : Json();
            if (g->nearestUsers > 0) {
                Json n = layoutJson(g->nearestLayout);
                n["users"] = g->nearestUsers;
                n["requests_per_replica"] = g->nearestPerReplica;
                o["nearest"] = std::move(n);
            } else {
                o["nearest"] = nullptr;
            }
        }
        Json alternatives = Json::array();
        for (std::size_t i = 1; i < g->layouts.size(); ++i)
            alternatives.push_back(deploymentJson(g->layouts[i]));
        o["alternatives"] = std::move(alternatives);
        plans.push_back(std::move(o));
    }
    Json o = {{"model", req.base.model.id},
              {"users", req.users},
              {"context", req.context},
              {"kv_dtype", core::vllmCacheDtype(req.base).value_or(
                               core::shortLabel(core::storedKvFormat(req.base)))},
              {"max_gpus", req.maxGpus},
              {"min_tokens_per_s_per_user", req.minTokensPerSecondPerUser},
              {"recommended_gpu", plan.recommended() ? Json(plan.recommended()->gpu.id) : Json()},
              {"plans", std::move(plans)}};
    putSaturated(o);
    return o;
}

Json engineJson(const core::Scenario& s, const core::EngineResult& r) {
    Json o;
    o["engine"] = std::string(core::engineName(r.engine));
    o["engine_version"] = r.version;
    o["model"] = s.model.id;
    o["gpu"] = s.hardware.gpu.id;
    o["tp"] = s.hardware.gpuCount;
    o["context"] = s.workload.context;
    o["kv_pool_bytes_per_gpu"] = r.kvPoolBytesPerGpu;
    o["pool_tokens"] = r.poolTokens;
    o["kv_bytes_per_token_per_gpu"] = r.kvBytesPerTokenPerGpu;
    o["requests_at_context"] = r.requestsAtContext;
    o["log_lines"] = r.logLines;
    o["command"] = r.command;
    o["notes"] = r.notes;
    o["error"] = r.error;
    Json d;
    switch (r.engine) {
    case core::Engine::Llamacpp: {
        const auto l = core::llamacpp::compute(s);
        d["n_ctx"] = l.nCtx;
        d["n_ctx_seq"] = l.nCtxSeq;
        d["n_seq_max"] = l.nSeqMax;
        d["kv_unified"] = l.unified;
        Json caches = Json::array();
        for (const auto& c : l.caches)
            caches.push_back({{"kind", c.kind == core::llamacpp::Cache::Kind::Kv    ? "kv"
                                       : c.kind == core::llamacpp::Cache::Kind::Swa ? "swa"
                                                                                    : "recurrent"},
                              {"cells", c.cells},
                              {"layers", c.layers},
                              {"streams", c.streams},
                              {"type_k", c.typeK},
                              {"type_v", c.typeV},
                              {"k_bytes", c.kBytes},
                              {"v_bytes", c.vBytes}});
        d["caches"] = caches;
        d["total_bytes"] = l.totalBytes;
        break;
    }
    case core::Engine::Sglang: {
        const auto g = core::sglang::compute(s);
        d["mem_fraction_static"] = g.memFractionStatic;
        d["mem_fraction_default"] = g.memFractionDefault;
        d["reserved_mib"] = g.reservedMiB;
        d["gpu_mem_mib"] = g.gpuMemMiB;
        d["chunked_prefill_size"] = g.chunkedPrefillSize;
        d["cuda_graph_max_bs"] = g.cudaGraphMaxBs;
        d["free_before_load_gib"] = g.freeBeforeGiB;
        d["free_after_load_gib"] = g.freeAfterGiB;
        d["rest_gib"] = g.restGiB;
        d["cell_size"] = g.cellSize;
        d["profiled_tokens"] = g.profiledTokens;
        d["max_total_num_tokens"] = g.maxTotalNumTokens;
        d["swa_tokens"] = g.swaTokens;
        d["mamba_cache_size"] = g.mambaCacheSize;
        d["max_running_requests"] = g.maxRunningRequests;
        d["context_len"] = g.contextLen;
        d["k_bytes"] = g.kBytes;
        d["v_bytes"] = g.vBytes;
        break;
    }
    case core::Engine::Trtllm: {
        const auto t = core::trtllm::compute(s);
        d["kv_size_per_token"] = t.kvSizePerToken;
        d["kv_dtype"] = t.kvDtype;
        d["total_bytes"] = t.totalBytes;
        d["peak_bytes"] = t.peakBytes;
        d["peak_estimated"] = t.peakEstimated;
        d["free_gpu_memory_fraction"] = t.fraction;
        d["available_bytes"] = t.availableBytes;
        d["max_tokens"] = t.maxTokens;
        d["blocks"] = t.blocks;
        d["pool_tokens"] = t.poolTokens;
        d["pool_bytes"] = t.poolBytes;
        break;
    }
    case core::Engine::Vllm:
        break;
    }
    o["detail"] = d;
    return o;
}

Json enginePlanJson(const core::Scenario& base, std::int64_t users,
                    const std::vector<core::EnginePlanRow>& rows) {
    Json o;
    o["engine"] = std::string(core::engineName(base.engine.kind));
    o["model"] = base.model.id;
    o["users"] = users;
    o["context"] = base.workload.context;
    Json a = Json::array();
    for (const auto& r : rows)
        a.push_back({{"gpu", r.gpu.id},
                     {"fits", r.gpus > 0},
                     {"gpus", r.gpus},
                     {"gpus_per_replica", r.gpusPerReplica},
                     {"replicas", r.replicas},
                     {"requests_per_replica", r.requestsPerReplica},
                     {"why_not", r.why}});
    o["plans"] = a;
    return o;
}

} // namespace kvl::io
