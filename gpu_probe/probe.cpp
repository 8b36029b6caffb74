#include "gpu_probe/probe.h"

#include "core/io/model_table.h"
#include "core/ledger.h"
#include "gpu_probe/backend.h"
#include "gpu_probe/block_manager.h"
#include "gpu_probe/npy.h"
#include "gpu_probe/ops.h"
#include "gpu_probe/reference.h"
#include "gpu_probe/synth.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <new>
#include <random>

namespace kvl::probe {

using core::Granularity;
using core::KvDtype;
using core::KvFormat;

namespace {

ProbeFormat make(std::string id, KvFormat f) {
    std::string label = core::shortLabel(f);
    if (f.granularity == Granularity::PerHead)
        label += " per-head";
    return ProbeFormat{std::move(id), std::move(label), f};
}

KvFormat withGranularity(KvDtype d, Granularity g, int group = 0) {
    KvFormat f = KvFormat::defaultFor(d);
    f.granularity = g;
    if (group)
        f.groupSize = group;
    return f;
}

KvFormat kivi(KvDtype d) {
    KvFormat f = KvFormat::defaultFor(KvDtype::Int2); // KIVI: fp16 scale + zero, G = 32
    f.dtype = d;
    return f;
}

double codecMaxOf(const SideLayout& s) {
    switch (s.codec) {
    case kCodecE4M3:
        return kE4m3Max;
    case kCodecE5M2:
        return kE5m2Max;
    case kCodecIntSym:
    case kCodecIntAsym:
        return double(intQmax(s.bits, s.codec));
    default:
        return 1.0;
    }
}

std::int64_t roundUp(std::int64_t v, std::int64_t g) {
    return g > 0 ? (v + g - 1) / g * g : v;
}

} // namespace

std::vector<ProbeFormat> allProbeFormats() {
    return {
        make("fp16", KvFormat::defaultFor(KvDtype::Fp16)),
        make("bf16", KvFormat::defaultFor(KvDtype::Bf16)),
        make("fp32", KvFormat::defaultFor(KvDtype::Fp32)),
        make("fp8_e4m3", KvFormat::defaultFor(KvDtype::Fp8E4M3)),
        make("fp8_e4m3-per-head", withGranularity(KvDtype::Fp8E4M3, Granularity::PerHead)),
        make("fp8_e5m2", KvFormat::defaultFor(KvDtype::Fp8E5M2)),
        make("fp8_e5m2-per-head", withGranularity(KvDtype::Fp8E5M2, Granularity::PerHead)),
        make("int8", KvFormat::defaultFor(KvDtype::Int8)),
        make("int4-g32", withGranularity(KvDtype::Int4, Granularity::PerGroup, 32)),
        make("int4-g64", withGranularity(KvDtype::Int4, Granularity::PerGroup, 64)),
        make("int4-g128", KvFormat::defaultFor(KvDtype::Int4)),
        make("int4-kivi", kivi(KvDtype::Int4)),
        make("int2-kivi", kivi(KvDtype::Int2)),
    };
}

std::variant<ProbeFormat, std::string> parseProbeFormat(const std::string& spec) {
    std::string s;
    for (char c : spec)
        s += char(std::tolower(static_cast<unsigned char>(c)));
    if (s == "fp8")
        s = "fp8_e4m3";
    else if (s == "fp8-per-head")
        s = "fp8_e4m3-per-head";
    else if (s == "int4")
        s = "int4-g128";
    else if (s == "int2")
        s = "int2-kivi";
    else if (s == "float16" || s == "half")
        s = "fp16";
    else if (s == "bfloat16")
        s = "bf16";
    std::string known;
    for (auto& f : allProbeFormats()) {
        if (f.id == s)
            return f;
        known += (known.empty() ? "" : ", ") + f.id;
    }
    return "unknown KV format '" + spec + "' (known: " + known + "; aliases fp8, int4, int2)";
}

core::ModelSpec defaultModel() {
    if (const core::ModelSpec* m = io::findTableModel("llama-3-8b"))
        return *m;
    core::ModelSpec m; // REFERENCE.md 3: Llama-3-8B
    m.id = "llama-3-8b";
    m.name = "Llama-3-8B";
    m.family = "Llama 3";
    m.layers.assign(32, core::LayerSpec{});
    m.qHeads = 32;
    m.kvHeads = 8;
    m.headDim = 128;
    m.params = 8'030'261'248;
    m.maxContext = 8192;
    m.hiddenSize = 4096;
    return m;
}

std::variant<std::int64_t, std::string> predictedPoolBytes(const core::ModelSpec& model,
                                                           const KvFormat& format, int blockSize,
                                                           int batch, std::int64_t context,
                                                           std::int64_t prefixTokens) {
    core::Scenario s;
    s.model = core::withLayerCount(model, 1);
    s.model.layers[0] = core::LayerSpec{}; // the probe runs one full-attention layer
    s.levers.quant.enabled = true;
    s.levers.quant.format = format;
    s.levers.paging.enabled = true;
    s.levers.paging.blockSize = blockSize;
    if (prefixTokens > 0) {
        s.levers.prefix.enabled = true;
        s.levers.prefix.sharedTokens = prefixTokens;
        s.levers.prefix.sharingRequests = 0; // all requests share it
    }
    s.hardware.gpu.id = "probe";
    s.hardware.gpu.name = "probe";
    s.hardware.gpu.memoryBytes = std::int64_t(1) << 46;
    s.hardware.kvMemoryBytes = std::int64_t(1) << 45;
    s.workload.context = context;
    s.workload.maxModelLen = context;
    if (auto e = s.validate())
        return "core scenario: " + *e;
    const core::LedgerResult r = core::computeLedger(s);
    if (r.kvBytesPerRequestPerGpu <= 0)
        return std::string("core predicted no KV bytes") + (r.error.empty() ? "" : ": " + r.error);
    // vLLM / core: every request after the first saves the shared full blocks.
    return std::int64_t(batch) * r.kvBytesPerRequestPerGpu -
           std::int64_t(batch - 1) * r.sharedBytesPerRequestPerGpu;
}

namespace {

ProbeResult runProbeImpl(const ProbePlan& plan, const ProgressFn& progress,
                         const std::atomic<bool>* cancel) {
    ProbeResult res;
    auto report = [&](double pct, const std::string& stage) {
        if (progress)
            progress(std::clamp(pct, 0.0, 100.0), stage);
    };
    auto fail = [&](std::string e) {
        res.ok = false;
        res.cancelled = e == "cancelled";
        res.error = std::move(e);
        return res;
    };
    auto isCancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };

