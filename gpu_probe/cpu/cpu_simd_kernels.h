// The vector decode-attention kernel, written once and compiled once per instruction set: each
// cpu_simd_*.cpp includes this file inside its own anonymous namespace (so it has no include
// guard and must not be included anywhere else), after defining
//
//   struct Vec      W floats: zero(), set1(f), load(const float*), store(float*), + - *,
//                   kAccumulators (vector registers a block may keep as accumulators),
//                   fma(a, b, c) = a * b + c, max(a, b), hsum(), hmax(), first()
//   Vec expv(Vec)   e^x, 0 below -87.3 (so -inf gives exactly 0)
//   template <int N> void reduceN(const Vec (&s)[N], float* out)   out[i] = s[i].hsum()
//   struct DecF32, DecF16, DecBF16, DecI8, DecE4M3, DecE5M2
//                   static Vec load(const std::uint8_t* row, int c): elements c .. c+W-1 of a
//                   row of codes as floats, before any scale
//   void prefetch(const void*), prefetchL2(const void*)   into L1, toward L2 only
//   Each decoder also says whether it dots in integers (kIntegerDot): DecI8 may, on x86, multiply
//   the int8 keys with the queries quantized to int16 (one scale per query head, 15 bits, far
//   finer than the bf16 queries of GPU kernels) and sum exactly in int32; it then provides
//   template <int NG, int NT> static void integerLogits(const std::int16_t* q16, int dim,
//   const Tile&, int i0, int g0, float* logits), the exact dots before the queries' scales
//   (tileSoftmax applies them with the keys' per-token scales), for dims that are a multiple of
//   kIntegerChunk. A decoder with kIntegerAccumulate also accumulates the values
//   in integers: the tile's softmax weights quantized to 15 bits per query head (relative to
//   the tile's largest), token pairs through vpdpwssd, one float multiply-add per tile; its
//   accumulators hold the channels in a lane order that unpermute(acc, dim, out) undoes at the end:
//   template <int NG> static void integerAccumulate(float* acc, int dim, const Tile&, int g0,
//   const std::int32_t* weightPairs, const float* weightScale);
//   static void quantizeWeights(const float* weights, std::int32_t* pairs, float* scale): one
//   head's kTile weights (0 past the tile's end) as int16, two per int32 (token 2j low), and
//   the scale back.
//
// The structure is a GPU decode kernel's (vLLM's paged_attention_v2, FlashInfer's batch decode),
// one work item = one (request, 512-token partition) for up to kSimdMaxHeadsPerItem KV heads, each
// head as one CTA would be, the heads taking the tiles in turn:
//   phase 1 (gather): a unit's (one tile of one head's) row addresses and scale addresses from
//            the block table, a page's run of tokens at a time, kAhead units before the unit is
//            computed, with a prefetch of every cache line of its rows toward L2 spread over the
//            compute in between (the CPU's stand-in for issuing all of a tile's 16-byte loads
//            before decoding), and each row into L1 a few tokens before it is used; rows of
//            formats without a vector decoder are dequantized here into a float tile instead;
//   phase 2 (compute): the GQA group's logits against the tile (each K row decoded once per
//            group of up to 8 query heads), the online softmax's max and rescale once per tile,
//            then the tile's V rows accumulated into the group's outputs (each V row decoded
//            once per group of up to 8 query heads). Per-token INT8 scales multiply the logits
//            and the softmax weights rather than every element.

// Tokens per tile. 64 rather than 32 halves the per-tile work per token (the softmax's max and
// rescale, the weights' quantization): tests/bench/bench_probe's decode steps in turn, five runs
// of 15 rounds each, INT8 paged / contiguous 1.12 -> 1.09, FP16 and INT8 faster, INT8 / FP16 0.58
// either way. (Runs made one after the other could not tell them apart on this shared VM.)
constexpr int kTile = 64;
// Units (one tile of one head) gathered ahead of the one computed: the rows of unit u + kAhead
// are prefetched toward L2 while unit u is computed, and unit u's own rows into L1 kL1Ahead
// tokens before each is used. An FP16 unit (64 rows of 2 x 256 bytes) is as large as a 32 KiB
// L1, so prefetching the next unit into L1 evicted the current one before its V rows were read.
// Measured on a Zen 4 VM (2 cores, read stream ~32 GB/s) with the decode steps in turn, 30
// rounds: FP16 paged 22.2 -> 15.9 ms, INT8 paged 11.6 -> 10.9 ms, FP16 contiguous 19.4 -> 15.4.
// Prefetching toward L2 from further ahead (2 to 24 units, or a whole tile two tiles ahead) was no
// better, and 4, 6 or 16 tokens ahead into L1 no different from 8.
constexpr int kAhead = 1;
constexpr int kRing = kAhead + 1;
constexpr int kL1Ahead = 8;

