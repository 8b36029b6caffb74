#include "gpu_probe/run/synth.h"

#include "gpu_probe/kv_quant.h"
#include "gpu_probe/ops.h"

#include <algorithm>
#include <cmath>

namespace kvl::probe {

namespace {

std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Counter-based normal generator: rows are independent, so generation parallelizes and a row
// is the same whatever the thread count.
struct Rng {
    std::uint64_t state;
    double uniform() { return (double((state = splitmix(state)) >> 11) + 0.5) * 0x1.0p-53; }
    float normal() { // Box-Muller
        const double radius = uniform(), angle = uniform();
        return float(std::sqrt(-2.0 * std::log(radius)) * std::cos(6.283185307179586 * angle));
    }
};

constexpr double kPi = 3.141592653589793;

// Fixed per-head structure: outlier pairs and their phase/sign, the queries' common direction.
struct HeadStructure {
    std::vector<int> pairs;
    std::vector<float> phase;
    std::vector<float> dir; // unit vector
};

HeadStructure headStructure(const SynthParams& params, int head) {
    HeadStructure structure;
    Rng rng{splitmix(params.seed * 1315423911ull + std::uint64_t(head) + 17)};
    const int half = params.headDim / 2;
    // outliers among the slowest quarter of the RoPE pairs
    const int lowest = std::max(0, half - std::max(half / 4, params.outlierPairs));
    while (int(structure.pairs.size()) < std::min(params.outlierPairs, half)) {
        const int pair = lowest + int(rng.uniform() * (half - lowest));
        if (std::find(structure.pairs.begin(), structure.pairs.end(), pair) !=
            structure.pairs.end())
            continue;
        structure.pairs.push_back(pair);
        structure.phase.push_back(float(rng.uniform() * 2 * kPi));
    }
    structure.dir.resize(std::size_t(params.headDim));
    double squares = 0;
    for (auto& x : structure.dir) {
        x = rng.normal();
        squares += double(x) * x;
    }
    for (auto& x : structure.dir)
        x = float(x / std::sqrt(squares));
    return structure;
}

// One token's K and V rows for one head: Gaussian keys with the head's outlier RoPE pairs, a
// log-normal value scale, and token 0 as the attention sink.
void synthRow(const SynthParams& params, const HeadStructure& structure, std::int64_t token,
              int head, float sinkNorm, float* key, float* value) {
    const int dim = params.headDim, half = dim / 2;
    Rng rng{splitmix(params.seed ^ splitmix(std::uint64_t(token) * 64 + std::uint64_t(head)))};
    for (int c = 0; c < dim; ++c)
        key[c] = rng.normal();
    for (std::size_t i = 0; i < structure.pairs.size(); ++i) {
        const int pair = structure.pairs[i];
        // RoPE frequency of pair c: 10000^(-2c/d) (Llama's rotate_half pairing)
        const double theta =
            double(token) * std::pow(10000.0, -2.0 * pair / dim) + structure.phase[i];
        const float amplitude = params.outlierScale * (1.0f + 0.1f * rng.normal());
        key[pair] = float(amplitude * std::cos(theta));
        if (pair + half < dim)
            key[pair + half] = float(amplitude * std::sin(theta));
    }
    const float valueScale = std::exp(params.valueScaleSpread * rng.normal());
    for (int c = 0; c < dim; ++c)
        value[c] = valueScale * rng.normal();
    if (params.sink && token == 0)
        for (int c = 0; c < dim; ++c) {
            key[c] = sinkNorm * structure.dir[std::size_t(c)] + 0.5f * key[c];
            value[c] *= 0.1f;
        }
}

// n floats replaced by their fp16 / bf16 rounding, the bits into `bits`.
void roundToInput(float* values, std::uint16_t* bits, std::size_t n, bool bf16) {
    for (std::size_t i = 0; i < n; ++i) {
        bits[i] = bf16 ? floatToBf16(values[i]) : floatToHalf(values[i]);
        values[i] = bf16 ? bf16ToFloat(bits[i]) : halfToFloat(bits[i]);
    }
}

} // namespace

std::vector<std::uint16_t> toInputBits(std::vector<float>& values, bool bf16) {
    std::vector<std::uint16_t> bits(values.size());
    roundToInput(values.data(), bits.data(), values.size(), bf16);
    return bits;
}

Result<SynthKv> synthKv(const SynthParams& params, std::int64_t tokens, bool bf16, int threads,
                        const std::atomic<bool>* cancel) {
    SynthKv out;
    const int heads = params.kvHeads, dim = params.headDim;
    const std::size_t elems = std::size_t(tokens) * std::size_t(heads) * std::size_t(dim);
    out.k.resize(elems);
    out.v.resize(elems);
    out.kBits.resize(elems);
    out.vBits.resize(elems);
    std::vector<HeadStructure> structures;
    for (int h = 0; h < heads; ++h)
        structures.push_back(headStructure(params, h));
    const float sinkNorm = params.sinkLogit * std::sqrt(float(dim)) / 4.0f; // queries: 4 x dir
    // Each chunk rounds its own rows to the input type too, in parallel and between cancel
    // polls: done afterwards, it was one serial pass over both tensors (at batch 4 x 4K, 33.5M
    // floats) with no poll, which a Cancel pressed then had to wait out.
    constexpr std::int64_t kChunk = 256;
    const Status generated =
        parallelFor((tokens + kChunk - 1) / kChunk, threads, cancel, [&](std::int64_t chunk) {
            const std::int64_t first = chunk * kChunk;
            const std::int64_t end = std::min(tokens, first + kChunk);
            for (std::int64_t t = first; t < end; ++t)
                for (int h = 0; h < heads; ++h) {
                    const std::size_t offset = (std::size_t(t) * heads + h) * dim;
                    synthRow(params, structures[std::size_t(h)], t, h, sinkNorm,
                             out.k.data() + offset, out.v.data() + offset);
                }
            const std::size_t from = std::size_t(first) * std::size_t(heads) * std::size_t(dim);
            const std::size_t n = std::size_t(end - first) * std::size_t(heads) * std::size_t(dim);
            roundToInput(out.k.data() + from, out.kBits.data() + from, n, bf16);
            roundToInput(out.v.data() + from, out.vBits.data() + from, n, bf16);
        });
    if (!generated)
        return generated.error();
    return out;
}

std::vector<float> synthQueries(const SynthParams& params, int batch) {
    const int dim = params.headDim;
    const int groupSize = std::max(1, params.qHeads / std::max(1, params.kvHeads));
    std::vector<float> queries(std::size_t(batch) * params.qHeads * dim);
    std::vector<HeadStructure> structures;
    for (int h = 0; h < params.kvHeads; ++h)
        structures.push_back(headStructure(params, h));
    for (int r = 0; r < batch; ++r)
        for (int qHead = 0; qHead < params.qHeads; ++qHead) {
            Rng rng{
                splitmix(params.seed * 31 + 7 + std::uint64_t(r) * 4096 + std::uint64_t(qHead))};
            const HeadStructure& structure =
                structures[std::size_t(std::min(qHead / groupSize, params.kvHeads - 1))];
            float* query = queries.data() + (std::size_t(r) * params.qHeads + qHead) * dim;
            for (int c = 0; c < dim; ++c)
                query[c] = rng.normal() + 4.0f * structure.dir[std::size_t(c)];
        }
    return queries;
}

} // namespace kvl::probe