    const core::ModelSpec& m = plan.model;
    res.backend = plan.backend;
    res.formatId = plan.format.id;
    res.formatLabel = plan.format.label;
    res.dtype = std::string(core::dtypeName(plan.format.format.dtype));
    res.modelId = m.id;
    res.blockSize = plan.blockSize;
    res.prefixTokens = plan.prefixTokens;
    if (plan.format.id.empty())
        return fail("no KV format given");
    if (auto e = m.validate())
        return fail("model: " + *e);
    if (m.isMla())
        return fail("model " + m.id +
                    ": MLA latent caches are not probed (full-attention layers only)");
    const int H = m.kvHeads, QH = m.qHeads, D = m.headDim;
    res.kvHeads = H;
    res.qHeads = QH;
    res.headDim = D;
    if (QH % H != 0 || QH / H > 64)
        return fail("model: q heads must be a multiple of KV heads, at most 64 per KV head");

    std::vector<std::int64_t> contexts = plan.contexts;
    if (contexts.empty()) {
        if (plan.batch < 1 || plan.batch > 4096)
            return fail("batch must be between 1 and 4096, got " + std::to_string(plan.batch));
        contexts.assign(std::size_t(plan.batch), plan.context);
    }
    for (std::int64_t c : contexts)
        if (c < 1 || c > (std::int64_t(1) << 24))
            return fail("context must be between 1 and 16M tokens, got " + std::to_string(c));
    if (plan.prefixTokens < 0)
        return fail("prefix tokens must not be negative");
    if (plan.repeats < 1 || plan.repeats > 1000 || plan.warmup < 0 || plan.warmup > 100)
        return fail("repeats must be 1-1000 and warm-up 0-100");
    auto lay = makeLayout(plan.format.format, D, H, plan.blockSize);
    if (auto* e = std::get_if<std::string>(&lay))
        return fail(*e);
    const PageLayout L = std::get<PageLayout>(lay);
    res.pageBytes = L.pageBytes;

    auto be = makeBackend(plan.backend);
    if (auto* e = std::get_if<std::string>(&be))
        return fail(*e);
    Backend& dev = *std::get<std::unique_ptr<Backend>>(be);
    dev.setCancel(cancel);
    dev.setThreads(plan.threads);
    res.device = dev.deviceName();
    report(1, "preparing data");

    // ---- data: synthetic (REFERENCE.md 4) or real K/V from .npy
    std::int64_t C = *std::max_element(contexts.begin(), contexts.end());
    const int padRows = plan.checkStore ? 7 : 0; // padding tokens (slot -1) the store must skip
    {
        // Host working set: K/V as float + fp16 bits, the store's stream copy, the FP64
        // reference's dequantized copies. Refuse cleanly rather than meet the OOM killer.
        const double rows = double(C + padRows);
        std::int64_t streamTokens = 0;
        for (auto c : contexts)
            streamTokens += c;
        const double need = rows * H * D * (2 * 4 + 2 * 2 + 2 * 4) + double(streamTokens) * 8.0 +
                            (plan.checkStore ? double(streamTokens) * H * D * 4.0 : 0.0);
        const double avail = double(hostAvailableBytes());
        if (avail > 0 && need > 0.8 * avail)
            return fail("needs about " + std::to_string(std::int64_t(need / 1e9 + 1)) +
                        " GB of host memory, " + std::to_string(std::int64_t(avail / 1e9)) +
                        " GB available: lower the context");
    }
    std::vector<float> kf, vf;
    std::vector<std::uint16_t> kb, vb;
    SynthParams sp;
    sp.kvHeads = H;
    sp.qHeads = QH;
    sp.headDim = D;
    sp.seed = plan.seed;
    if (!plan.kNpy.empty() || !plan.vNpy.empty()) {
        if (plan.kNpy.empty() || plan.vNpy.empty())
            return fail("real K/V needs both --k-npy and --v-npy");
        auto ka = loadNpy(plan.kNpy);
        if (auto* e = std::get_if<std::string>(&ka))
            return fail(*e);
        auto va = loadNpy(plan.vNpy);
        if (auto* e = std::get_if<std::string>(&va))
            return fail(*e);
        NpyArray& K = std::get<NpyArray>(ka);
        NpyArray& V = std::get<NpyArray>(va);
        if (auto e = checkKvShape(K, H, D, "K .npy"); !e.empty())
            return fail(e);
        if (auto e = checkKvShape(V, H, D, "V .npy"); !e.empty())
            return fail(e);
        if (K.shape[0] != V.shape[0])
            return fail("K and V .npy files hold different token counts");
        const std::int64_t T = K.shape[0];
        if (T < C + padRows) {
            res.notes.push_back("context clamped to the " + std::to_string(T - padRows) +
                                " tokens of the .npy files");
            for (auto& c : contexts)
                c = std::max<std::int64_t>(1, std::min(c, T - padRows));
            C = *std::max_element(contexts.begin(), contexts.end());
        }
        kf = std::move(K.data);
        vf = std::move(V.data);
        kf.resize(std::size_t(C + padRows) * H * D);
        vf.resize(std::size_t(C + padRows) * H * D);
        kb = toInputBits(kf, plan.bf16Input);
        vb = toInputBits(vf, plan.bf16Input);
        res.dataSource = "npy";
    } else {
        SynthKv s = synthKv(sp, C + padRows, plan.bf16Input, plan.threads, cancel);
        kf = std::move(s.k);
        vf = std::move(s.v);
        kb = std::move(s.kBits);
        vb = std::move(s.vBits);
    }
    const int batch = int(contexts.size());
    res.batch = batch;
    res.context = C;
    const std::vector<float> q = synthQueries(sp, batch);
    if (isCancelled())
        return fail("cancelled");