// A row's cache lines into L1, or toward L2. Rows of 128 and 256 bytes (head_dim 128 in INT8 and
// FP16 codes) in straight lines: while the rows are in cache the loop's compare and branch per
// line cost more than the prefetches (decode with every block table entry pointing at one page,
// 30 rounds in turn, twice: FP16 time 0.85-0.88, INT8 0.88-0.90 of the loop's).
template <bool L2> inline void prefetchLine(const std::uint8_t* line) {
    if constexpr (L2)
        prefetchL2(line);
    else
        prefetch(line);
}
template <bool L2> inline void prefetchRowLines(const std::uint8_t* row, int bytes) {
    if (bytes == 128) {
        prefetchLine<L2>(row);
        prefetchLine<L2>(row + 64);
    } else if (bytes == 256) {
        prefetchLine<L2>(row);
        prefetchLine<L2>(row + 64);
        prefetchLine<L2>(row + 128);
        prefetchLine<L2>(row + 192);
    } else {
        for (int offset = 0; offset < bytes; offset += 64)
            prefetchLine<L2>(row + offset);
    }
}

// Phase 1's product for one tile.
struct Tile {
    const std::uint8_t* k[kTile];
    const std::uint8_t* v[kTile];
    // kSimdI8: the tile's tokens in runs that share a page, run r = tokens [runStart[r],
    // runStart[r + 1]), whose fp32 scales lie one after another from kMeta[r] and vMeta[r]
    const std::uint8_t* kMeta[kTile];
    const std::uint8_t* vMeta[kTile];
    int runStart[kTile + 1];
    int runs;
    int n;
    int kBytes, vBytes; // bytes per row to prefetch (0: rows already in a float tile)
};

// The rows of tokens [from, to) of a gathered tile, the K rows, the V rows or both (kPrefetch*),
// into L1 or toward L2.
constexpr int kPrefetchK = 1, kPrefetchV = 2, kPrefetchKV = 3;
template <bool L2> inline void prefetchTileRows(const Tile& tile, int from, int to, int sides) {
    to = to < tile.n ? to : tile.n;
    for (int i = from; i < to; ++i) {
        if (tile.kBytes && (sides & kPrefetchK))
            prefetchRowLines<L2>(tile.k[i], tile.kBytes);
        if (tile.vBytes && (sides & kPrefetchV))
            prefetchRowLines<L2>(tile.v[i], tile.vBytes);
    }
}

// The next unit's rows toward L2 (none when there is no next unit): called a few tokens at a time
// from the current tile's loops, so the next unit's loads are spread over this unit's compute
// rather than issued in bursts larger than the core's few miss buffers hold. The integer kernels
// prefetch K rows from the logits loop and V rows from the value loop.
inline void prefetchTokens(const Tile* next, int from, int to, int sides = kPrefetchKV) {
    if (next)
        prefetchTileRows<true>(*next, from, to, sides);
}

// The current tile's rows into L1, ahead of their use by the same loops.
inline void prefetchTokensL1(const Tile& tile, int from, int to, int sides) {
    prefetchTileRows<false>(tile, from, to, sides);
}

// The row addresses of tokens [i, i + count) of a tile, at slots [offset, offset + count) of
// one side of a page: into the codes, or into rows of `buffer` decoded to floats (generic
// sides). The row stride sits in a local: the stores into `rows` could otherwise alias `side`
// and reload it for every token.
inline void gatherRows(const SimdSide& side, const std::uint8_t* sideBase, int offset, int i,
                       int count, int dim, float* buffer, const std::uint8_t** rows) {
    if (side.kind == kSimdGeneric) {
        for (int t = 0; t < count; ++t) {
            float* row = buffer + std::int64_t(i + t) * dim;
            side.decodeRow(side, sideBase, offset + t, row);
            rows[i + t] = reinterpret_cast<const std::uint8_t*>(row);
        }
        return;
    }
    const std::int64_t stride = side.dataBytes;
    for (int t = 0; t < count; ++t)
        rows[i + t] = sideBase + (offset + t) * stride;
}

