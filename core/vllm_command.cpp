#include "vllm_command.h"

#include "engine.h"
#include "kv_format.h"

#include <cmath>
#include <cstdio>

namespace kvl::core {

namespace {

std::string num(std::int64_t v) {
    return std::to_string(v);
}

std::string shortNumber(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

void flag(VllmServeCommand& c, const std::string& name, const std::string& value = {}) {
    c.args.push_back(name);
    if (!value.empty())
        c.args.push_back(value);
}

void weights(VllmServeCommand& c, const Scenario& s) {
    if (!s.hardware.weightDtype || *s.hardware.weightDtype == s.model.weightDtype)
        return;
    switch (*s.hardware.weightDtype) {
    case WeightDtype::Fp32:
        flag(c, "--dtype", "float32");
        break;
    case WeightDtype::Fp16:
        flag(c, "--dtype", "float16");
        break;
    case WeightDtype::Bf16:
        flag(c, "--dtype", "bfloat16");
        break;
    case WeightDtype::Fp8:
        flag(c, "--quantization", "fp8"); // vLLM quantizes the weights to FP8 on load
        break;
    case WeightDtype::Int8:
    case WeightDtype::Int4:
    case WeightDtype::Fp4:
        c.notes.push_back(std::string(weightDtypeName(*s.hardware.weightDtype)) +
                          " weights: serve a pre-quantized checkpoint (GPTQ, AWQ, "
                          "compressed-tensors, NVFP4) instead of this model id");
        break;
    }
}

} // namespace

std::string huggingFaceRepo(const ModelSpec& model) {
    if (!model.hfRepo.empty())
        return model.hfRepo;
    return model.id.empty() ? std::string("MODEL") : model.id;
}

VllmServeCommand vllmServeCommand(const Scenario& s) {
    VllmServeCommand c;
    c.args = {"vllm", "serve", huggingFaceRepo(s.model)};
    const Levers& lv = s.levers;

    if (const auto dtype = vllmCacheDtype(s)) {
        flag(c, "--kv-cache-dtype", *dtype);
    } else {
        flag(c, "--kv-cache-dtype", "auto");
        c.notes.push_back(formatLabel(lv.quant.format) +
                          " KV cache (vLLM stores the model dtype, fp8, per-token-head int8 / "
                          "fp8 / int4 or nvfp4)");
    }
    if (lv.paging.enabled) {
        // The block size only when the user chose it and a backend takes it; otherwise vLLM
        // picks the one the ledger uses.
        const BlockSizes bs = resolveBlockSizes(s);
        if (lv.paging.blockSize > 0 && bs.error.empty())
            flag(c, "--block-size", num(lv.paging.blockSize));
        else if (!bs.error.empty())
            c.notes.push_back(bs.error);
    } else {
        c.notes.push_back("contiguous reservation (vLLM always pages the KV cache)");
    }
    // Prefix caching is vLLM's default; the lever says whether the requests share a prefix.
    flag(c, "--enable-prefix-caching");
    if (lv.prefix.enabled && lv.prefix.sharingRequests > 0)
        c.notes.push_back("sharing by exactly " + num(lv.prefix.sharingRequests) +
                          " requests: vLLM's prefix cache shares with every request that has "
                          "the prefix");
    if (lv.attention.enabled && lv.attention.mode != AttentionMode::Native)
        c.notes.push_back("attention regrouping (" +
                          std::string(lv.attention.mode == AttentionMode::Mha ? "MHA"
                                      : lv.attention.mode == AttentionMode::Mqa
                                          ? "MQA"
                                          : "GQA-" + num(lv.attention.gqaKvHeads)) +
                          ") needs a checkpoint converted or trained with those KV heads");

    const Hardware& h = s.hardware;
    if (h.kvMemoryBytes)
        flag(c, "--kv-cache-memory-bytes", num(*h.kvMemoryBytes));
    else
        flag(c, "--gpu-memory-utilization", shortNumber(gpuMemoryUtilization(s)));
    const std::int64_t maxModelLen = s.effectiveMaxModelLen();
    flag(c, "--max-model-len", num(maxModelLen));
    if (maxModelLen > s.model.maxContext && s.model.maxContext > 0) {
        // Past the derived length vLLM needs RoPE scaling (YaRN, as model cards recommend for
        // long context) or VLLM_ALLOW_LONG_MAX_MODEL_LEN (vllm/config/model.py).
        const double factor = std::ceil(10.0 * static_cast<double>(maxModelLen) /
                                        static_cast<double>(s.model.maxContext)) /
                              10.0;
        flag(c, "--hf-overrides",
             "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": " + shortNumber(factor) +
                 ", \"original_max_position_embeddings\": " + num(s.model.maxContext) + "}}");
        c.notes.push_back("RoPE scaling beyond the model's " + num(s.model.maxContext) +
                          " tokens can lower quality; check the model card");
    }
    if (s.workload.maxNumBatchedTokens > 0)
        flag(c, "--max-num-batched-tokens", num(s.workload.maxNumBatchedTokens));
    if (s.engine.maxNumSeqs > 0)
        flag(c, "--max-num-seqs", num(s.engine.maxNumSeqs));
    flag(c, "--tensor-parallel-size", num(h.gpuCount));
    if (h.pipelineParallel > 1)
        flag(c, "--pipeline-parallel-size", num(h.pipelineParallel));
    if (h.dataParallel > 1)
        flag(c, "--data-parallel-size", num(h.dataParallel));
    if (h.expertParallel)
        flag(c, "--enable-expert-parallel");
    if (h.decodeContextParallel > 1)
        flag(c, "--decode-context-parallel-size", num(h.decodeContextParallel));
    if (s.engine.disableHybridKvCacheManager)
        flag(c, "--disable-hybrid-kv-cache-manager");
    if (s.engine.allowChunkedLocalHybrid && s.model.countLayers(LayerKind::Chunked) > 0)
        c.env.push_back("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1");
    if (!s.engine.asyncScheduling)
        flag(c, "--no-async-scheduling");
    if (s.model.countLayers(LayerKind::State) > 0) {
        if (s.engine.mambaCacheMode != MambaCacheMode::Auto)
            flag(c, "--mamba-cache-mode", std::string(mambaCacheModeName(s.engine.mambaCacheMode)));
        if (s.engine.mambaSsmCacheDtype)
            flag(c, "--mamba-ssm-cache-dtype",
                 *s.engine.mambaSsmCacheDtype == KvDtype::Fp32   ? "float32"
                 : *s.engine.mambaSsmCacheDtype == KvDtype::Bf16 ? "bfloat16"
                                                                 : "float16");
    }
    weights(c, s);
    if (s.workload.context > maxModelLen)
        c.notes.push_back("context " + num(s.workload.context) + " exceeds --max-model-len " +
                          num(maxModelLen) + ": vLLM rejects such requests");
    return c;
}

std::string VllmServeCommand::text() const {
    std::string out;
    for (const auto& e : env)
        out += e + " ";
    // "vllm serve MODEL \" then one flag (with its value) per line.
    out += args.size() >= 3 ? args[0] + " " + args[1] + " " + args[2] : std::string();
    for (std::size_t i = 3; i < args.size(); ++i) {
        out += " \\\n  " + args[i];
        if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
            const std::string& v = args[++i];
            out += " " + (v.find_first_of(" {\"") != std::string::npos ? "'" + v + "'" : v);
        }
    }
    out += "\n";
    for (const auto& n : notes)
        out += "# not in vLLM: " + n + "\n";
    return out;
}

} // namespace kvl::core