    // ---- out-of-page scales (vLLM k_scale / v_scale: amax / format max, per tensor or head)
    std::vector<float> kScale(std::size_t(H), 1.0f), vScale(std::size_t(H), 1.0f);
    if (L.k.outOfPageScale()) {
        std::vector<float> ka(std::size_t(H), 0.0f), va(std::size_t(H), 0.0f);
        for (std::int64_t t = 0; t < C; ++t)
            for (int h = 0; h < H; ++h)
                for (int c = 0; c < D; ++c) {
                    const std::size_t i = (std::size_t(t) * H + h) * D + c;
                    ka[std::size_t(h)] = std::max(ka[std::size_t(h)], std::fabs(kf[i]));
                    va[std::size_t(h)] = std::max(va[std::size_t(h)], std::fabs(vf[i]));
                }
        if (plan.format.format.granularity == Granularity::PerTensor) {
            const float km = *std::max_element(ka.begin(), ka.end());
            const float vm = *std::max_element(va.begin(), va.end());
            std::fill(ka.begin(), ka.end(), km);
            std::fill(va.begin(), va.end(), vm);
        }
        const double mx = codecMaxOf(L.k);
        for (int h = 0; h < H; ++h) {
            kScale[std::size_t(h)] = ka[std::size_t(h)] > 0 ? float(ka[std::size_t(h)] / mx) : 1.0f;
            vScale[std::size_t(h)] = va[std::size_t(h)] > 0 ? float(va[std::size_t(h)] / mx) : 1.0f;
        }
    }

    // ---- pages: the block manager, then core's prediction
    const std::int64_t pages = BlockManager::pagesNeeded(contexts, plan.prefixTokens, L.blockSize);
    BlockManager mgr(pages, L.blockSize, plan.seed * 2654435761u + 1);
    auto alloc = mgr.allocate(contexts, plan.prefixTokens);
    if (auto* e = std::get_if<std::string>(&alloc))
        return fail(*e);
    const BatchAllocation& A = std::get<BatchAllocation>(alloc);
    res.pagesUsed = A.pagesUsed;
    res.pagesSaved = A.pagesSaved;
    res.poolBytes = A.pagesUsed * L.pageBytes;
    const bool uniform =
        std::all_of(contexts.begin(), contexts.end(), [&](std::int64_t c) { return c == C; });
    if (uniform) {
        auto pred =
            predictedPoolBytes(m, plan.format.format, L.blockSize, batch, C, plan.prefixTokens);
        if (auto* e = std::get_if<std::string>(&pred))
            return fail(*e);
        res.predictedPoolBytes = std::get<std::int64_t>(pred);
    } else {
        res.predictedPoolBytes = res.poolBytes;
        res.notes.push_back(
            "requests of different lengths: core's per-scenario prediction does not apply");
    }

    // Slots in stream order: the shared prefix once (request 0), then each request's own tokens.
    std::vector<std::int64_t> slots;
    const std::size_t nb = std::size_t(batch);
    std::vector<std::int64_t> firstToken(nb), slotOffset(nb), count(nb);
    for (int r = 0; r < batch; ++r) {
        const std::int64_t first = r == 0 ? 0 : A.sharedTokens;
        firstToken[std::size_t(r)] = first;
        slotOffset[std::size_t(r)] = std::int64_t(slots.size());
        for (std::int64_t t = first; t < contexts[std::size_t(r)]; ++t)
            slots.push_back(std::int64_t(A.block(r, t, L.blockSize)) * L.blockSize +
                            t % L.blockSize);
        for (int i = 0; i < padRows; ++i)
            slots.push_back(-1);
        count[std::size_t(r)] = std::int64_t(slots.size()) - slotOffset[std::size_t(r)];
    }
    std::int64_t uniqueTokens = 0;
    for (int r = 0; r < batch; ++r)
        uniqueTokens += contexts[std::size_t(r)] - firstToken[std::size_t(r)];