// Phase 1: where tile tokens [first, first + n) of one (request, head) live, a page's run of
// tokens at a time (one block-table read and one page address per run; the SimdAttention
// fields in locals, since the tile's stores could otherwise alias them and reload every one).
inline void gatherTile(const SimdAttention& a, const std::int32_t* table, int head,
                       std::int64_t first, int n, Tile& tile, float* kBuffer, float* vBuffer) {
    const bool scaled = a.k.kind == kSimdI8;
    const int blockSize = a.blockSize, dim = a.headDim;
    const std::int64_t pageBytes = a.pageBytes, vSideOffset = a.vOffset;
    const std::int64_t kMetaOffset = a.k.metaOffset, vMetaOffset = a.v.metaOffset;
    const std::uint8_t* base = a.pool + std::int64_t(head) * a.headStride;
    tile.n = n;
    tile.runs = 0;
    tile.kBytes = a.k.kind == kSimdGeneric ? 0 : a.k.dataBytes;
    tile.vBytes = a.v.kind == kSimdGeneric ? 0 : a.v.dataBytes;
    std::int64_t blockIndex = first / blockSize;
    int offset = int(first % blockSize);
    for (int i = 0; i < n; ++blockIndex, offset = 0) {
        const int count = n - i < blockSize - offset ? n - i : blockSize - offset;
        const std::uint8_t* kSide = base + table[blockIndex] * pageBytes;
        const std::uint8_t* vSide = kSide + vSideOffset;
        gatherRows(a.k, kSide, offset, i, count, dim, kBuffer, tile.k);
        gatherRows(a.v, vSide, offset, i, count, dim, vBuffer, tile.v);
        if (scaled) {
            const std::uint8_t* kScales = kSide + kMetaOffset + std::int64_t(offset) * 4;
            const std::uint8_t* vScales = vSide + vMetaOffset + std::int64_t(offset) * 4;
            tile.kMeta[tile.runs] = kScales;
            tile.vMeta[tile.runs] = vScales;
            tile.runStart[tile.runs++] = i;
            prefetch(kScales); // a run's scales span at most two cache lines per 16 tokens
            prefetch(vScales);
            prefetch(kScales + 4 * count - 1);
            prefetch(vScales + 4 * count - 1);
        }
        i += count;
    }
    tile.runStart[tile.runs] = n;
}

// The tile's per-token INT8 scales into kScales / vScales, a run at a time.
inline void loadTileScales(const Tile& tile, float* kScales, float* vScales) {
    for (int r = 0; r < tile.runs; ++r) {
        const int from = tile.runStart[r], count = tile.runStart[r + 1] - from;
        __builtin_memcpy(kScales + from, tile.kMeta[r], std::size_t(count) * 4);
        __builtin_memcpy(vScales + from, tile.vMeta[r], std::size_t(count) * 4);
    }
}

// Logits of query heads [g0, g0 + NG) against tokens [i0, i0 + NT) of the tile:
// logits[g * kTile + i]. NG x NT independent accumulators hide the FMA latency; sum g * NT + t
// belongs to head g0 + g and token i0 + t, so each head's NT logits are contiguous.
template <class Dec, int NG, int NT>
inline void logitsBlock(const float* queries, int dim, const Tile& tile, int i0, int g0,
                        float* logits) {
    Vec sum[NG * NT];
    for (int j = 0; j < NG * NT; ++j)
        sum[j] = Vec::zero();
    for (int c = 0; c < dim; c += Vec::W) {
        Vec query[NG];
        for (int g = 0; g < NG; ++g)
            query[g] = Vec::load(queries + std::int64_t(g0 + g) * dim + c);
        for (int t = 0; t < NT; ++t) {
            const Vec key = Dec::load(tile.k[i0 + t], c);
            for (int g = 0; g < NG; ++g)
                sum[g * NT + t] = Vec::fma(query[g], key, sum[g * NT + t]);
        }
    }
    float dots[NG * NT];
    reduceN<NG * NT>(sum, dots);
    for (int g = 0; g < NG; ++g)
        __builtin_memcpy(logits + (g0 + g) * kTile + i0, dots + g * NT, sizeof(float) * NT);
}

// Tokens per logits block for NG heads: as many as the accumulator registers allow.
template <int NG> constexpr int tokensPerBlock() {
    return NG >= Vec::kAccumulators ? 1 : Vec::kAccumulators / NG;
}

