#include "llamacpp.h"

#include "ggml_types.h"

#include "core/saturating.h"

#include <algorithm>
#include <cstdio>

namespace kvl::core::llamacpp {

namespace {

std::int64_t pad256(std::int64_t n) {
    return ceilDiv(n, 256) * 256; // GGML_PAD(n, 256)
}

// hparams.n_embd_r() / n_embd_s() (src/llama-hparams.cpp): the conv rows a recurrent layer keeps
// per sequence, and the SSM state. Mamba-2 and the gated delta nets (Qwen3-Next) convolve the
// inner width plus B and C of every group; Mamba-1 the inner width alone.
std::int64_t convValues(const StateSpec& st) {
    const std::int64_t k = std::max(0, st.convKernel - 1);
    switch (st.kind) {
    case StateKind::Mamba1:
        return k * st.intermediateSize;
    case StateKind::Mamba2:
        return k * (st.intermediateSize + 2 * std::int64_t(st.nGroups) * st.stateSize);
    case StateKind::GatedDeltaNet:
        return k * (std::int64_t(st.numValueHeads) * st.valueHeadDim +
                    2 * std::int64_t(st.numKeyHeads) * st.keyHeadDim);
    case StateKind::ShortConv:
        return k * st.intermediateSize;
    }
    return 0;
}

std::int64_t stateValues(const StateSpec& st) {
    switch (st.kind) {
    case StateKind::Mamba1:
    case StateKind::Mamba2:
        return std::int64_t(st.stateSize) * st.intermediateSize;
    case StateKind::GatedDeltaNet:
        return std::int64_t(st.numValueHeads) * st.valueHeadDim * st.keyHeadDim;
    case StateKind::ShortConv:
        return 0;
    }
    return 0;
}

std::string typeFlagName(GgmlKvType t) {
    return std::string(ggmlKvTypeName(t));
}

} // namespace

std::string formatMiB(std::int64_t bytes, int width) {
    // The float division llama.cpp does before printing: %7.2f of a float, not of the double.
    const float mib = static_cast<float>(bytes) / (1024.0f * 1024.0f);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%*.2f", width, static_cast<double>(mib));
    return buf;
}

std::string formatCacheLine(const Cache& c, int modelLayers) {
    char buf[512];
    if (c.kind == Cache::Kind::Recurrent) {
        // llama_memory_recurrent's constructor: it prints the model's layer count.
        std::snprintf(buf, sizeof buf,
                      "llama_memory_recurrent: size = %s MiB (%6lld cells, %3d layers, %2d seqs), "
                      "R (%s): %s MiB, S (%s): %s MiB",
                      formatMiB(c.kBytes + c.vBytes).c_str(), static_cast<long long>(c.cells),
                      modelLayers, c.seqs, c.typeK.c_str(), formatMiB(c.kBytes).c_str(),
                      c.typeV.c_str(), formatMiB(c.vBytes).c_str());
        return buf;
    }
    // llama_kv_cache's constructor (src/llama-kv-cache.cpp): "%2u/%u seqs" is n_seq_max over
    // the streams.
    std::snprintf(buf, sizeof buf,
                  "llama_kv_cache: size = %s MiB (%6lld cells, %3d layers, %2d/%d seqs), K (%s): "
                  "%s MiB, V (%s): %s MiB",
                  formatMiB(c.kBytes + c.vBytes).c_str(), static_cast<long long>(c.cells), c.layers,
                  c.seqs, c.streams, c.typeK.c_str(), formatMiB(c.kBytes).c_str(), c.typeV.c_str(),
                  formatMiB(c.vBytes).c_str());
    return buf;
}

namespace {

// The caches llama.cpp creates, in its order, each with the line it logs: the non-SWA and
// SWA caches of an iSWA model or the one KV cache, then the recurrent memory.
void addCaches(Result& r, const ModelSpec& m, const Cache& base, const Cache& swa, bool hasSwa,
               int stateLayers) {
    const bool hasAttention = base.layers > 0 || swa.layers > 0;
    if (hasSwa) {
        r.logLines.push_back("llama_kv_cache_iswa: creating non-SWA KV cache, size = " +
                             std::to_string(base.cells) + " cells");
        r.caches.push_back(base);
        r.logLines.push_back(formatCacheLine(base, m.numLayers()));
        r.logLines.push_back("llama_kv_cache_iswa: creating     SWA KV cache, size = " +
                             std::to_string(swa.cells) + " cells");
        r.caches.push_back(swa);
        r.logLines.push_back(formatCacheLine(swa, m.numLayers()));
    } else if (hasAttention) {
        r.caches.push_back(base);
        r.logLines.push_back(formatCacheLine(base, m.numLayers()));
    }
    if (stateLayers > 0 && m.state) {
        // llama_model::create_memory gives recurrent memory f32 R and S rows (type_r, type_s),
        // one cell per sequence.
        Cache rec{Cache::Kind::Recurrent, r.nSeqMax, stateLayers, r.nSeqMax, 1, "f32", "f32", 0, 0};
        rec.kBytes = satMul(satMul(convValues(*m.state) * 4, r.nSeqMax), stateLayers);
        rec.vBytes = satMul(satMul(stateValues(*m.state) * 4, r.nSeqMax), stateLayers);
        r.caches.push_back(rec);
        r.logLines.push_back(formatCacheLine(rec, m.numLayers()));
    }
}

// The llama-server command line for these options.
std::string serverCommand(const LlamaCppOptions& o, const ModelSpec& m, int nSeqMax,
                          const GgmlTypeInfo& tv) {
    // llama-server's flags (tools/server/README.md): quantized V needs flash attention.
    std::string cmd = "llama-server -m " + (m.id.empty() ? std::string("model") : m.id) +
                      ".gguf -c " + std::to_string(o.nCtx > 0 ? o.nCtx : 0) + " -np " +
                      std::to_string(nSeqMax);
    if (o.kvUnified)
        cmd += " --kv-unified";
    if (o.typeK != GgmlKvType::F16)
        cmd += " -ctk " + typeFlagName(o.typeK);
    if (o.typeV != GgmlKvType::F16)
        cmd += " -ctv " + typeFlagName(o.typeV);
    if (tv.blockSize > 1)
        cmd += " -fa on";
    if (o.swaFull)
        cmd += " --swa-full";
    if (o.nUbatch != 512)
        cmd += " -ub " + std::to_string(o.nUbatch);
    cmd += " -ngl 999";
    return cmd;
}

} // namespace

Result compute(const Scenario& s) {
    Result r;
    const auto& o = s.engine.llamacpp;
    const auto& m = s.model;
    const GgmlTypeInfo& tk = ggmlKvType(o.typeK);
    const GgmlTypeInfo& tv = ggmlKvType(o.typeV);

    // llama_context: n_ctx (0 = the model's), padded to 256; per-sequence streams unless unified.
    r.nSeqMax = std::max(1, o.nParallel);
    r.unified = o.kvUnified;
    r.nCtx = pad256(o.nCtx > 0 ? o.nCtx : m.maxContext);
    if (r.unified) {
        r.nCtxSeq = r.nCtx;
    } else {
        r.nCtxSeq = pad256(r.nCtx / r.nSeqMax);
        r.nCtx = r.nCtxSeq * r.nSeqMax;
    }
    const int streams = r.unified ? 1 : r.nSeqMax;
    const std::int64_t kvSize = r.unified ? r.nCtx : r.nCtxSeq;

    // Quantized types store whole blocks: a row that is not a whole number of blocks is refused
    // by ggml (the KV cache asserts it), so it is by the ledger.
    Cache base{Cache::Kind::Kv,      kvSize, 0, r.nSeqMax, streams, std::string(tk.name),
               std::string(tv.name), 0,      0};
    Cache swa = base;
    swa.kind = Cache::Kind::Swa;
    // llama.cpp PR 21277 (April 2026): the SWA cache of an iSWA model is not quantized; it
    // stays f16 whatever -ctk / -ctv ask ("it is relatively small").
    const GgmlTypeInfo& f16 = ggmlKvType(GgmlKvType::F16);
    const GgmlTypeInfo& swaK = tk.blockSize > 1 ? f16 : tk;
    const GgmlTypeInfo& swaV = tv.blockSize > 1 ? f16 : tv;
    swa.typeK = std::string(swaK.name);
    swa.typeV = std::string(swaV.name);
    std::int64_t window = 0;
    bool hasSwa = false;
    int stateLayers = 0;
    for (const auto& l : m.layers) {
        if (l.kind == LayerKind::None || l.kvShared)
            continue; // no KV of its own (hparams.has_kv is false)
        if (l.kind == LayerKind::State) {
            ++stateLayers;
            continue;
        }
        std::int64_t kValues = 0, vValues = 0;
        if (l.kind == LayerKind::Mla) {
            kValues = m.mlaLatentDim(); // one latent + RoPE row, V read from it
        } else {
            kValues = std::int64_t(m.layerHeadDim(l)) * m.layerKvHeads(l);
            vValues = std::int64_t(m.layerHeadDimV(l)) * m.layerKvHeads(l);
        }
        if (kValues % tk.blockSize != 0 || vValues % tv.blockSize != 0) {
            r.error = "llama.cpp: a KV row of " + std::to_string(kValues) +
                      " values is not a whole number of " + std::string(tk.name) + "/" +
                      std::string(tv.name) + " blocks";
            return r;
        }
        const bool sliding = l.kind == LayerKind::Sliding || l.kind == LayerKind::Chunked;
        Cache& c = sliding ? swa : base;
        if (sliding) {
            hasSwa = true;
            window = l.window;
        }
        ++c.layers;
        c.kBytes = satAdd(c.kBytes, rowBytes(sliding ? swaK : tk, kValues));
        c.vBytes = satAdd(c.vBytes, rowBytes(sliding ? swaV : tv, vValues));
    }
    if (hasSwa) {
        const std::int64_t swaCells =
            o.swaFull ? kvSize
                      : pad256(std::min(kvSize, window * (r.unified ? r.nSeqMax : 1) +
                                                    std::max(1, o.nUbatch)));
        swa.cells = swaCells;
    }
    // Bytes per token of one stream, then the cells and streams.
    r.bytesPerToken = satAdd(base.kBytes, base.vBytes);
    for (Cache* c : {&base, &swa}) {
        c->kBytes = satMul(satMul(c->kBytes, c->cells), streams);
        c->vBytes = satMul(satMul(c->vBytes, c->cells), streams);
    }

    addCaches(r, m, base, swa, hasSwa, stateLayers);
    for (const auto& c : r.caches)
        r.totalBytes = satAdd(r.totalBytes, satAdd(c.kBytes, c.vBytes));

    r.command = serverCommand(o, m, r.nSeqMax, tv);
    return r;
}

} // namespace kvl::core::llamacpp