    // ---- device memory: the pool first, measured on its own
    const std::int64_t used0 = dev.deviceUsedBytes();
    DeviceBuffer dPool;
    if (auto e = dPool.allocate(dev, std::size_t(res.poolBytes)); !e.empty())
        return fail(e);
    const std::uint8_t poison = 0xA5;
    if (auto e = dev.fill(dPool.get(), poison, std::size_t(res.poolBytes)); !e.empty())
        return fail(e);
    dev.synchronize();
    res.devicePoolBytes = std::max<std::int64_t>(0, dev.deviceUsedBytes() - used0);
    res.deviceAccountKind = dev.deviceAccountKind();
    res.allocatorGranularity = dev.granularity();
    res.allocatedPoolBytes = roundUp(res.poolBytes, dev.granularity());
    if (res.predictedPoolBytes > 0)
        res.memoryErrorPct = 100.0 * double(res.allocatedPoolBytes - res.predictedPoolBytes) /
                             double(res.predictedPoolBytes);

    const std::size_t rowElems = std::size_t(H) * D;
    // The store's input in stream order (vLLM's key/value [num_tokens, heads, dim] beside the
    // slot mapping): request r contributes rows [first_r, context_r) plus padding rows, which
    // are contiguous in the generated data. One store call covers the whole batch.
    const std::size_t streamRows = slots.size();
    DeviceBuffer dK, dV, dSlots, dTables, dLens, dQ, dOut, dScratch, dKs, dVs;
    const int maxPart = int((C + kPartitionTokens - 1) / kPartitionTokens);
    std::vector<std::int32_t> lens(contexts.begin(), contexts.end());
    for (auto [buf, bytes] :
         {std::pair{&dK, streamRows * rowElems * 2},
          {&dV, streamRows * rowElems * 2},
          {&dSlots, slots.size() * 8},
          {&dTables, A.blockTables.size() * 4},
          {&dLens, lens.size() * 4},
          {&dQ, q.size() * 4},
          {&dOut, std::size_t(batch) * QH * D * 4},
          {&dScratch, std::size_t(attentionScratchFloats(batch, QH, maxPart, D)) * 4},
          {&dKs, std::size_t(H) * 4},
          {&dVs, std::size_t(H) * 4}})
        if (auto e = buf->allocate(dev, bytes); !e.empty())
            return fail(e);
    for (int r = 0; r < batch; ++r) {
        const std::size_t src = std::size_t(firstToken[std::size_t(r)]) * rowElems;
        const std::size_t dst = std::size_t(slotOffset[std::size_t(r)]) * rowElems;
        const std::size_t n = std::size_t(count[std::size_t(r)]) * rowElems * 2;
        if (auto e = dev.upload(dK.as<std::uint16_t>() + dst, kb.data() + src, n); !e.empty())
            return fail(e);
        if (auto e = dev.upload(dV.as<std::uint16_t>() + dst, vb.data() + src, n); !e.empty())
            return fail(e);
    }
    for (auto [dst, src, bytes] :
         {std::tuple{dSlots.get(), (const void*)slots.data(), slots.size() * 8},
          {dTables.get(), (const void*)A.blockTables.data(), A.blockTables.size() * 4},
          {dLens.get(), (const void*)lens.data(), lens.size() * 4},
          {dQ.get(), (const void*)q.data(), q.size() * 4},
          {dKs.get(), (const void*)kScale.data(), std::size_t(H) * 4},
          {dVs.get(), (const void*)vScale.data(), std::size_t(H) * 4}})
        if (auto e = dev.upload(dst, src, bytes); !e.empty())
            return fail(e);
    if (isCancelled())
        return fail("cancelled");
    report(8, "storing K/V");

    // ---- store
    StoreArgs st;
    st.k = dK.as<std::uint16_t>();
    st.v = dV.as<std::uint16_t>();
    st.inputDtype = plan.bf16Input ? kInputBF16 : kInputF16;
    st.numTokens = std::int64_t(streamRows);
    st.slotMapping = dSlots.as<std::int64_t>();
    st.pool = dPool.as<std::uint8_t>();
    st.numBlocks = pages;
    st.layout = L;
    st.kScale = dKs.as<float>();
    st.vScale = dVs.as<float>();
    if (auto e = validateStore(st, slots.data()); !e.empty())
        return fail(e);
    auto storeAll = [&]() -> std::string {
        if (auto e = dev.store(st); !e.empty())
            return e;
        return dev.synchronize();
    };
    if (auto e = storeAll(); !e.empty())
        return fail(e);
    report(20, "checking the store");