template <class Dec, int NG>
inline void tileLogits(const float* queries, int dim, const Tile& tile, int g0, float* logits,
                       const Tile* next) {
    constexpr int NT = tokensPerBlock<NG>();
    const bool first = g0 == 0; // the first head block brings the rows into L1
    if (first)
        prefetchTokensL1(tile, 0, kL1Ahead, kPrefetchK);
    int i = 0;
    for (; i + NT <= tile.n; i += NT) {
        prefetchTokens(next, i, i + NT);
        if (first)
            prefetchTokensL1(tile, i + kL1Ahead, i + kL1Ahead + NT, kPrefetchK);
        logitsBlock<Dec, NG, NT>(queries, dim, tile, i, g0, logits);
    }
    for (; i < tile.n; ++i) {
        prefetchTokens(next, i, i + 1);
        logitsBlock<Dec, NG, 1>(queries, dim, tile, i, g0, logits);
    }
    prefetchTokens(next, tile.n, kTile); // a last tile shorter than the next one
    if (first)                           // the value loop's first rows
        prefetchTokensL1(tile, 0, kL1Ahead, kPrefetchV);
}

// acc[g][c0 .. c0 + NC W) += sum_i weights[g * kTile + i] * V_i for query heads [g0, g0 + NG):
// NG x NC independent accumulators.
template <class Dec, int NG, int NC>
inline void accumulateBlock(float* acc, int dim, const Tile& tile, int c0, int g0,
                            const float* weights) {
    Vec out[NG * NC];
    for (int g = 0; g < NG; ++g)
        for (int k = 0; k < NC; ++k)
            out[g * NC + k] = Vec::load(acc + std::int64_t(g0 + g) * dim + c0 + k * Vec::W);
    const bool first = c0 == 0 && g0 == 0; // the first pass brings the rows into L1
    for (int i = 0; i < tile.n; ++i) {
        if (first)
            prefetchTokensL1(tile, i + kL1Ahead, i + kL1Ahead + 1, kPrefetchV);
        Vec weight[NG];
        for (int g = 0; g < NG; ++g)
            weight[g] = Vec::set1(weights[(g0 + g) * kTile + i]);
        for (int k = 0; k < NC; ++k) {
            const Vec value = Dec::load(tile.v[i], c0 + k * Vec::W);
            for (int g = 0; g < NG; ++g)
                out[g * NC + k] = Vec::fma(weight[g], value, out[g * NC + k]);
        }
    }
    for (int g = 0; g < NG; ++g)
        for (int k = 0; k < NC; ++k)
            out[g * NC + k].store(acc + std::int64_t(g0 + g) * dim + c0 + k * Vec::W);
}

template <class Dec, int NG>
inline void tileAccumulate(float* acc, int dim, const Tile& tile, int g0, const float* weights) {
    constexpr int NC = NG >= Vec::kAccumulators ? 1 : Vec::kAccumulators / NG;
    int c = 0;
    for (; c + NC * Vec::W <= dim; c += NC * Vec::W)
        accumulateBlock<Dec, NG, NC>(acc, dim, tile, c, g0, weights);
    for (; c < dim; c += Vec::W)
        accumulateBlock<Dec, NG, 1>(acc, dim, tile, c, g0, weights);
}

// The workspace. Per KV head of the work item: its scaled queries and accumulators
// [group, dim], running max [group] and sum [group, W lanes], int16 queries and their scales
// for integer dots.
// Shared by the item's heads, which take the tiles in turn: kRing pairs of float tiles (generic
// rows, one per unit gathered ahead), logits and weights [group, kTile], per-token scales
// [kTile], the integer weights and their scales. Workspace w[h] holds head h's pointers and the
// shared ones.
struct Workspace {
    float *queries, *acc, *kBuffer[kRing], *vBuffer[kRing], *logits, *weights, *runMax, *runSum,
        *kScales, *vScales, *q16Scale, *weightScale;
    std::int16_t* q16;         // [group, dim] for integer dots
    std::int32_t* weightPairs; // [group, kTile / 2] for integer accumulation
};

inline std::size_t roundUp16(std::size_t n) {
    return (n + 15) / 16 * 16;
}

// Lays the workspace of `heads` KV heads out from `base` (each piece 64-byte aligned relative
// to it) into w[0 .. heads); the floats it takes.
inline std::size_t workspaceLayout(const SimdAttention& a, float* base, Workspace* w, int heads) {
    const std::size_t group = std::size_t(a.groupSize), dim = std::size_t(a.headDim);
    std::size_t offset = 0;
    auto take = [&](std::size_t floats) {
        float* piece = base ? base + offset : nullptr;
        offset += roundUp16(floats);
        return piece;
    };
    Workspace shared{};
    for (float*& buffer : shared.kBuffer)
        buffer = take(kTile * dim);
    for (float*& buffer : shared.vBuffer)
        buffer = take(kTile * dim);
    shared.logits = take(group * kTile);
    shared.weights = take(group * kTile);
    shared.kScales = take(kTile);
    shared.vScales = take(kTile);
    shared.weightScale = take(group);
    shared.weightPairs = reinterpret_cast<std::int32_t*>(take(group * (kTile / 2)));
    for (int h = 0; h < heads; ++h) {
        Workspace& head = w[h];
        head = shared;
        head.queries = take(group * dim);
        head.acc = take(group * dim);
        head.runMax = take(group);
        head.runSum = take(group * Vec::W); // lane partial sums, added up at the end
        head.q16Scale = take(group);
        head.q16 = reinterpret_cast<std::int16_t*>(take((group * dim + 1) / 2));
    }
    return offset;
}

