#include "kv_cache.h"
#include "enum_names.h"
#include "saturating.h"

#include "units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kvl::core {

namespace {

constexpr std::int64_t kInt64Max = kSaturated;

bool isFullType(SpecType t) {
    // FullAttentionSpec and its subclass MLAAttentionSpec.
    return t == SpecType::FullAttention || t == SpecType::Mla;
}

// FullAttentionSpec.merge: every AttentionSpec field equal, at most one sliding window and one
// chunk size among the layers that carry one, never both. Other spec classes merge only equal
// specs (KVCacheSpec.merge). Returns the merged spec in `out`.
bool tryMerge(const std::vector<const CacheSpec*>& specs, CacheSpec* out) {
    const CacheSpec& first = *specs.front();
    if (first.type != SpecType::FullAttention) {
        for (const CacheSpec* s : specs)
            if (!(*s == first))
                return false;
        if (out)
            *out = first;
        return true;
    }
    std::int64_t window = 0;
    std::int64_t chunk = 0;
    for (const CacheSpec* s : specs) {
        if (s->type != SpecType::FullAttention || s->blockSize != first.blockSize ||
            s->kvHeads != first.kvHeads || s->headSize != first.headSize ||
            s->headSizeV != first.headSizeV || !(s->format == first.format) ||
            s->paddedPageBytes != first.paddedPageBytes || s->realPageBytes != first.realPageBytes)
            return false;
        if (s->window > 0) {
            if (window > 0 && window != s->window)
                return false;
            window = s->window;
        }
        if (s->chunk > 0) {
            if (chunk > 0 && chunk != s->chunk)
                return false;
            chunk = s->chunk;
        }
    }
    if (window > 0 && chunk > 0)
        return false; // "Model with both sliding window layers and chunked local attention"
    if (out) {
        *out = first;
        out->window = window;
        out->chunk = chunk;
    }
    return true;
}

struct Layer {
    int index;
    CacheSpec spec;
};

std::vector<const CacheSpec*> specPointers(const std::vector<Layer>& layers) {
    std::vector<const CacheSpec*> out;
    out.reserve(layers.size());
    for (const auto& l : layers)
        out.push_back(&l.spec);
    return out;
}

// UniformTypeKVCacheSpecs.is_uniform_type: one block size, and every layer the same kind of
// spec needing the same token slots (full-type, or sliding with one window, chunked with one
// chunk, Mamba with one speculative-block count).
bool isUniformType(const std::vector<Layer>& layers) {
    const CacheSpec& first = layers.front().spec;
    for (const auto& l : layers) {
        const CacheSpec& s = l.spec;
        if (s.blockSize != first.blockSize)
            return false;
        switch (first.type) {
        case SpecType::FullAttention:
        case SpecType::Mla:
            if (!isFullType(s.type))
                return false;
            break;
        case SpecType::SlidingWindow:
            if (s.type != SpecType::SlidingWindow || s.window != first.window)
                return false;
            break;
        case SpecType::ChunkedLocal:
            if (s.type != SpecType::ChunkedLocal || s.chunk != first.chunk)
                return false;
            break;
        case SpecType::Mamba:
            if (s.type != SpecType::Mamba || s.numSpeculativeBlocks != first.numSpeculativeBlocks ||
                s.pageBytes() != first.pageBytes() || s.mambaMode != first.mambaMode)
                return false;
            break;
        }
    }
    return true;
}

// A spec with a new block size (KVCacheSpec.copy_with_new_block_size): attention pages scale
// with the block, and so does a padded page (AttentionSpec keeps page_size_padded per block).
CacheSpec withBlockSize(const CacheSpec& s, int blockSize) {
    CacheSpec out = s;
    const std::int64_t ratio = blockSize / s.blockSize;
    out.blockSize = blockSize;
    out.realPageBytes = s.realPageBytes / s.blockSize * blockSize;
    if (s.paddedPageBytes > 0)
        out.paddedPageBytes = s.paddedPageBytes * ratio;
    return out;
}

// unify_hybrid_kv_cache_specs / _promote_local_kv_cache_specs (--disable-hybrid-kv-cache-
// manager): with full attention present, sliding and chunked layers become full attention that
// remembers its window. Returns false when the specs still are not one type.
bool promoteLocalSpecs(std::vector<Layer>& layers, bool* promoted) {
    const auto ptrs = specPointers(layers);
    if (tryMerge(ptrs, nullptr) || isUniformType(layers))
        return true;
    bool hasFull = false, hasLocal = false;
    int fullBlock = 0;
    for (const auto& l : layers) {
        if (isFullType(l.spec.type)) {
            hasFull = true;
            fullBlock = fullBlock == 0 ? l.spec.blockSize : fullBlock;
        }
        hasLocal |= l.spec.type == SpecType::SlidingWindow || l.spec.type == SpecType::ChunkedLocal;
    }
    if (hasFull && hasLocal) {
        for (auto& l : layers) {
            if (l.spec.type != SpecType::SlidingWindow && l.spec.type != SpecType::ChunkedLocal)
                continue;
            CacheSpec s =
                fullBlock > 0 && fullBlock != l.spec.blockSize && fullBlock % l.spec.blockSize == 0
                    ? withBlockSize(l.spec, fullBlock)
                    : l.spec;
            if (l.spec.type == SpecType::SlidingWindow) {
                s.window = l.spec.window;
                s.chunk = 0;
            } else {
                s.chunk = l.spec.chunk;
                s.window = 0;
            }
            s.type = SpecType::FullAttention;
            l.spec = s;
            *promoted = true;
        }
    }
    return tryMerge(specPointers(layers), nullptr) || isUniformType(layers);
}

// unify_kv_cache_spec_page_size (newest): pages smaller than the largest one are made equal to
// it: Mamba pages are padded; an attention page that divides it gets a larger block size; any
// other non-MLA attention page is padded; otherwise vLLM gives up.
Status unifyPageSizes(std::vector<Layer>& layers) {
    std::int64_t maxPage = 0;
    for (const auto& l : layers)
        maxPage = std::max(maxPage, l.spec.pageBytes());
    for (auto& l : layers) {
        const std::int64_t page = l.spec.pageBytes();
        if (page == maxPage || page <= 0)
            continue;
        if (l.spec.type == SpecType::Mamba) {
            l.spec.paddedPageBytes = maxPage;
        } else if (maxPage % page == 0) {
            l.spec = withBlockSize(l.spec, static_cast<int>(l.spec.blockSize * (maxPage / page)));
        } else if (l.spec.type != SpecType::Mla) {
            l.spec.paddedPageBytes = maxPage;
        } else {
            return makeError(ErrorCode::Unsupported,
                             "vLLM cannot serve this model: layer " + std::to_string(l.index) +
                                 "'s page size (" + std::to_string(page) +
                                 " B) does not divide the largest page size (" +
                                 std::to_string(maxPage) + " B) and cannot be padded");
        }
    }
    return {};
}

// _get_kv_cache_groups_uniform_page_size: bucket the layers by spec (merging buckets whose specs
// merge), choose the group size, and split each bucket strided, layers[i::n].
CacheGroups hybridGroups(const std::vector<Layer>& layers) {
    std::vector<std::vector<const Layer*>> buckets;
    for (const auto& l : layers) {
        bool placed = false;
        for (auto& b : buckets) {
            std::vector<const CacheSpec*> specs{&b.front()->spec, &l.spec};
            if (tryMerge(specs, nullptr)) {
                b.push_back(&l);
                placed = true;
                break;
            }
        }
        if (!placed)
            buckets.push_back({&l});
    }
    std::size_t minN = buckets.front().size(), maxN = minN;
    for (const auto& b : buckets) {
        minN = std::min(minN, b.size());
        maxN = std::max(maxN, b.size());
    }
    // "max_num_layers < min_num_layers * 1.5": the larger count avoids many padding layers.
    const std::size_t groupSize = 2 * maxN < 3 * minN ? maxN : minN;
    CacheGroups out;
    for (const auto& b : buckets) {
        const std::size_t pad = groupSize - b.size() % groupSize;
        if (pad != groupSize) {
            char buf[160];
            std::snprintf(buf, sizeof buf,
                          "Add %zu padding layers, may waste at most %.2f%% KV cache memory", pad,
                          static_cast<double>(pad) / static_cast<double>(b.size()) * 100.0);
            out.notes.emplace_back(buf);
        }
        const std::size_t n = (b.size() + groupSize - 1) / groupSize;
        for (std::size_t i = 0; i < n; ++i) {
            CacheGroup g;
            std::vector<const CacheSpec*> specs;
            for (std::size_t k = i; k < b.size(); k += n) {
                g.layers.push_back(b[k]->index);
                specs.push_back(&b[k]->spec);
            }
            tryMerge(specs, &g.spec);
            out.groups.push_back(std::move(g));
        }
    }
    return out;
}

std::int64_t groupAdmissionBlocks(const CacheGroup& g, const AdmissionInputs& in) {
    if (!g.uniformType())
        return admissionBlocks(g.spec, in);
    std::int64_t blocks = 0;
    for (const auto& s : g.layerSpecs)
        blocks = std::max(blocks, admissionBlocks(s, in));
    return blocks;
}

std::int64_t groupPageSum(const CacheGroup& g) {
    if (!g.uniformType())
        return satMul(static_cast<std::int64_t>(g.layers.size()), g.spec.pageBytes());
    std::int64_t sum = 0;
    for (const auto& s : g.layerSpecs)
        sum = satAdd(sum, s.pageBytes());
    return sum;
}

constexpr EnumRow<SpecType> kSpecTypeNames[] = {{SpecType::FullAttention, "full_attention"},
                                                {SpecType::SlidingWindow, "sliding_window"},
                                                {SpecType::ChunkedLocal, "chunked_local_attention"},
                                                {SpecType::Mla, "mla_attention"},
                                                {SpecType::Mamba, "mamba"}};

} // namespace