    std::vector<std::uint8_t> hostPool;
    auto downloadPool = [&]() -> std::string {
        hostPool.resize(std::size_t(res.poolBytes));
        return dev.download(hostPool.data(), dPool.get(), hostPool.size());
    };
    if (plan.checkStore) {
        if (auto e = downloadPool(); !e.empty())
            return fail(e);
        std::vector<std::uint16_t> ks(streamRows * rowElems), vs(streamRows * rowElems);
        if (auto e = dev.download(ks.data(), dK.get(), ks.size() * 2); !e.empty())
            return fail(e);
        if (auto e = dev.download(vs.data(), dV.get(), vs.size() * 2); !e.empty())
            return fail(e);
        if (plan.keepPool)
            res.poolSnapshot = hostPool;
        res.storeCheck =
            checkStore(hostPool.data(), res.poolBytes, poison, L, slots.data(),
                       std::int64_t(streamRows), ks.data(), vs.data(),
                       plan.bf16Input ? kInputBF16 : kInputF16, kScale.data(), vScale.data());
    }
    if (isCancelled())
        return fail("cancelled");
    report(30, "attention");

    // ---- attention
    AttentionArgs at;
    at.q = dQ.as<float>();
    at.batch = batch;
    at.qHeads = QH;
    at.blockTables = dTables.as<std::int32_t>();
    at.maxBlocksPerSeq = A.maxBlocksPerSeq;
    at.contextLens = dLens.as<std::int32_t>();
    at.pool = dPool.as<std::uint8_t>();
    at.layout = L;
    at.kScale = dKs.as<float>();
    at.vScale = dVs.as<float>();
    at.smScale = float(1.0 / std::sqrt(double(D)));
    at.out = dOut.as<float>();
    at.scratch = dScratch.as<float>();
    at.maxPartitions = maxPart;
    {
        AttentionArgs hostView = at; // validation reads host copies of the tables
        hostView.q = q.data();
        if (auto e = validateAttention(hostView, pages, A.blockTables.data(), lens.data());
            !e.empty())
            return fail(e);
    }
    if (auto e = dev.fill(dOut.get(), 0xFF, dOut.bytes()); !e.empty()) // poison: NaN
        return fail(e);
    if (auto e = dev.attention(at); !e.empty())
        return fail(e);
    if (auto e = dev.synchronize(); !e.empty())
        return fail(e);
    std::vector<float> out(std::size_t(batch) * QH * D);
    if (auto e = dev.download(out.data(), dOut.get(), out.size() * 4); !e.empty())
        return fail(e);
    for (float x : out)
        if (!std::isfinite(x))
            return fail("attention left a non-finite (or unwritten) output element");
    report(40, "quality against FP64");

    // ---- quality
    if (plan.measureQuality) {
        const int nq = std::clamp(plan.qualityRequests, 1, batch);
        // Only the pages of the compared requests come back to the host (a 32 x 32K fp16
        // pool is 4 GiB per layer): gathered into a compact copy with a remapped table.
        BatchAllocation qa;
        qa.contexts.assign(contexts.begin(), contexts.begin() + nq);
        qa.maxBlocksPerSeq = A.maxBlocksPerSeq;
        qa.blockTables.assign(A.blockTables.begin(),
                              A.blockTables.begin() + std::ptrdiff_t(nq) * A.maxBlocksPerSeq);
        const std::uint8_t* qpool = hostPool.data();
        std::vector<std::uint8_t> compact;
        if (hostPool.empty()) {
            std::vector<std::int32_t> remap(std::size_t(pages), -1);
            std::int32_t next = 0;
            for (auto& b : qa.blockTables) {
                if (b < 0)
                    continue;
                if (remap[std::size_t(b)] < 0) {
                    remap[std::size_t(b)] = next++;
                    compact.resize(std::size_t(next) * std::size_t(L.pageBytes));
                    if (auto e = dev.download(
                            compact.data() + std::size_t(next - 1) * std::size_t(L.pageBytes),
                            dPool.as<std::uint8_t>() + std::int64_t(b) * L.pageBytes,
                            std::size_t(L.pageBytes));
                        !e.empty())
                        return fail(e);
                }
                b = remap[std::size_t(b)];
            }
            qpool = compact.data();
        }
        const std::size_t nqs = std::size_t(nq);
        std::vector<RequestKv> orig(nqs), deq(nqs);
        std::vector<std::vector<float>> dk(nqs), dv(nqs);
        double kE2 = 0, kR2 = 0, vE2 = 0, vR2 = 0;
        for (int r = 0; r < nq; ++r) {
            orig[std::size_t(r)] = RequestKv{kf.data(), vf.data(), contexts[std::size_t(r)]};
            dequantizeRequest(qpool, L, qa, r, kScale.data(), vScale.data(), dk[std::size_t(r)],
                              dv[std::size_t(r)]);
            deq[std::size_t(r)] = RequestKv{dk[std::size_t(r)].data(), dv[std::size_t(r)].data(),
                                            contexts[std::size_t(r)]};
            for (std::size_t i = 0; i < dk[std::size_t(r)].size(); ++i) {
                const double ek = double(dk[std::size_t(r)][i]) - kf[i],
                             ev = double(dv[std::size_t(r)][i]) - vf[i];
                kE2 += ek * ek;
                kR2 += double(kf[i]) * kf[i];
                vE2 += ev * ev;
                vR2 += double(vf[i]) * vf[i];
                res.kMaxAbs = std::max(res.kMaxAbs, std::fabs(ek));
                res.vMaxAbs = std::max(res.vMaxAbs, std::fabs(ev));
            }
        }
        res.kRelL2 = kR2 > 0 ? std::sqrt(kE2 / kR2) : 0;
        res.vRelL2 = vR2 > 0 ? std::sqrt(vE2 / vR2) : 0;
        if (isCancelled())
            return fail("cancelled");
        std::vector<std::vector<double>> lRef, lDeq;
        const double sm = 1.0 / std::sqrt(double(D));
        const auto ref = referenceAttention(q.data(), nq, QH, H, D, orig, sm, &lRef, cancel);
        if (isCancelled())
            return fail("cancelled");
        const auto refDeq = referenceAttention(q.data(), nq, QH, H, D, deq, sm, &lDeq, cancel);
        if (isCancelled())
            return fail("cancelled");
        const std::size_t n = std::size_t(nq) * QH * D;
        const ErrorStats e1 = compareOutputs(out.data(), ref.data(), n);
        const ErrorStats e2 = compareOutputs(out.data(), refDeq.data(), n);
        res.relL2 = e1.relL2;
        res.maxAbs = e1.maxAbs;
        res.kernelVsRefRelL2 = e2.relL2;
        res.top8 = topKAgreement(lRef, lDeq, 8);
        res.qualityMeasured = true;
    }
    report(60, "timing");