// The query heads in blocks of 8, 4, 2 and 1, so the accumulators stay in registers.
inline int headBlock(int left) {
    return left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
}

// Integer logits (see above) over the tile's tokens in blocks of NT.
template <class Dec, int NG>
inline void tileIntegerLogits(const Workspace& w, int dim, const Tile& tile, int g0,
                              const Tile* next) {
    if constexpr (Dec::kIntegerDot) {
        constexpr int NT = tokensPerBlock<NG>();
        constexpr int sides = Dec::kIntegerAccumulate ? kPrefetchK : kPrefetchKV;
        const bool first = g0 == 0;
        if (first)
            prefetchTokensL1(tile, 0, kL1Ahead, kPrefetchK);
        int i = 0;
        for (; i + NT <= tile.n; i += NT) {
            prefetchTokens(next, i, i + NT, sides);
            if (first)
                prefetchTokensL1(tile, i + kL1Ahead, i + kL1Ahead + NT, kPrefetchK);
            Dec::template integerLogits<NG, NT>(w.q16, dim, tile, i, g0, w.logits);
        }
        for (; i < tile.n; ++i) {
            prefetchTokens(next, i, i + 1, sides);
            Dec::template integerLogits<NG, 1>(w.q16, dim, tile, i, g0, w.logits);
        }
        prefetchTokens(next, tile.n, kTile, sides);
        if (first)
            prefetchTokensL1(tile, 0, kL1Ahead, kPrefetchV);
    }
}

template <class Dec>
inline void integerLogitsOverHeads(const Workspace& w, int group, int dim, const Tile& tile,
                                   const Tile* next) {
    for (int g0 = 0; g0 < group; next = nullptr) {
        const int count = headBlock(group - g0);
        if (count == 8)
            tileIntegerLogits<Dec, 8>(w, dim, tile, g0, next);
        else if (count == 4)
            tileIntegerLogits<Dec, 4>(w, dim, tile, g0, next);
        else if (count == 2)
            tileIntegerLogits<Dec, 2>(w, dim, tile, g0, next);
        else
            tileIntegerLogits<Dec, 1>(w, dim, tile, g0, next);
        g0 += count;
    }
}

template <class Dec>
inline void logitsOverHeads(const Workspace& w, int group, int dim, const Tile& tile,
                            const Tile* next) {
    for (int g0 = 0; g0 < group; next = nullptr) { // the next tile is prefetched once
        const int count = headBlock(group - g0);
        if (count == 8)
            tileLogits<Dec, 8>(w.queries, dim, tile, g0, w.logits, next);
        else if (count == 4)
            tileLogits<Dec, 4>(w.queries, dim, tile, g0, w.logits, next);
        else if (count == 2)
            tileLogits<Dec, 2>(w.queries, dim, tile, g0, w.logits, next);
        else
            tileLogits<Dec, 1>(w.queries, dim, tile, g0, w.logits, next);
        g0 += count;
    }
}

// The next tile's V rows are prefetched from the first head block's loop.
template <class Dec>
inline void integerAccumulateOverHeads(const Workspace& w, int group, int dim, const Tile& tile,
                                       const Tile* next) {
    if constexpr (Dec::kIntegerAccumulate) {
        for (int g0 = 0; g0 < group; next = nullptr) {
            const int count = headBlock(group - g0);
            if (count == 8)
                Dec::template integerAccumulate<8>(w.acc, dim, tile, g0, w.weightPairs,
                                                   w.weightScale, next);
            else if (count == 4)
                Dec::template integerAccumulate<4>(w.acc, dim, tile, g0, w.weightPairs,
                                                   w.weightScale, next);
            else if (count == 2)
                Dec::template integerAccumulate<2>(w.acc, dim, tile, g0, w.weightPairs,
                                                   w.weightScale, next);
            else
                Dec::template integerAccumulate<1>(w.acc, dim, tile, g0, w.weightPairs,
                                                   w.weightScale, next);
            g0 += count;
        }
    }
}

