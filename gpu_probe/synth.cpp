#include "gpu_probe/synth.h"

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
    std::uint64_t s;
    double uniform() { return (double((s = splitmix(s)) >> 11) + 0.5) * 0x1.0p-53; }
    float normal() {
        const double u = uniform(), v = uniform();
        return float(std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v));
    }
};

constexpr double kPi = 3.141592653589793;

// Fixed per-head structure: outlier pairs and their phase/sign, the queries' common direction.
struct HeadStructure {
    std::vector<int> pairs;
    std::vector<float> phase;
    std::vector<float> dir; // unit vector
};

HeadStructure headStructure(const SynthParams& p, int h) {
    HeadStructure hs;
    Rng r{splitmix(p.seed * 1315423911ull + std::uint64_t(h) + 17)};
    const int half = p.headDim / 2;
    // outliers among the slowest quarter of the RoPE pairs
    const int lo = std::max(0, half - std::max(half / 4, p.outlierPairs));
    while (int(hs.pairs.size()) < std::min(p.outlierPairs, half)) {
        const int c = lo + int(r.uniform() * (half - lo));
        bool dup = false;
        for (int x : hs.pairs)
            dup |= x == c;
        if (!dup) {
            hs.pairs.push_back(c);
            hs.phase.push_back(float(r.uniform() * 2 * kPi));
        }
    }
    hs.dir.resize(std::size_t(p.headDim));
    double n = 0;
    for (auto& x : hs.dir) {
        x = r.normal();
        n += double(x) * x;
    }
    for (auto& x : hs.dir)
        x = float(x / std::sqrt(n));
    return hs;
}

} // namespace

std::vector<std::uint16_t> toInputBits(std::vector<float>& x, bool bf16) {
    std::vector<std::uint16_t> bits(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        bits[i] = bf16 ? floatToBf16(x[i]) : floatToHalf(x[i]);
        x[i] = bf16 ? bf16ToFloat(bits[i]) : halfToFloat(bits[i]);
    }
    return bits;
}

Result<SynthKv> synthKv(const SynthParams& p, std::int64_t tokens, bool bf16, int threads,
                        const std::atomic<bool>* cancel) {
    SynthKv out;
    const int H = p.kvHeads, D = p.headDim, half = D / 2;
    const std::size_t n = std::size_t(tokens) * H * D;
    out.k.resize(n);
    out.v.resize(n);
    std::vector<HeadStructure> hs;
    for (int h = 0; h < H; ++h)
        hs.push_back(headStructure(p, h));
    const float sinkNorm = p.sinkLogit * std::sqrt(float(D)) / 4.0f; // queries carry 4 x dir
    const Status generated =
        parallelFor((tokens + 255) / 256, threads, cancel, [&](std::int64_t chunk) {
            const std::int64_t t1 = std::min(tokens, (chunk + 1) * 256);
            for (std::int64_t t = chunk * 256; t < t1; ++t)
                for (int h = 0; h < H; ++h) {
                    Rng r{splitmix(p.seed ^ splitmix(std::uint64_t(t) * 64 + std::uint64_t(h)))};
                    float* k = out.k.data() + (std::size_t(t) * H + h) * D;
                    float* v = out.v.data() + (std::size_t(t) * H + h) * D;
                    for (int c = 0; c < D; ++c)
                        k[c] = r.normal();
                    const HeadStructure& s = hs[std::size_t(h)];
                    for (std::size_t i = 0; i < s.pairs.size(); ++i) {
                        const int c = s.pairs[i];
                        // RoPE frequency of pair c: 10000^(-2c/d) (Llama's rotate_half pairing)
                        const double theta =
                            double(t) * std::pow(10000.0, -2.0 * c / D) + s.phase[i];
                        const float a = p.outlierScale * (1.0f + 0.1f * r.normal());
                        k[c] = float(a * std::cos(theta));
                        if (c + half < D)
                            k[c + half] = float(a * std::sin(theta));
                    }
                    const float vs = std::exp(p.valueScaleSpread * r.normal());
                    for (int c = 0; c < D; ++c)
                        v[c] = vs * r.normal();
                    if (p.sink && t == 0) {
                        for (int c = 0; c < D; ++c) {
                            k[c] = sinkNorm * s.dir[std::size_t(c)] + 0.5f * k[c];
                            v[c] *= 0.1f;
                        }
                    }
                }
        });
    if (!generated)
        return generated.error();
    out.kBits = toInputBits(out.k, bf16);
    out.vBits = toInputBits(out.v, bf16);
    return out;
}

std::vector<float> synthQueries(const SynthParams& p, int batch) {
    const int D = p.headDim, gs = std::max(1, p.qHeads / std::max(1, p.kvHeads));
    std::vector<float> q(std::size_t(batch) * p.qHeads * D);
    std::vector<HeadStructure> hs;
    for (int h = 0; h < p.kvHeads; ++h)
        hs.push_back(headStructure(p, h));
    for (int r = 0; r < batch; ++r)
        for (int qh = 0; qh < p.qHeads; ++qh) {
            Rng rng{splitmix(p.seed * 31 + 7 + std::uint64_t(r) * 4096 + std::uint64_t(qh))};
            const HeadStructure& s = hs[std::size_t(std::min(qh / gs, p.kvHeads - 1))];
            float* x = q.data() + (std::size_t(r) * p.qHeads + qh) * D;
            for (int c = 0; c < D; ++c)
                x[c] = rng.normal() + 4.0f * s.dir[std::size_t(c)];
        }
    return q;
}

} // namespace kvl::probe