    // ---- speed: copy yardstick, store, attention (median of repeats after warm-up)
    if (plan.measureSpeed) {
        DeviceBuffer dCopy;
        if (auto e = dCopy.allocate(dev, std::size_t(res.poolBytes)); !e.empty())
            return fail(e);
        double copyMs = 0, storeMs = 0, attMs = 0;
        if (auto e = dev.time(
                [&] { return dev.copy(dCopy.get(), dPool.get(), std::size_t(res.poolBytes)); },
                plan.warmup, plan.repeats, &copyMs);
            !e.empty())
            return fail(e);
        dCopy.reset();
        report(70, "timing the store");
        if (auto e = dev.time(storeAll, plan.warmup, plan.repeats, &storeMs); !e.empty())
            return fail(e);
        report(85, "timing attention");
        if (auto e = dev.time([&] { return dev.attention(at); }, plan.warmup, plan.repeats, &attMs);
            !e.empty())
            return fail(e);
        const std::int64_t bytesPerToken =
            std::int64_t(H) * (L.keyBytesPerToken + L.valueBytesPerToken);
        res.copyGBs = 2.0 * double(res.poolBytes) / (copyMs * 1e6); // read + write
        res.storeMs = storeMs;
        res.storeBytes =
            uniqueTokens * std::int64_t(rowElems) * 2 * 2 + uniqueTokens * bytesPerToken;
        res.storeGBs = double(res.storeBytes) / (storeMs * 1e6);
        res.attentionMs = attMs;
        res.attentionBytes = uniqueTokens * bytesPerToken; // shared prefix pages counted once
        res.attentionGBs = double(res.attentionBytes) / (attMs * 1e6);
        res.tokensPerS = double(batch) / (attMs * 1e-3);
        res.storePctOfCopy = res.copyGBs > 0 ? 100.0 * res.storeGBs / res.copyGBs : 0;
        res.attentionPctOfCopy = res.copyGBs > 0 ? 100.0 * res.attentionGBs / res.copyGBs : 0;
        res.speedMeasured = true;
        if (res.poolBytes < (std::int64_t(64) << 20))
            res.notes.push_back(
                "pool of " + std::to_string(res.poolBytes >> 20) +
                " MiB may be partly cache-resident: bandwidth figures are optimistic");
    }
    if (isCancelled())
        return fail("cancelled");

    // ---- quality vs context (seed 003: errors may compound with length)
    for (std::size_t i = 0; i < plan.qualityContexts.size(); ++i) {
        ProbePlan sub = plan;
        sub.contexts = {plan.qualityContexts[i]};
        sub.prefixTokens = 0;
        sub.measureSpeed = false;
        sub.measureQuality = true;
        sub.qualityRequests = 1;
        sub.qualityContexts.clear();
        sub.checkStore = false;
        const double base = 90.0 + 10.0 * double(i) / double(plan.qualityContexts.size());
        ProbeResult r = runProbeImpl(
            sub,
            [&](double p, const std::string& st) {
                report(base + p * 0.1 / double(plan.qualityContexts.size()),
                       "quality vs context: " + st);
            },
            cancel);
        if (!r.ok)
            return fail(r.error);
        res.qualityVsContext.push_back(
            QualityPoint{r.context, r.relL2, r.maxAbs, r.top8, r.kernelVsRefRelL2});
    }
    res.ok = true;
    report(100, "done");
    return res;
}

} // namespace

ProbeResult runProbe(const ProbePlan& plan, const ProgressFn& progress,
                     const std::atomic<bool>* cancel) {
    try {
        return runProbeImpl(plan, progress, cancel);
    } catch (const std::bad_alloc&) {
        ProbeResult r;
        r.error = "out of host memory";
        return r;
    } catch (const std::exception& e) {
        ProbeResult r;
        r.error = std::string("internal error: ") + e.what();
        return r;
    }
}

// ------------------------------------------------------------------------------------------
// check

namespace {

core::ModelSpec checkModel(int qHeads, int kvHeads, int headDim) {
    core::ModelSpec m;
    m.id = "check";
    m.name = "check layer";
    m.layers.assign(1, core::LayerSpec{});
    m.qHeads = qHeads;
    m.kvHeads = kvHeads;
    m.headDim = headDim;
    m.params = 1'000'000;
    m.maxContext = 1 << 20;
    m.hiddenSize = qHeads * headDim;
    return m;
}

} // namespace