template <class Dec>
inline void accumulateOverHeads(const Workspace& w, int group, int dim, const Tile& tile) {
    for (int g0 = 0; g0 < group;) {
        const int count = headBlock(group - g0);
        if (count == 8)
            tileAccumulate<Dec, 8>(w.acc, dim, tile, g0, w.weights);
        else if (count == 4)
            tileAccumulate<Dec, 4>(w.acc, dim, tile, g0, w.weights);
        else if (count == 2)
            tileAccumulate<Dec, 2>(w.acc, dim, tile, g0, w.weights);
        else
            tileAccumulate<Dec, 1>(w.acc, dim, tile, g0, w.weights);
        g0 += count;
    }
}

std::size_t workspaceFloats(const SimdAttention& a) {
    Workspace unused[kSimdMaxHeadsPerItem];
    return workspaceLayout(a, nullptr, unused, a.headsPerItem);
}

// attendItemT's phases below are always inlined, so they compile as the one body they were split
// from (left to itself GCC keeps tileSoftmax out of line in the portable build).

// The work item's start: its queries scaled (the out-of-page K scale folds into the softmax
// scale, vLLM's k_scale), the accumulators, running max and sum cleared, the per-token scales 1.
[[gnu::always_inline]] inline void startItem(const SimdAttention& a, const Workspace& w,
                                             int request, int head) {
    const int group = a.groupSize, dim = a.headDim;
    const float queryScale = a.smScale * a.kScale[head];
    const float* q = a.q + (std::int64_t(request) * a.qHeads + std::int64_t(head) * group) * dim;
    for (std::int64_t i = 0; i < std::int64_t(group) * dim; ++i) {
        w.queries[i] = q[i] * queryScale;
        w.acc[i] = 0.0f;
    }
    for (int g = 0; g < group; ++g) {
        w.runMax[g] = -__builtin_inff();
        Vec::zero().store(w.runSum + g * Vec::W);
    }
    for (int i = 0; i < kTile; ++i)
        w.kScales[i] = w.vScales[i] = 1.0f;
}

// The queries as int16 for integer dots (see above), one scale per head; whether the head_dim
// allows integer dots (int32 sums cannot overflow up to 256).
template <class Dec>
[[gnu::always_inline]] inline bool quantizeQueries(const Workspace& w, int group, int dim) {
    bool integerDot = false;
    if constexpr (Dec::kIntegerDot) {
        integerDot = dim % Dec::kIntegerChunk == 0 && dim <= 256;
        for (int g = 0; integerDot && g < group; ++g) {
            const float* row = w.queries + std::int64_t(g) * dim;
            Vec high = Vec::zero();
            for (int c = 0; c < dim; c += Vec::W) {
                const Vec x = Vec::load(row + c);
                high = Vec::max(high, Vec::max(x, Vec::zero() - x));
            }
            const float largest = high.hmax();
            const float toInt = largest > 0.0f ? 32767.0f / largest : 0.0f;
            w.q16Scale[g] = largest / 32767.0f;
            for (int c = 0; c < dim; ++c) {
                const float x = row[c] * toInt;
                w.q16[std::int64_t(g) * dim + c] = std::int16_t(x >= 0.0f ? x + 0.5f : x - 0.5f);
            }
        }
    }
    return integerDot;
}

// Online softmax, once per tile of n tokens: the new max, one rescale of the running sum and
// the accumulators, the tile's weights (padding tokens have logit -inf, weight 0).
[[gnu::always_inline]] inline void tileSoftmax(const Workspace& w, int group, int dim, int n,
                                               bool scaled, const float* queryScales) {
    const float minusInf = -__builtin_inff();
    for (int g = 0; g < group; ++g) {
        float* logits = w.logits + g * kTile;
        float* weights = w.weights + g * kTile;
        if (scaled || queryScales) { // whole vectors: the lanes past n are overwritten below
            // integer dots' query scale first, then the keys' (the order the dots had before;
            // unscaled sides have kScales 1, exactly, from startItem)
            const Vec query = Vec::set1(queryScales ? queryScales[g] : 1.0f);
            for (int i = 0; i < kTile; i += Vec::W)
                (Vec::load(logits + i) * query * Vec::load(w.kScales + i)).store(logits + i);
        }
        for (int i = n; i < kTile; ++i)
            logits[i] = minusInf;
        Vec high = Vec::load(logits);
        for (int i = Vec::W; i < kTile; i += Vec::W)
            high = Vec::max(high, Vec::load(logits + i));
        const float tileMax = high.hmax();
        const float oldMax = w.runMax[g];
        const float newMax = oldMax > tileMax ? oldMax : tileMax;
        // e^(old - new) only when the max moved (after the first tiles it seldom does)
        const float correction = oldMax == minusInf ? 0.0f
                                 : oldMax == newMax ? 1.0f
                                                    : expv(Vec::set1(oldMax - newMax)).first();
        Vec sum = Vec::zero();
        const Vec shift = Vec::set1(newMax);
        for (int i = 0; i < kTile; i += Vec::W) {
            const Vec weight = expv(Vec::load(logits + i) - shift);
            sum = sum + weight;
            (scaled ? weight * Vec::load(w.vScales + i) : weight).store(weights + i);
        }
        float* runSum = w.runSum + g * Vec::W; // no horizontal sum per tile
        (Vec::load(runSum) * Vec::set1(correction) + sum).store(runSum);
        w.runMax[g] = newMax;
        if (correction != 1.0f) {
            float* acc = w.acc + std::int64_t(g) * dim;
            const Vec factor = Vec::set1(correction);
            for (int c = 0; c < dim; c += Vec::W)
                (Vec::load(acc + c) * factor).store(acc + c);
        }
    }
}