std::string_view specTypeName(SpecType type) {
    return lookupOr(kSpecTypeNames, type, "full_attention");
}

std::int64_t maxInFlightTokens(std::int64_t maxNumBatchedTokens, bool asyncScheduling, int pp) {
    const std::int64_t batches = asyncScheduling ? std::int64_t{pp} + 1 : std::int64_t{pp};
    return satMul(std::max<std::int64_t>(1, batches),
                  std::max<std::int64_t>(1, maxNumBatchedTokens));
}

std::int64_t admissionBlocks(const CacheSpec& s, const AdmissionInputs& in) {
    const std::int64_t m = std::max<std::int64_t>(1, in.maxModelLen);
    const std::int64_t b = std::max(1, s.blockSize);
    switch (s.type) {
    case SpecType::FullAttention:
    case SpecType::Mla: {
        // FullAttentionSpec.max_memory_usage_bytes: each DCP rank keeps 1/DCP of the tokens.
        const std::int64_t tokens =
            in.decodeContextParallel > 1 ? ceilDiv(m, in.decodeContextParallel) : m;
        return ceilDiv(tokens, b);
    }
    case SpecType::SlidingWindow:
        // +1: the window may start in the middle of a block.
        return ceilDiv(std::min(satAdd(s.window - 1, in.inFlightTokens), m), b) + 1;
    case SpecType::ChunkedLocal:
        return ceilDiv(std::min(satAdd(s.chunk, in.inFlightTokens), m), b);
    case SpecType::Mamba:
        switch (s.mambaMode) {
        case MambaCacheMode::All:
            return ceilDiv(m, b) + s.numSpeculativeBlocks;
        case MambaCacheMode::Align:
            return 2 + s.numSpeculativeBlocks;
        case MambaCacheMode::Auto:
        case MambaCacheMode::None:
            return 1 + s.numSpeculativeBlocks;
        }
    }
    return ceilDiv(m, b);
}