CheckReport runCheck(const std::string& backend, std::uint64_t seed, const ProgressFn& progress,
                     const std::atomic<bool>* cancel, int threads) {
    CheckReport rep;
    rep.backend = backend;
    {
        auto be = makeBackend(backend);
        if (auto* e = std::get_if<std::string>(&be)) {
            rep.error = *e;
            return rep;
        }
        rep.device = std::get<std::unique_ptr<Backend>>(be)->deviceName();
    }
    std::mt19937_64 rng(seed);
    auto pick = [&](std::initializer_list<int> v) {
        return *(v.begin() + std::ptrdiff_t(rng() % v.size()));
    };
    auto add = [&](std::string name, bool pass, std::string detail) {
        rep.cases.push_back({std::move(name), pass, std::move(detail)});
        (pass ? rep.passed : rep.failed)++;
    };
    const auto formats = allProbeFormats();
    const std::vector<int> blockSizes = {16, 32, 64};
    const std::size_t total = formats.size() * blockSizes.size() * 2;
    std::size_t done = 0;
    for (const auto& f : formats)
        for (int B : blockSizes)
            for (int trial = 0; trial < 2; ++trial) {
                if (cancel && cancel->load()) {
                    rep.error = "cancelled";
                    return rep;
                }
                if (progress)
                    progress(100.0 * double(done) / double(total), f.id + " B" + std::to_string(B));
                ++done;
                const std::string tag = f.id + " B" + std::to_string(B) + (trial ? " shared" : "");
                const bool kivi = f.format.granularity == Granularity::KPerChannelVPerToken;
                if (kivi && B % f.format.groupSize != 0) {
                    if (trial)
                        continue;
                    auto l = makeLayout(f.format, 128, 8, B);
                    const auto* e = std::get_if<std::string>(&l);
                    add("layout " + tag + " rejected (KIVI needs B % G == 0)",
                        e && e->find("multiple") != std::string::npos,
                        e ? *e : "accepted a block size that splits KIVI groups");
                    continue;
                }
                const int D =
                    f.format.granularity == Granularity::PerGroup && f.format.groupSize == 128
                        ? 128
                        : pick({64, 128});
                const int H = pick({1, 2, 4, 8});
                const int gs = pick({1, 2, 4, 8});
                ProbePlan p;
                p.backend = backend;
                p.model = checkModel(H * gs, H, D);
                p.format = f;
                p.blockSize = B;
                p.threads = threads;
                // Odd lengths, partial last pages, more than one split-K partition; every other
                // case a batch that shares a prefix of at least one full block.
                const bool share = trial % 2 == 1;
                const int batch = share ? 2 + int(rng() % 3) : 1 + int(rng() % 3);
                for (int r = 0; r < batch; ++r)
                    p.contexts.push_back((share ? 2 * B + 1 : 1) + std::int64_t(rng() % 1400));
                const std::int64_t minCtx = *std::min_element(p.contexts.begin(), p.contexts.end());
                p.prefixTokens = share ? B + std::int64_t(rng() % std::uint64_t(minCtx - B)) : 0;
                p.bf16Input = rng() % 3 == 0;
                p.seed = rng();
                p.measureSpeed = false;
                p.measureQuality = true;
                p.qualityRequests = batch;
                p.checkStore = true;
                p.keepPool = backend != "cpu";
                std::string shape = "H" + std::to_string(H) + " q" + std::to_string(H * gs) + " d" +
                                    std::to_string(D) + " ctx";
                for (auto c : p.contexts) {
                    shape += ' ';
                    shape += std::to_string(c);
                }
                shape += " prefix ";
                shape += std::to_string(p.prefixTokens);
                shape += p.bf16Input ? " bf16-in" : " fp16-in";
                const ProbeResult r = runProbe(p, {}, cancel);
                if (!r.ok) {
                    if (r.cancelled) {
                        rep.error = "cancelled";
                        return rep;
                    }
                    add("store " + tag, false, shape + ": " + r.error);
                    add("attention " + tag, false, shape + ": " + r.error);
                    continue;
                }
                add("store " + tag, r.storeCheck.empty(),
                    shape + (r.storeCheck.empty() ? "" : ": " + r.storeCheck));
                if (backend != "cpu") {
                    // The device's pages must equal the CPU backend's byte for byte (same seed,
                    // same shuffled block tables, the same kv_quant.h arithmetic).
                    ProbePlan cp = p;
                    cp.backend = "cpu";
                    const ProbeResult c = runProbe(cp, {}, cancel);
                    std::size_t diff = 0;
                    for (std::size_t i = 0;
                         i < std::min(c.poolSnapshot.size(), r.poolSnapshot.size()); ++i)
                        diff += c.poolSnapshot[i] != r.poolSnapshot[i];
                    add("store " + tag + " " + backend + " == cpu bytes",
                        c.ok && c.poolSnapshot.size() == r.poolSnapshot.size() && diff == 0,
                        c.ok ? std::to_string(diff) + " of " +
                                   std::to_string(r.poolSnapshot.size()) + " bytes differ"
                             : c.error);
                }
                // Kernel vs FP64 on the same dequantized pages (REFERENCE.md 4: <= 1e-3).
                char buf[160];
                std::snprintf(buf, sizeof buf, ": kernel vs FP64 rel L2 %.2e, vs unquantized %.2e",
                              r.kernelVsRefRelL2, r.relL2);
                add("attention " + tag, r.kernelVsRefRelL2 <= 1e-3, shape + buf);
                if (f.format.dtype == KvDtype::Fp16 || f.format.dtype == KvDtype::Fp32)
                    add("attention " + tag + " vs unquantized", r.relL2 <= 1e-3, shape + buf);
                add("pages " + tag,
                    r.pagesUsed == BlockManager::pagesNeeded(p.contexts, p.prefixTokens, B) &&
                        r.poolBytes == r.pagesUsed * r.pageBytes,
                    "pages " + std::to_string(r.pagesUsed) + ", saved " +
                        std::to_string(r.pagesSaved));
            }
    // A uniform batch: measured pool bytes equal core's prediction.
    for (const char* id : {"fp16", "int8", "int4-g128", "int2-kivi"}) {
        ProbePlan p;
        p.backend = backend;
        p.model = defaultModel();
        p.format = std::get<ProbeFormat>(parseProbeFormat(id));
        p.blockSize = 32;
        p.batch = 3;
        p.context = 777;
        p.prefixTokens = 300;
        p.measureSpeed = false;
        p.measureQuality = false;
        p.threads = threads;
        p.seed = rng();
        const ProbeResult r = runProbe(p, {}, cancel);
        add(std::string("memory vs core ") + id, r.ok && r.poolBytes == r.predictedPoolBytes,
            r.ok ? "pool " + std::to_string(r.poolBytes) + " B, core " +
                       std::to_string(r.predictedPoolBytes) + " B"
                 : r.error);
    }
    if (progress)
        progress(100, "done");
    return rep;
}