// The tile's V rows into the accumulators, in integers (weights quantized first) or floats.
template <class Dec>
[[gnu::always_inline]] inline void tileValues(const Workspace& w, int group, int dim,
                                              const Tile& tile, bool integerAccumulate,
                                              const Tile* next) {
    if (integerAccumulate) {
        if constexpr (Dec::kIntegerAccumulate)
            for (int g = 0; g < group; ++g)
                Dec::quantizeWeights(w.weights + g * kTile, w.weightPairs + g * (kTile / 2),
                                     w.weightScale + g);
        integerAccumulateOverHeads<Dec>(w, group, dim, tile, next);
    } else {
        accumulateOverHeads<Dec>(w, group, dim, tile);
    }
}

// The work item's result: each head's max logit, exp sum and partial output.
template <class Dec>
[[gnu::always_inline]] inline void writePartials(const SimdAttention& a, const Workspace& w,
                                                 int request, int head, int partition,
                                                 bool integerAccumulate) {
    const int group = a.groupSize, dim = a.headDim;
    for (int g = 0; g < group; ++g) {
        const std::int64_t index =
            (std::int64_t(request) * a.qHeads + std::int64_t(head) * group + g) * a.maxPartitions +
            partition;
        a.scratch.maxLogit[index] = w.runMax[g];
        a.scratch.expSum[index] = Vec::load(w.runSum + g * Vec::W).hsum();
        const float* acc = w.acc + std::int64_t(g) * dim;
        float* partial = a.scratch.partial + index * dim;
        if constexpr (Dec::kIntegerAccumulate) {
            if (integerAccumulate) {
                Dec::unpermute(acc, dim, partial);
                continue;
            }
        }
        for (int c = 0; c < dim; ++c)
            partial[c] = acc[c];
    }
}