Result<CacheGroups> kvCacheGroups(const std::vector<std::optional<CacheSpec>>& specs,
                                  bool disableHybridKvCacheManager) {
    std::vector<Layer> layers;
    for (std::size_t i = 0; i < specs.size(); ++i)
        if (specs[i])
            layers.push_back({static_cast<int>(i), *specs[i]});
    CacheGroups out;
    if (layers.empty())
        return out; // attention free: vLLM keeps one null block and no groups
    // Most models: every layer the same spec, one group.
    if (std::all_of(layers.begin(), layers.end(),
                    [&](const Layer& l) { return l.spec == layers.front().spec; })) {
        CacheGroup g;
        g.spec = layers.front().spec;
        g.layers.reserve(layers.size());
        for (const auto& l : layers)
            g.layers.push_back(l.index);
        out.groups.push_back(std::move(g));
        return out;
    }
    if (disableHybridKvCacheManager && !promoteLocalSpecs(layers, &out.hybridDisabled))
        return makeError(ErrorCode::Unsupported,
                         "vLLM cannot disable the hybrid KV cache manager for this model: it "
                         "fails to promote local KV cache specs to one unified type");
    CacheSpec merged;
    if (tryMerge(specPointers(layers), &merged)) {
        CacheGroup g;
        g.spec = merged;
        for (const auto& l : layers)
            g.layers.push_back(l.index);
        out.groups.push_back(std::move(g));
        return out;
    }
    if (isUniformType(layers)) {
        CacheGroup g;
        g.spec = layers.front().spec;
        for (const auto& l : layers) {
            g.layers.push_back(l.index);
            g.layerSpecs.push_back(l.spec);
        }
        out.groups.push_back(std::move(g));
        return out;
    }
    if (auto st = unifyPageSizes(layers); !st)
        return st.error();
    CacheGroups hybrid = hybridGroups(layers);
    hybrid.hybridDisabled = out.hybridDisabled;
    return hybrid;
}