// ------------------------------------------------------------------------------------------
// bench

BenchReport runBench(const std::string& backend, bool quick, std::uint64_t seed,
                     const ProgressFn& progress, const std::atomic<bool>* cancel) {
    BenchReport rep;
    rep.backend = backend;
    auto be = makeBackend(backend);
    if (auto* e = std::get_if<std::string>(&be)) {
        rep.error = *e;
        return rep;
    }
    rep.device = std::get<std::unique_ptr<Backend>>(be)->deviceName();
    const bool gpu = backend != "cpu";
    // GPU: the target sizes (batch 32, 8K-32K); CPU: sizes that finish in about a
    // minute on two cores while the pools still exceed a typical last-level cache.
    std::vector<std::int64_t> contexts, qualityContexts;
    std::vector<int> batches;
    std::vector<std::string> formats;
    if (gpu) {
        contexts = quick ? std::vector<std::int64_t>{8192, 32768}
                         : std::vector<std::int64_t>{8192, 16384, 32768};
        batches = quick ? std::vector<int>{32} : std::vector<int>{8, 32};
        formats = {"fp16",      "fp8_e4m3", "fp8_e5m2",  "int8",
                   "int4-g128", "int4-g32", "int4-kivi", "int2-kivi"};
        qualityContexts = {1024, 4096, 8192, 16384};
    } else {
        contexts = quick ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{1024, 4096};
        batches = quick ? std::vector<int>{4} : std::vector<int>{1, 4};
        formats = {"fp16", "fp8_e4m3", "int8", "int4-g128", "int4-g32", "int2-kivi"};
        qualityContexts = quick ? std::vector<std::int64_t>{1024, 4096}
                                : std::vector<std::int64_t>{1024, 4096, 8192, 16384};
    }
    const std::size_t total = formats.size() * contexts.size() * batches.size();
    std::size_t done = 0;
    std::vector<double> copies;
    for (const auto& id : formats) {
        bool first = true;
        for (std::int64_t ctx : contexts)
            for (int batch : batches) {
                ProbePlan p;
                p.backend = backend;
                p.model = defaultModel();
                p.format = std::get<ProbeFormat>(parseProbeFormat(id));
                // vLLM's default page of 16 tokens; KIVI needs whole groups of 32 in a page.
                p.blockSize =
                    p.format.format.granularity == Granularity::KPerChannelVPerToken ? 32 : 16;
                p.batch = batch;
                p.context = ctx;
                p.seed = seed;
                p.warmup = gpu ? 3 : 1;
                p.repeats = gpu ? 20 : 3;
                p.qualityRequests = 1;
                if (first)
                    p.qualityContexts = qualityContexts;
                const double base = 100.0 * double(done) / double(total);
                ProbeResult r = runProbe(
                    p,
                    [&](double pct, const std::string& st) {
                        if (progress)
                            progress(base + pct / double(total),
                                     id + " ctx " + std::to_string(ctx) + " batch " +
                                         std::to_string(batch) + ": " + st);
                    },
                    cancel);
                ++done;
                if (r.cancelled) {
                    rep.error = "cancelled";
                    return rep;
                }
                if (first && r.ok)
                    rep.qualityVsContext.push_back({r.formatLabel, r.qualityVsContext});
                first = false;
                if (r.ok && r.copyGBs > 0)
                    copies.push_back(r.copyGBs);
                rep.rows.push_back(std::move(r));
            }
    }
    if (!copies.empty()) {
        std::sort(copies.begin(), copies.end());
        rep.copyGBs = copies[copies.size() / 2];
    }
    if (progress)
        progress(100, "done");
    return rep;
}

} // namespace kvl::probe