// One work item: KV heads [firstHead, firstHead + heads) of one (request, partition). The heads
// take each tile in turn, so the item reads a page's heads in the order they lie in it (one run
// of heads x (K + V side) bytes), as the CTAs of all heads together do on a GPU: the CPU's
// prefetchers then stream whole pages instead of one head's slice of each.
template <class Dec> void attendItemT(const SimdAttention& a, std::int64_t item, float* base) {
    const int chunks = (a.kvHeads + a.headsPerItem - 1) / a.headsPerItem;
    const int chunk = int(item % chunks);
    const int partition = int((item / chunks) % a.maxPartitions);
    const int request = int(item / (std::int64_t(chunks) * a.maxPartitions));
    const int firstHead = chunk * a.headsPerItem;
    const int left = a.kvHeads - firstHead;
    const int heads = left < a.headsPerItem ? left : a.headsPerItem;
    const int group = a.groupSize, dim = a.headDim;
    const std::int64_t len = a.contextLens[request];
    const std::int64_t begin = std::int64_t(partition) * a.partitionTokens;
    if (begin >= len)
        return;
    const std::int64_t end = len < begin + a.partitionTokens ? len : begin + a.partitionTokens;
    Workspace w[kSimdMaxHeadsPerItem];
    workspaceLayout(a, base, w, heads);
    const bool scaled = a.k.kind == kSimdI8;
    bool integerDot = false;
    for (int h = 0; h < heads; ++h) {
        startItem(a, w[h], request, firstHead + h);
        integerDot = quantizeQueries<Dec>(w[h], group, dim);
    }
    const bool integerAccumulate = integerDot && Dec::kIntegerAccumulate;

    const std::int32_t* table = a.blockTables + std::int64_t(request) * a.maxBlocksPerSeq;
    // Unit u = (tile u / heads, head u % heads); phase 1 for unit u + kAhead, then phase 2 for u.
    const std::int64_t units = (end - begin + kTile - 1) / kTile * heads;
    Tile tiles[kRing];
    auto gather = [&](std::int64_t unit) {
        const std::int64_t first = begin + unit / heads * kTile;
        const int slot = int(unit % kRing);
        gatherTile(a, table, firstHead + int(unit % heads), first,
                   int(end - first < kTile ? end - first : kTile), tiles[slot], w[0].kBuffer[slot],
                   w[0].vBuffer[slot]);
    };
    for (std::int64_t unit = 0; unit < kAhead && unit < units; ++unit) {
        gather(unit);
        prefetchTokens(&tiles[unit % kRing], 0, kTile);
    }
    for (std::int64_t unit = 0; unit < units; ++unit) {
        const bool hasNext = unit + kAhead < units;
        if (hasNext)
            gather(unit + kAhead);
        const Tile& tile = tiles[unit % kRing];
        const Workspace& hw = w[unit % heads];
        const int n = tile.n;
        if (scaled)
            loadTileScales(tile, hw.kScales, hw.vScales);
        const Tile* next = hasNext ? &tiles[(unit + kAhead) % kRing] : nullptr;
        if (integerDot)
            integerLogitsOverHeads<Dec>(hw, group, dim, tile, next);
        else
            logitsOverHeads<Dec>(hw, group, dim, tile, next);
        tileSoftmax(hw, group, dim, n, scaled, integerDot ? hw.q16Scale : nullptr);
        tileValues<Dec>(hw, group, dim, tile, integerAccumulate, next);
    }
    for (int h = 0; h < heads; ++h)
        writePartials<Dec>(a, w[h], request, firstHead + h, partition, integerAccumulate);
}

// Sides of different kinds (never the case for the probe's formats) both go the generic way.
void attendItem(const SimdAttention& a, std::int64_t item, float* workspace) {
    if (a.k.kind != a.v.kind || a.k.kind == kSimdGeneric || a.k.kind == kSimdF32) {
        if (a.k.kind != a.v.kind && (a.k.kind != kSimdGeneric || a.v.kind != kSimdGeneric)) {
            SimdAttention generic = a;
            generic.k.kind = generic.v.kind = kSimdGeneric;
            return attendItemT<DecF32>(generic, item, workspace);
        }
        return attendItemT<DecF32>(a, item, workspace);
    }
    switch (a.k.kind) {
    case kSimdF16:
        return attendItemT<DecF16>(a, item, workspace);
    case kSimdBF16:
        return attendItemT<DecBF16>(a, item, workspace);
    case kSimdE4M3:
        return attendItemT<DecE4M3>(a, item, workspace);
    case kSimdE5M2:
        return attendItemT<DecE5M2>(a, item, workspace);
    case kSimdI8:
        return attendItemT<DecI8>(a, item, workspace);
    default:
        return attendItemT<DecF32>(a, item, workspace);
    }
}

// ---- The read stream (read_stream.h): decode's bandwidth yardstick, at the loads these kernels
// have.

// 64 bytes as eight 64-bit lanes (GCC's and Clang's vector extension): one AVX-512 add, two AVX2
// or four SSE2 ones, as this translation unit's flags allow; may_alias, as the buffer holds codes
// of any type.
typedef std::uint64_t ReadLanes __attribute__((vector_size(64), may_alias));

// The sum of `count` 64-byte blocks at `blocks` (64-byte aligned), four independent accumulators
// so the adds never limit it. A scalar 8-byte-load loop read 30-40% less than this on an Intel
// Xeon VM (two threads, 256 MiB and 1 GiB: 13-18 vs 19-27 GB/s), so it would have flattered every
// decode ratio.
std::uint64_t sumReadBlocks(const void* blocks, std::size_t count) {
    const ReadLanes* b = static_cast<const ReadLanes*>(blocks);
    ReadLanes s[4] = {};
    std::size_t i = 0;
    for (; i + 4 <= count; i += 4)
        for (int k = 0; k < 4; ++k)
            s[k] += b[i + std::size_t(k)];
    for (; i < count; ++i)
        s[0] += b[i];
    const ReadLanes all = s[0] + s[1] + s[2] + s[3];
    std::uint64_t total = 0;
    for (int k = 0; k < 8; ++k)
        total += all[k];
    return total;
}