CacheGroups projectToStage(const CacheGroups& all, int firstLayer, int lastLayer) {
    CacheGroups out;
    out.hybridDisabled = all.hybridDisabled;
    out.notes = all.notes;
    for (const auto& g : all.groups) {
        CacheGroup p;
        p.spec = g.spec;
        for (std::size_t i = 0; i < g.layers.size(); ++i) {
            if (g.layers[i] < firstLayer || g.layers[i] >= lastLayer)
                continue;
            p.layers.push_back(g.layers[i]);
            if (g.uniformType())
                p.layerSpecs.push_back(g.layerSpecs[i]);
        }
        // An empty projection of a uniform-type group keeps the whole group's spec.
        if (g.uniformType() && p.layers.empty())
            p.layerSpecs = g.layerSpecs;
        out.groups.push_back(std::move(p));
    }
    return out;
}

std::int64_t bytesPerPoolBlock(const CacheGroups& g) {
    std::int64_t bytes = 0;
    for (const auto& grp : g.groups)
        if (!grp.layers.empty())
            bytes = std::max(bytes, groupPageSum(grp));
    return bytes;
}

std::int64_t admissionBlocksPerRequest(const CacheGroups& g, const AdmissionInputs& in) {
    std::int64_t blocks = 0;
    for (const auto& grp : g.groups)
        blocks = satAdd(blocks, groupAdmissionBlocks(grp, in));
    return blocks;
}

std::int64_t neededBytes(const CacheGroups& g, const AdmissionInputs& in) {
    if (g.groups.empty())
        return 0;
    return satMul(bytesPerPoolBlock(g), admissionBlocksPerRequest(g, in));
}

std::int64_t estimateMaxModelLen(const CacheGroups& g, AdmissionInputs in, std::int64_t available,
                                 std::int64_t upTo) {
    auto fits = [&](std::int64_t len) {
        in.maxModelLen = len;
        return neededBytes(g, in) <= available;
    };
    if (upTo < 1 || !fits(1))
        return 0;
    std::int64_t left = 1, right = upTo, result = 1;
    while (left <= right) {
        const std::int64_t mid = left + (right - left) / 2;
        if (fits(mid)) {
            result = mid;
            left = mid + 1;
        } else {
            right = mid - 1;
        }
    }
    return result;
}

std::string formatGibLikeVllm(std::int64_t bytes) {
    // round(x, 2) then repr: two decimals, trailing zeros dropped, at least one kept.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f",
                  static_cast<double>(bytes) / static_cast<double>(std::int64_t{1} << 30));
    std::string s(buf);
    while (s.size() > 2 && s.back() == '0' && s[s.size() - 2] != '.')
        s.pop_back();
    return s;
}

std::string vllmCapacityLogLine(std::int64_t tokens, std::int64_t maxModelLen,
                                double maxConcurrency) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", maxConcurrency);
    return "GPU KV cache size: " + withThousands(tokens) + " tokens, Maximum concurrency for " +
           withThousands(maxModelLen) + " tokens per request: " + buf + "x";
}

} // namespace kvl::core
