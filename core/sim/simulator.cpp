#include "simulator.h"

#include "core/engine.h"
#include "core/kv_cache.h"
#include "core/ledger.h"
#include "core/saturating.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <numeric>
#include <unordered_map>

namespace kvl::core::sim {

namespace {

// ---- the block pool (vllm/v1/core/block_pool.py) -------------------------------------------

// Keys of cached full blocks: owner (a request, or a prefix group) x block index x KV cache
// group, packed exactly (no hash collisions): 40 bits, 20 bits, 4 bits.
constexpr int kIndexBits = 20, kGroupBits = 4;
constexpr std::int64_t kMaxKeyIndex = std::int64_t{1} << kIndexBits;
constexpr int kMaxKeyGroups = 1 << kGroupBits;
constexpr std::uint64_t kPrefixOwnerBase = std::uint64_t{1} << 39;

std::uint64_t packKey(std::uint64_t owner, std::int64_t index, int group) {
    return (owner << (kIndexBits + kGroupBits)) |
           (static_cast<std::uint64_t>(index) << kGroupBits) | static_cast<std::uint64_t>(group);
}

class BlockPool {
public:
    // `identities`: keep each block's number, reference count, place in the free queue and
    // hash, as vLLM does. Without the prefix cache none of that changes what the scheduler
    // sees (it reads free and in-use counts only), so the pool then keeps the counts alone:
    // no per-block arrays to build for every run and no free-queue walk per block, the same
    // results.
    BlockPool(std::int32_t blocks, int groups, bool identities)
        : m_n(blocks), m_ids(identities), m_inUse(static_cast<std::size_t>(groups), 0) {
        m_free = m_n;
        if (!m_ids)
            return;
        m_ref.assign(static_cast<std::size_t>(blocks), 0);
        m_prev.resize(static_cast<std::size_t>(blocks) + 1);
        m_next.resize(static_cast<std::size_t>(blocks) + 1);
        m_key.assign(static_cast<std::size_t>(blocks), 0);
        m_group.assign(static_cast<std::size_t>(blocks), 0);
        // The free queue starts as every block in order; index m_n is its sentinel.
        for (std::int32_t i = 0; i <= m_n; ++i) {
            m_prev[static_cast<std::size_t>(i)] = i == 0 ? m_n : i - 1;
            m_next[static_cast<std::size_t>(i)] = i == m_n ? 0 : i + 1;
        }
        if (m_n == 0)
            m_next[0] = m_prev[0] = 0;
    }

    bool identities() const { return m_ids; }
    std::int64_t freeBlocks() const { return m_free; } // get_num_free_blocks (cached ones count)
    std::int64_t inUse(int g) const { return m_inUse[static_cast<std::size_t>(g)]; }
    std::int32_t ref(std::int32_t b) const { return m_ref[static_cast<std::size_t>(b)]; }

    // Without identities: n blocks of group g taken from, or given back to, the free count.
    void take(int group, std::int64_t n) {
        m_free -= n;
        m_inUse[static_cast<std::size_t>(group)] += n;
    }
    void give(int group, std::int64_t n) {
        m_free += n;
        m_inUse[static_cast<std::size_t>(group)] -= n;
    }

    // get_new_blocks: pops the free queue's head, evicting its cached hash if it has one.
    std::int32_t allocate(int group) {
        const std::int32_t b = m_next[static_cast<std::size_t>(m_n)];
        unlink(b);
        if (const std::uint64_t k = m_key[static_cast<std::size_t>(b)]; k != 0) {
            m_cached.erase(k);
            m_key[static_cast<std::size_t>(b)] = 0;
        }
        m_ref[static_cast<std::size_t>(b)] = 1;
        m_group[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(group);
        ++m_inUse[static_cast<std::size_t>(group)];
        return b;
    }
    // touch: a prefix-cache hit takes one more reference, out of the free queue if it was idle.
    void touch(std::int32_t b) {
        if (m_ref[static_cast<std::size_t>(b)]++ == 0) {
            unlink(b);
            ++m_inUse[m_group[static_cast<std::size_t>(b)]];
        }
    }
    // free_blocks: at reference 0 the block goes to the queue's tail, keeping its hash.
    void release(std::int32_t b) {
        if (--m_ref[static_cast<std::size_t>(b)] == 0) {
            const std::int32_t last = m_prev[static_cast<std::size_t>(m_n)];
            m_next[static_cast<std::size_t>(last)] = b;
            m_prev[static_cast<std::size_t>(b)] = last;
            m_next[static_cast<std::size_t>(b)] = m_n;
            m_prev[static_cast<std::size_t>(m_n)] = b;
            ++m_free;
            --m_inUse[m_group[static_cast<std::size_t>(b)]];
        }
    }
    std::int32_t lookup(std::uint64_t key) const {
        const auto it = m_cached.find(key);
        return it == m_cached.end() ? -1 : it->second;
    }
    // cache_full_blocks: one block per hash (a second copy of the same content stays uncached).
    void cache(std::int32_t b, std::uint64_t key) {
        if (m_key[static_cast<std::size_t>(b)] != 0)
            return;
        if (m_cached.emplace(key, b).second)
            m_key[static_cast<std::size_t>(b)] = key;
    }

private:
    void unlink(std::int32_t b) {
        const std::int32_t p = m_prev[static_cast<std::size_t>(b)];
        const std::int32_t n = m_next[static_cast<std::size_t>(b)];
        m_next[static_cast<std::size_t>(p)] = n;
        m_prev[static_cast<std::size_t>(n)] = p;
        --m_free;
    }
    std::int32_t m_n;
    bool m_ids = true;
    std::vector<std::int32_t> m_ref, m_prev, m_next;
    std::vector<std::uint64_t> m_key;
    std::vector<std::uint8_t> m_group;
    std::vector<std::int64_t> m_inUse;
    std::int64_t m_free = 0;
    std::unordered_map<std::uint64_t, std::int32_t> m_cached;
};

// ---- the KV cache groups, as the simulation uses them ---------------------------------------

struct Group {
    SpecType type = SpecType::FullAttention;
    std::int64_t blockSize = 16;
    std::int64_t window = 0;          // sliding W or chunked C
    std::int64_t fixedBlocks = 0;     // Mamba: blocks per request
    std::int64_t admissionBlocks = 0; // the ledger's, for the admission cap of windowed groups
    double bytesPerBlock = 0;         // read per step per block in use, one GPU, whole model
    bool cacheable = false;
};

struct Req {
    std::int64_t uid = 0;
    double arrival = 0;
    std::int64_t prompt = 0, output = 0, prefixId = -1, prefixTokens = 0;
    std::int64_t generated = 0, computed = 0;
    // Async scheduling: tokens scheduled whose sampled token has not come back yet
    // (Request.num_output_placeholders); always 0 without it.
    std::int64_t placeholders = 0;
    double firstScheduled = -1, firstToken = -1, lastToken = -1;
    // Per group: the block numbers (only where the pool keeps identities), -1 = freed (outside
    // a window); how many blocks the request has had (blocks.size() where it keeps numbers);
    // the first not freed (every block from it to `held` is live).
    std::vector<std::vector<std::int32_t>> blocks;
    std::vector<std::int64_t> held;
    std::vector<std::int64_t> firstLive;
    std::vector<std::int64_t> cachedUpTo; // per group: blocks hashed so far
    std::int64_t numTokens() const { return prompt + generated; }
};

// Keeps up to `cap` values; past that a uniform sample of them (reservoir), deterministic.
class Samples {
public:
    Samples(std::size_t cap, std::uint64_t seed)
        : m_cap(std::max<std::size_t>(1, cap)), m_rng(seed) {}
    void add(double v) {
        ++m_count;
        m_sum += v;
        m_max = std::max(m_max, v);
        if (m_values.size() < m_cap) {
            m_values.push_back(v);
        } else {
            const std::uint64_t j = m_rng.next() % static_cast<std::uint64_t>(m_count);
            if (j < m_cap)
                m_values[static_cast<std::size_t>(j)] = v;
        }
    }
    bool sampled() const { return m_count > static_cast<std::int64_t>(m_cap); }
    Percentiles percentiles() {
        Percentiles p;
        p.count = m_count;
        if (m_count == 0)
            return p;
        // Nearest rank: the smallest value with at least q of the values at or below it. Each
        // rank by nth_element on what lies above the previous one: the values a sort would
        // give, in linear time (ITL keeps one value per token).
        const auto n = m_values.size();
        auto rank = [&](double q) {
            const auto i =
                static_cast<std::size_t>(std::max(0.0, std::ceil(q * static_cast<double>(n)) - 1));
            return std::min(i, n - 1);
        };
        std::size_t from = 0;
        auto at = [&](double q) {
            const std::size_t i = std::max(rank(q), from);
            std::nth_element(m_values.begin() + static_cast<std::ptrdiff_t>(from),
                             m_values.begin() + static_cast<std::ptrdiff_t>(i), m_values.end());
            from = i;
            return m_values[i];
        };
        p.mean = m_sum / static_cast<double>(m_count);
        p.p50 = at(0.50);
        p.p90 = at(0.90);
        p.p99 = at(0.99);
        p.max = m_max;
        return p;
    }

private:
    std::size_t m_cap;
    Rng m_rng;
    std::vector<double> m_values;
    std::int64_t m_count = 0;
    double m_sum = 0, m_max = 0;
};

std::string seconds(double s) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f s", s);
    return b;
}

class Engine {
public:
    Engine(const Scenario& s, RequestSource& src, const SimOptions& o, std::int64_t expected)
        : m_s(s), m_src(src), m_o(o), m_expected(expected), m_cost(s, o.speed),
          m_ttft(o.maxSamples, 11), m_tpot(o.maxSamples, 12), m_e2e(o.maxSamples, 13),
          m_itl(o.maxSamples, 14) {}

    SimResult run();

private:
    bool setUp();
    std::int64_t tokensFor(const Group& g, std::int64_t tokens) const {
        return (g.type == SpecType::FullAttention || g.type == SpecType::Mla) && m_dcp > 1
                   ? ceilDiv(tokens, m_dcp)
                   : tokens;
    }
    std::int64_t blocksFor(std::size_t g, std::int64_t tokens) const {
        const Group& gr = m_groups[g];
        if (gr.type == SpecType::Mamba)
            return gr.fixedBlocks;
        return ceilDiv(tokensFor(gr, tokens), gr.blockSize);
    }
    std::uint64_t keyOf(const Req& r, std::size_t g, std::int64_t i) const {
        const std::int64_t b = m_groups[g].blockSize;
        const bool shared = r.prefixId >= 0 && (i + 1) * b <= r.prefixTokens;
        const std::uint64_t owner = shared
                                        ? kPrefixOwnerBase + static_cast<std::uint64_t>(r.prefixId)
                                        : static_cast<std::uint64_t>(r.uid);
        return packKey(owner, i, static_cast<int>(g));
    }
    void removeSkipped(Req& r, std::size_t g);
    void allocateUpTo(Req& r, std::int64_t tokens);
    void cacheFull(Req& r, std::int64_t tokens);
    bool allocateRunning(Req& r, std::int64_t numNew);
    bool admit(Req& r, std::int64_t& numNew, std::int64_t budget);
    void freeBlocks(Req& r);
    void preempt(int idx);
    int newReq(const ArrivingRequest& a);
    void recycle(int idx);
    void finish(int idx);
    void sample(bool force);
    bool pull();
    // Engine::run's parts (see there).
    enum class Flow { Proceed, Next, Stop, Abort };
    void start();
    void admitArrival(const ArrivingRequest& a);
    bool deliverToken(Req& r);
    template <typename Queue> void takeDone(Queue& queue, std::vector<int>& done);
    void retire(const std::vector<int>& done);
    void landInFlight();
    Flow step();
    bool admitDueArrivals();
    Flow idle();
    Flow checkLimits();
    void schedule();
    bool scheduleRunning(std::int64_t& budget);
    int preemptLast(std::int64_t& budget);
    void scheduleWaiting(std::int64_t& budget);
    Flow nothingScheduled();
    double stepSeconds(std::int64_t decode, std::int64_t prefill) const;
    void countStep();
    Flow runAsyncStep();
    Flow runStep();
    void wrapUp();
    void summarise();
    // SimOptions::stopBelowAttainment: even were every request not yet completed to meet the
    // SLO, good / completed would stay below it (it is largest when all `m_expected` complete).
    bool sloOutOfReach() const {
        if (!(m_o.stopBelowAttainment > 0) || m_expected <= 0)
            return false;
        const std::int64_t missed = m_r.completed - m_good;
        return static_cast<double>(m_expected - missed) / static_cast<double>(m_expected) <
               m_o.stopBelowAttainment;
    }

    Scenario m_s;
    RequestSource& m_src;
    SimOptions m_o;
    std::int64_t m_expected = 0; // requests the source will give (0 = not known): progress
    double m_reported = 0;       // the last progress fraction told
    StepCost m_cost;
    SimResult m_r;
    std::vector<Group> m_groups;
    std::unique_ptr<BlockPool> m_pool;
    std::int64_t m_dcp = 1;
    std::int64_t m_maxModelLen = 0, m_maxSeqs = 0, m_budget = 0;
    std::int64_t m_hitAlign = 1;
    bool m_caching = false;
    bool m_contiguous = false; // paging off: every request reserves max_model_len

    std::vector<Req> m_slab;
    std::vector<int> m_freeSlots;
    std::deque<int> m_waiting;
    std::vector<int> m_running;
    std::vector<std::pair<int, std::int64_t>> m_scheduled;
    // Async scheduling: the step on the GPU while the next one is scheduled, and when it ends.
    struct InFlight {
        int idx = 0;
        std::int64_t uid = 0;
        bool token = false; // the step samples a token for it (not a prefill chunk)
    };
    bool m_async = false;
    std::vector<InFlight> m_inFlight, m_next;
    double m_inFlightEnd = 0;
    std::int64_t m_nextUid = 1;
    double m_t = 0;
    ArrivingRequest m_pending;
    bool m_hasPending = false;
    bool m_closed = false;
    double m_closedUntil = 0;
    std::int64_t m_inSystem = 0; // requests arrived and not yet finished or dropped
    double m_lastArrival = -1;

    double m_integral = 0, m_runningIntegral = 0; // of in-system and running over time
    double m_windowIntegral = -1, m_windowRunning = -1;
    double m_sampleEvery = 0.01, m_nextSample = 0;
    Samples m_ttft, m_tpot, m_e2e, m_itl;
    std::int64_t m_good = 0;
    double m_sumLatency = 0, m_sumService = 0;
};

bool Engine::setUp() {
    Scenario sc = m_s;
    sc.workload.context = 1; // the pool and its groups; no request length is asked here
    // Contiguous reservation (paging off): the ledger says how many requests' max_model_len
    // reservations fit; the blocks below then only count what each holds, for the step's reads.
    std::int64_t slots = 0;
    if (!m_s.levers.paging.enabled) {
        const LedgerResult unpaged = computeLedger(sc);
        if (!unpaged.error.empty()) {
            m_r.error = unpaged.error;
            return false;
        }
        slots = std::min(unpaged.maxRequestsAtContext, effectiveMaxNumSeqs(m_s));
        if (slots <= 0) {
            m_r.error = "without paging each request reserves max_model_len (" +
                        withThousands(m_s.effectiveMaxModelLen()) +
                        " tokens) and not one reservation fits in the KV memory";
            return false;
        }
        sc.levers.paging.enabled = true;
        sc.levers.prefix.enabled = false;
        m_contiguous = true;
    }
    const LedgerResult led = computeLedger(sc);
    if (!led.error.empty()) {
        m_r.error = led.error;
        return false;
    }
    if ((!m_contiguous && led.numGpuBlocks <= 1) || led.kvCacheGroups.empty()) {
        m_r.error = led.kvCacheGroups.empty() ? "the model keeps no KV cache: nothing to simulate"
                                              : "the KV cache pool holds no blocks";
        return false;
    }
    // vLLM's BlockPool holds one null block back.
    m_r.numBlocks = led.numGpuBlocks - 1;
    // Bytes a block in use puts on a step's reads: the whole model's layers on one GPU (the
    // step cost takes each PP stage's share), without padding, as decodeStep's kvRead.
    std::vector<KvCacheGroupUsage> whole = led.kvCacheGroups;
    double ppScale = 1;
    if (m_s.hardware.pipelineParallel > 1) {
        Scenario one = sc;
        one.hardware.pipelineParallel = 1;
        const LedgerResult l1 = computeLedger(one);
        if (l1.kvCacheGroups.size() == whole.size())
            whole = l1.kvCacheGroups;
        else
            ppScale = m_s.hardware.pipelineParallel;
    }
    m_dcp = std::max(1, m_s.hardware.decodeContextParallel);
    m_caching = m_o.prefixCaching && m_dcp == 1;
    for (std::size_t i = 0; i < led.kvCacheGroups.size(); ++i) {
        const KvCacheGroupUsage& u = led.kvCacheGroups[i];
        Group g;
        g.type = u.type;
        g.blockSize = std::max(1, u.blockSize);
        g.window = u.window;
        g.admissionBlocks = u.admissionBlocks;
        g.fixedBlocks =
            u.type == SpecType::Mamba ? std::max<std::int64_t>(1, u.admissionBlocks) : 0;
        const KvCacheGroupUsage& w = whole[i];
        const double real =
            w.uniformType ? static_cast<double>(w.pageBytes)
                          : static_cast<double>(w.layers) * static_cast<double>(w.realPageBytes);
        g.bytesPerBlock = real * ppScale;
        g.cacheable = m_caching && g.type != SpecType::Mamba && i < kMaxKeyGroups;
        if (g.cacheable)
            m_hitAlign = std::lcm(m_hitAlign, g.blockSize);
        m_groups.push_back(g);
        std::string label(specTypeName(g.type));
        if (g.window > 0 && g.type != SpecType::FullAttention)
            label += " " + std::to_string(g.window);
        m_r.groupLabels.push_back(label);
    }
    m_maxModelLen = m_s.effectiveMaxModelLen();
    if (m_contiguous) {
        // Room for `slots` requests of max_model_len in every group: a running request always
        // finds its next block, as its reservation promised.
        std::int64_t perRequest = 0;
        for (std::size_t g = 0; g < m_groups.size(); ++g)
            perRequest = satAdd(perRequest, blocksFor(g, m_maxModelLen));
        m_r.numBlocks = satMul(slots, perRequest);
        m_caching = false;
        for (Group& g : m_groups)
            g.cacheable = false;
        m_r.notes.push_back("no paging: " + withThousands(slots) +
                            " requests run at once, each reserving max_model_len");
    }
    if (m_r.numBlocks > kMaxPoolBlocks) {
        m_r.error = "the pool has " + withThousands(m_r.numBlocks) +
                    " blocks; the simulation models at most " + withThousands(kMaxPoolBlocks) +
                    " (use a larger --block-size or less KV memory)";
        return false;
    }
    m_pool = std::make_unique<BlockPool>(static_cast<std::int32_t>(m_r.numBlocks),
                                         static_cast<int>(m_groups.size()), m_caching);
    m_maxSeqs = m_contiguous ? slots : effectiveMaxNumSeqs(m_s);
    m_budget = effectiveMaxNumBatchedTokens(m_s);
    m_r.maxNumSeqs = m_maxSeqs;
    m_r.maxNumBatchedTokens = m_budget;
    m_r.peakBlocksInUse.assign(m_groups.size(), 0);
    m_r.series.blocksInUse.assign(m_groups.size(), {});
    if (!m_cost.valid()) {
        m_r.error = "the GPU's bandwidth is not known: no step time";
        return false;
    }
    return true;
}

void Engine::removeSkipped(Req& r, std::size_t g) {
    const Group& gr = m_groups[g];
    std::int64_t firstUseful = 0;
    if (gr.type == SpecType::SlidingWindow)
        firstUseful = std::max<std::int64_t>(0, r.computed - gr.window + 1) / gr.blockSize;
    else if (gr.type == SpecType::ChunkedLocal && gr.window > 0)
        firstUseful = (r.computed / gr.window * gr.window) / gr.blockSize;
    else
        return;
    const auto end = std::min<std::int64_t>(firstUseful, r.held[g]);
    if (end <= r.firstLive[g])
        return;
    if (m_pool->identities()) {
        auto& blocks = r.blocks[g];
        // Freed last block first, as remove_skipped_blocks collects them.
        for (std::int64_t i = end - 1; i >= r.firstLive[g]; --i) {
            auto& b = blocks[static_cast<std::size_t>(i)];
            if (b >= 0)
                m_pool->release(b);
            b = -1;
        }
    } else {
        m_pool->give(static_cast<int>(g), end - r.firstLive[g]);
    }
    r.firstLive[g] = end;
}

void Engine::allocateUpTo(Req& r, std::int64_t tokens) {
    for (std::size_t g = 0; g < m_groups.size(); ++g) {
        const std::int64_t want = blocksFor(g, tokens);
        if (r.held[g] < want) {
            if (m_pool->identities()) {
                auto& blocks = r.blocks[g];
                while (static_cast<std::int64_t>(blocks.size()) < want)
                    blocks.push_back(m_pool->allocate(static_cast<int>(g)));
            } else {
                m_pool->take(static_cast<int>(g), want - r.held[g]);
            }
            r.held[g] = want;
        }
        if (m_pool->inUse(static_cast<int>(g)) > m_r.peakBlocksInUse[g])
            m_r.peakBlocksInUse[g] = m_pool->inUse(static_cast<int>(g));
    }
    std::int64_t total = 0;
    for (std::size_t g = 0; g < m_groups.size(); ++g)
        total += m_pool->inUse(static_cast<int>(g));
    m_r.peakBlocksTotal = std::max(m_r.peakBlocksTotal, total);
}

// cache_blocks: full blocks of known tokens get their hash, at allocation (a request admitted
// later in the same step can hit them, as in vLLM).
void Engine::cacheFull(Req& r, std::int64_t tokens) {
    if (!m_caching)
        return;
    const std::int64_t known = std::min(tokens, r.numTokens());
    for (std::size_t g = 0; g < m_groups.size(); ++g) {
        if (!m_groups[g].cacheable)
            continue;
        const std::int64_t full = std::min(known / m_groups[g].blockSize, kMaxKeyIndex);
        auto& blocks = r.blocks[g];
        for (std::int64_t i = r.cachedUpTo[g];
             i < full && i < static_cast<std::int64_t>(blocks.size()); ++i)
            if (blocks[static_cast<std::size_t>(i)] >= 0)
                m_pool->cache(blocks[static_cast<std::size_t>(i)], keyOf(r, g, i));
        r.cachedUpTo[g] = std::max(r.cachedUpTo[g], full);
    }
}

bool Engine::allocateRunning(Req& r, std::int64_t numNew) {
    for (std::size_t g = 0; g < m_groups.size(); ++g)
        removeSkipped(r, g);
    const std::int64_t tokens = r.computed + numNew;
    std::int64_t need = 0;
    for (std::size_t g = 0; g < m_groups.size(); ++g)
        need += std::max<std::int64_t>(0, blocksFor(g, tokens) - r.held[g]);
    if (need > m_pool->freeBlocks())
        return false;
    allocateUpTo(r, tokens);
    cacheFull(r, tokens);
    return true;
}

// A waiting request: the prefix-cache lookup, the whole-sequence admission check and the
// first chunk's blocks. numNew is set to the tokens it computes this step.
bool Engine::admit(Req& r, std::int64_t& numNew, std::int64_t budget) {
    const std::size_t groups = m_groups.size();
    // get_computed_blocks: the longest run of cached blocks every cacheable group has, never
    // the last token (its logits must be computed), aligned to every group's block.
    std::int64_t hit = 0;
    if (m_caching) {
        const std::int64_t maxHit = r.numTokens() - 1;
        hit = -1;
        for (std::size_t g = 0; g < groups; ++g) {
            if (!m_groups[g].cacheable)
                continue;
            const std::int64_t b = m_groups[g].blockSize;
            std::int64_t n = 0;
            while ((n + 1) * b <= maxHit && n < kMaxKeyIndex && m_pool->lookup(keyOf(r, g, n)) >= 0)
                ++n;
            hit = hit < 0 ? n * b : std::min(hit, n * b);
        }
        hit = std::max<std::int64_t>(0, hit);
        hit = hit / m_hitAlign * m_hitAlign;
    }
    numNew = std::min(r.numTokens() - hit, budget);
    // Idle cached blocks a hit takes leave the free queue, so they count against it.
    std::int64_t idleHits = 0;
    std::vector<std::int64_t> hitBlocks(groups, 0);
    for (std::size_t g = 0; g < groups; ++g) {
        if (!m_groups[g].cacheable || hit == 0)
            continue;
        hitBlocks[g] = hit / m_groups[g].blockSize;
        for (std::int64_t i = 0; i < hitBlocks[g]; ++i)
            if (m_pool->ref(m_pool->lookup(keyOf(r, g, i))) == 0)
                ++idleHits;
    }
    // scheduler_reserve_full_isl: the whole sequence must fit (windowed groups capped at their
    // admission blocks), then this step's blocks.
    std::int64_t full = idleHits, now = idleHits;
    const std::int64_t whole = std::min(r.numTokens(), m_maxModelLen);
    for (std::size_t g = 0; g < groups; ++g) {
        std::int64_t w = blocksFor(g, whole);
        const SpecType t = m_groups[g].type;
        if ((t == SpecType::SlidingWindow || t == SpecType::ChunkedLocal) &&
            m_groups[g].admissionBlocks > 0)
            w = std::min(w, m_groups[g].admissionBlocks);
        full += std::max<std::int64_t>(0, w - hitBlocks[g]);
        now += std::max<std::int64_t>(0, blocksFor(g, hit + numNew) - hitBlocks[g]);
    }
    if (full > m_pool->freeBlocks() || now > m_pool->freeBlocks())
        return false;
    for (std::size_t g = 0; g < groups; ++g)
        for (std::int64_t i = 0; i < hitBlocks[g]; ++i) {
            const std::int32_t b = m_pool->lookup(keyOf(r, g, i));
            m_pool->touch(b);
            r.blocks[g].push_back(b);
            ++r.held[g];
        }
    r.computed = hit;
    r.cachedUpTo.assign(groups, 0);
    for (std::size_t g = 0; g < groups; ++g) {
        r.cachedUpTo[g] = hitBlocks[g];
        removeSkipped(r, g);
    }
    m_r.prefixHitTokens += hit;
    allocateUpTo(r, hit + numNew);
    cacheFull(r, hit + numNew);
    return true;
}

void Engine::freeBlocks(Req& r) {
    for (std::size_t g = 0; g < m_groups.size(); ++g) {
        if (m_pool->identities()) {
            auto& blocks = r.blocks[g];
            for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
                if (*it >= 0)
                    m_pool->release(*it);
            blocks.clear();
        } else {
            m_pool->give(static_cast<int>(g), r.held[g] - r.firstLive[g]);
        }
        r.held[g] = 0;
        r.firstLive[g] = 0;
        r.cachedUpTo[g] = 0;
    }
}

void Engine::preempt(int idx) {
    Req& r = m_slab[static_cast<std::size_t>(idx)];
    freeBlocks(r);
    r.computed = 0;
    m_waiting.push_front(idx);
    ++m_r.preemptions;
}

int Engine::newReq(const ArrivingRequest& a) {
    int idx = 0;
    if (!m_freeSlots.empty()) {
        idx = m_freeSlots.back();
        m_freeSlots.pop_back();
    } else {
        idx = static_cast<int>(m_slab.size());
        m_slab.emplace_back();
    }
    Req& r = m_slab[static_cast<std::size_t>(idx)];
    r.uid = m_nextUid++;
    r.arrival = a.arrivalS;
    r.prompt = a.promptTokens;
    // vLLM stops a request at max_model_len.
    r.output = std::max<std::int64_t>(1, std::min(a.outputTokens, m_maxModelLen - a.promptTokens));
    r.prefixId = a.prefixId;
    r.prefixTokens = a.prefixId >= 0 ? std::min(a.prefixTokens, a.promptTokens) : 0;
    r.generated = r.computed = r.placeholders = 0;
    r.firstScheduled = r.firstToken = r.lastToken = -1;
    r.blocks.resize(m_pool->identities() ? m_groups.size() : 0);
    for (auto& b : r.blocks)
        b.clear();
    r.held.assign(m_groups.size(), 0);
    r.firstLive.assign(m_groups.size(), 0);
    r.cachedUpTo.assign(m_groups.size(), 0);
    return idx;
}

void Engine::recycle(int idx) {
    m_freeSlots.push_back(idx);
}

void Engine::finish(int idx) {
    Req& r = m_slab[static_cast<std::size_t>(idx)];
    freeBlocks(r);
    ++m_r.completed;
    m_r.promptTokens += r.prompt;
    m_r.outputTokens += r.generated;
    const double ttft = (r.firstToken - r.arrival) * 1e3;
    const double e2e = (m_t - r.arrival) * 1e3;
    m_ttft.add(ttft);
    m_e2e.add(e2e);
    bool good = m_o.sloTtftMs <= 0 || ttft <= m_o.sloTtftMs;
    if (r.generated > 1) {
        const double tpot = (m_t - r.firstToken) * 1e3 / static_cast<double>(r.generated - 1);
        m_tpot.add(tpot);
        good = good && (m_o.sloTpotMs <= 0 || tpot <= m_o.sloTpotMs);
    }
    if (good)
        ++m_good;
    m_sumLatency += m_t - r.arrival;
    m_sumService += m_t - r.firstScheduled;
    recycle(idx);
}

void Engine::sample(bool force) {
    if (!force && m_t < m_nextSample)
        return;
    TimeSeries& s = m_r.series;
    s.t.push_back(m_t);
    s.running.push_back(static_cast<std::int64_t>(m_running.size()));
    s.waiting.push_back(static_cast<std::int64_t>(m_waiting.size()));
    s.preempted.push_back(m_r.preemptions);
    for (std::size_t g = 0; g < m_groups.size(); ++g)
        s.blocksInUse[g].push_back(m_pool->inUse(static_cast<int>(g)));
    m_nextSample = m_t + m_sampleEvery;
    const auto cap = static_cast<std::size_t>(std::max(2, m_o.seriesPoints));
    if (s.t.size() > cap) {
        // Keep every other point and sample half as often.
        auto halve = [](auto& v) {
            std::size_t j = 0;
            for (std::size_t i = 0; i < v.size(); i += 2)
                v[j++] = v[i];
            v.resize(j);
        };
        halve(s.t);
        halve(s.running);
        halve(s.waiting);
        halve(s.preempted);
        for (auto& b : s.blocksInUse)
            halve(b);
        m_sampleEvery *= 2;
    }
}

bool Engine::pull() {
    if (!m_src.next(m_pending))
        return false;
    if (m_closed)
        m_pending.arrivalS = m_t;
    return true;
}

// The engine loop follows vLLM's EngineCore.step() around Scheduler.schedule()
// (vllm/v1/engine/core.py, vllm/v1/core/sched/scheduler.py): the arrivals due join the waiting
// queue, the running requests are scheduled and then the waiting ones, the step runs, and the
// requests it finished give their blocks back (update_from_output).
SimResult Engine::run() {
    if (!setUp())
        return std::move(m_r);
    start();
    while (true) {
        const Flow f = step();
        if (f == Flow::Abort)
            return std::move(m_r);
        if (f == Flow::Stop)
            break;
    }
    wrapUp();
    return std::move(m_r);
}

void Engine::start() {
    m_async = m_o.asyncScheduling.value_or(m_s.engine.asyncScheduling);
    m_closed = m_src.closedLoop();
    m_closedUntil = m_src.closedLoopUntilS();
    std::int64_t toStart = m_closed ? m_src.concurrency() : 0;
    m_hasPending = m_closed ? false : pull();
    // A closed loop starts its clients at 0.
    for (; toStart > 0; --toStart) {
        if (!pull())
            break;
        admitArrival(m_pending);
    }
    sample(true);
}

void Engine::admitArrival(const ArrivingRequest& a) {
    if (a.promptTokens + 1 > m_maxModelLen) {
        ++m_r.rejected; // vLLM refuses a prompt of max_model_len or more
        return;
    }
    const int idx = newReq(a);
    m_waiting.push_back(idx);
    ++m_r.arrived;
    ++m_inSystem;
    m_integral += m_t - a.arrivalS; // it was in the system since it arrived
    m_lastArrival = a.arrivalS;
}

// Async scheduling (vllm/v1/engine/core.py, step_with_batch_queue, with a batch queue of
// two): step k+1 is scheduled while step k runs, right after step k-1's output was
// processed, so at step k's start; step k's tokens come back, and the requests it finished
// free their blocks and slots, after that (AsyncScheduler._update_request_with_output).
// What that changes here: an arrival waits for the step after the one it could have joined
// and a finished request's blocks come back a step later; the decode tokens of a running
// request follow one another with no gap, as without it.
// A sampled token reaches its request at m_t: its first token or one more gap, and whether
// it was the last one (the request is then marked done, output -1, for the sweeps below).
bool Engine::deliverToken(Req& r) {
    ++r.generated;
    if (r.firstToken < 0)
        r.firstToken = m_t;
    else if (m_o.interTokenLatency)
        m_itl.add((m_t - r.lastToken) * 1e3);
    r.lastToken = m_t;
    if (r.generated < r.output)
        return false;
    r.output = -1;
    return true;
}

// Moves the requests of `queue` marked done (output -1) to `done`, in queue order.
template <typename Queue> void Engine::takeDone(Queue& queue, std::vector<int>& done) {
    queue.erase(std::remove_if(queue.begin(), queue.end(),
                               [&](int idx) {
                                   if (m_slab[static_cast<std::size_t>(idx)].output >= 0)
                                       return false;
                                   done.push_back(idx);
                                   return true;
                               }),
                queue.end());
}

// The finished requests leave; in a closed loop each one's client sends its next request.
void Engine::retire(const std::vector<int>& done) {
    for (const int idx : done) {
        finish(idx);
        --m_inSystem;
        if (m_closed && (m_closedUntil <= 0 || m_t < m_closedUntil) && pull())
            admitArrival(m_pending);
    }
}

// Async: the step in flight ends; its tokens reach their requests.
void Engine::landInFlight() {
    const double dt = m_inFlightEnd - m_t;
    m_integral += dt * static_cast<double>(m_inSystem);
    m_runningIntegral += dt * static_cast<double>(m_running.size());
    m_t = m_inFlightEnd;
    bool anyDone = false;
    for (const InFlight& f : m_inFlight) {
        Req& r = m_slab[static_cast<std::size_t>(f.idx)];
        if (!f.token || r.uid != f.uid || r.output < 0)
            continue;
        // Also for a request preempted since: its sampled token is delivered (upstream
        // keeps the placeholders of a preempted request).
        r.placeholders = std::max<std::int64_t>(0, r.placeholders - 1);
        anyDone = deliverToken(r) || anyDone;
    }
    m_inFlight.clear();
    if (!anyDone)
        return;
    std::vector<int> done;
    takeDone(m_running, done);
    takeDone(m_waiting, done);
    retire(done);
}

// One turn of the engine loop: what the loop does next.
Engine::Flow Engine::step() {
    if (!admitDueArrivals())
        return Flow::Abort;
    if (!m_closed && !m_hasPending && m_windowIntegral < 0) {
        // The arrivals are over: the time-averages are taken over [0, last arrival].
        const double back = std::max(0.0, m_t - m_lastArrival);
        m_windowIntegral = m_integral - back * static_cast<double>(m_inSystem);
        m_windowRunning = m_runningIntegral - back * static_cast<double>(m_running.size());
    }
    if (m_running.empty() && m_waiting.empty())
        return idle();
    if (const Flow f = checkLimits(); f != Flow::Proceed)
        return f;
    schedule();
    if (m_scheduled.empty())
        return nothingScheduled();
    if (m_r.steps < m_o.traceSteps) {
        auto& rec = m_r.stepTrace.emplace_back();
        for (const auto& [idx, k] : m_scheduled)
            rec.emplace_back(m_slab[static_cast<std::size_t>(idx)].uid, k);
    }
    return m_async ? runAsyncStep() : runStep();
}

// The arrivals due by now join the waiting queue; false on an error (m_r.error says it).
bool Engine::admitDueArrivals() {
    while (m_hasPending && m_pending.arrivalS <= m_t) {
        if (m_pending.arrivalS < m_lastArrival) {
            m_r.error = "arrivals out of order: " + std::to_string(m_pending.arrivalS) +
                        " s after " + std::to_string(m_lastArrival) + " s";
            return false;
        }
        admitArrival(m_pending);
        m_hasPending = pull();
        if (static_cast<std::int64_t>(m_waiting.size()) > m_o.maxWaiting)
            break;
    }
    if (!m_src.error().empty()) {
        m_r.error = m_src.error();
        return false;
    }
    return true;
}

// No request is running or waiting: the step in flight lands, or the clock jumps to the next
// arrival, or the run is over.
Engine::Flow Engine::idle() {
    if (!m_inFlight.empty()) {
        landInFlight();
        sample(false);
        return Flow::Next;
    }
    if (!m_hasPending)
        return Flow::Stop;
    m_t = m_pending.arrivalS;
    return Flow::Next;
}

// The run's limits (waiting queue, cancel, steps) and its progress report.
Engine::Flow Engine::checkLimits() {
    if (static_cast<std::int64_t>(m_waiting.size()) > m_o.maxWaiting) {
        m_r.capped = "the waiting queue passed " + withThousands(m_o.maxWaiting) + " requests at " +
                     seconds(m_t) + ": the arrivals outrun the replica; stopped there";
        return Flow::Stop;
    }
    if (m_o.cancel && m_r.steps % kCancelCheckSteps == 0 &&
        m_o.cancel->load(std::memory_order_relaxed)) {
        m_r.cancelled = true;
        m_r.error = "cancelled at " + seconds(m_t) + " of simulated time";
        return Flow::Abort;
    }
    if (m_o.progress && m_expected > 0 && m_r.steps % kProgressEverySteps == 0) {
        const double f = std::min(0.999, static_cast<double>(m_r.completed + m_r.rejected) /
                                             static_cast<double>(m_expected));
        if (f > m_reported) {
            m_reported = f;
            m_o.progress(f);
        }
    }
    if (m_r.steps >= m_o.maxSteps) {
        m_r.capped = "the simulation reached its limit of " + withThousands(m_o.maxSteps) +
                     " engine steps at " + seconds(m_t) + "; stopped there";
        return Flow::Stop;
    }
    return Flow::Proceed;
}

// Scheduler.schedule(): the running requests first, then, unless one was preempted, the
// waiting ones, within the token budget; fills m_scheduled.
void Engine::schedule() {
    m_scheduled.clear();
    std::int64_t budget = m_budget;
    if (!scheduleRunning(budget))
        scheduleWaiting(budget);
}

// The running requests, in order; true if one was preempted.
bool Engine::scheduleRunning(std::int64_t& budget) {
    bool preempted = false;
    std::size_t i = 0;
    while (i < m_running.size() && budget > 0) {
        const int idx = m_running[i];
        Req& r = m_slab[static_cast<std::size_t>(idx)];
        // Async scheduling (vllm/v1/core/sched/scheduler.py, schedule()): a request whose
        // last token is already in flight is not scheduled again, and one with a token in
        // flight decodes the next before that token is back (num_output_placeholders).
        if (r.placeholders > 0 && r.computed + 2 - r.placeholders >= r.prompt + r.output) {
            ++i;
            continue;
        }
        std::int64_t numNew = std::min(r.numTokens() + r.placeholders - r.computed, budget);
        numNew = std::min(numNew, m_maxModelLen - 1 - r.computed);
        if (numNew <= 0) {
            ++i;
            continue;
        }
        bool fits = true;
        while (!allocateRunning(r, numNew)) {
            const int victim = preemptLast(budget);
            preempted = true;
            if (victim == idx) {
                fits = false;
                break;
            }
        }
        if (!fits)
            break;
        m_scheduled.emplace_back(idx, numNew);
        budget -= numNew;
        ++i;
    }
    return preempted;
}

// _preempt_request: the last of the running queue (FCFS) gives its blocks, and the tokens
// scheduled for it this step go back to the budget; returns it.
int Engine::preemptLast(std::int64_t& budget) {
    const int victim = m_running.back();
    m_running.pop_back();
    if (auto it = std::find_if(m_scheduled.begin(), m_scheduled.end(),
                               [&](const auto& p) { return p.first == victim; });
        it != m_scheduled.end()) {
        budget += it->second;
        m_scheduled.erase(it);
    }
    preempt(victim);
    return victim;
}

// The waiting requests, in order, while the budget and max_num_seqs allow.
void Engine::scheduleWaiting(std::int64_t& budget) {
    while (!m_waiting.empty() && budget > 0 &&
           static_cast<std::int64_t>(m_running.size()) < m_maxSeqs) {
        const int idx = m_waiting.front();
        Req& r = m_slab[static_cast<std::size_t>(idx)];
        std::int64_t numNew = 0;
        if (!admit(r, numNew, budget))
            break;
        m_waiting.pop_front();
        m_running.push_back(idx);
        if (r.firstScheduled < 0)
            r.firstScheduled = m_t;
        m_scheduled.emplace_back(idx, numNew);
        budget -= numNew;
    }
}

// The scheduler scheduled nothing.
Engine::Flow Engine::nothingScheduled() {
    if (!m_inFlight.empty()) {
        // Async: every running request waits for its token in flight; the engine waits
        // for that step's output, then schedules again.
        landInFlight();
        sample(false);
        return sloOutOfReach() ? Flow::Stop : Flow::Next;
    }
    // Nothing can run: the head of the queue needs more blocks than the pool has.
    if (m_running.empty() && !m_waiting.empty()) {
        const int idx = m_waiting.front();
        m_waiting.pop_front();
        freeBlocks(m_slab[static_cast<std::size_t>(idx)]);
        recycle(idx);
        ++m_r.rejected;
        --m_inSystem;
        if (m_r.notes.empty())
            m_r.notes.push_back("a request needs more KV blocks than the pool holds; "
                                "it was dropped (vLLM would wait forever)");
        return Flow::Next;
    }
    m_r.error = "the scheduler made no progress (a bug)";
    return Flow::Abort;
}

// The step's time from its decode and prefill tokens and the KV and state bytes it reads.
double Engine::stepSeconds(std::int64_t decode, std::int64_t prefill) const {
    double kv = 0, state = 0;
    for (std::size_t g = 0; g < m_groups.size(); ++g) {
        const double bytes =
            static_cast<double>(m_pool->inUse(static_cast<int>(g))) * m_groups[g].bytesPerBlock;
        (m_groups[g].type == SpecType::Mamba ? state : kv) += bytes;
    }
    return m_cost.stepMs(decode, prefill, kv, state) / 1e3;
}

void Engine::countStep() {
    ++m_r.steps;
    m_r.peakRunning = std::max(m_r.peakRunning, static_cast<std::int64_t>(m_running.size()));
    m_r.peakWaiting = std::max(m_r.peakWaiting, static_cast<std::int64_t>(m_waiting.size()));
}

// The step, scheduled while the one in flight runs.
Engine::Flow Engine::runAsyncStep() {
    std::int64_t decode = 0, prefill = 0;
    m_next.clear();
    for (const auto& [idx, k] : m_scheduled) {
        Req& r = m_slab[static_cast<std::size_t>(idx)];
        if (k == 1 && r.computed >= r.prompt)
            ++decode;
        else
            prefill += k;
        // AsyncScheduler._update_after_schedule: the tokens count as computed now,
        // and a step that reaches the end of the known tokens and those in flight
        // samples one more (a placeholder until it comes back).
        r.computed += k;
        const bool token = r.computed >= r.numTokens() + r.placeholders;
        if (token)
            ++r.placeholders;
        m_next.push_back({idx, r.uid, token});
    }
    const double dt = stepSeconds(decode, prefill);
    const double start = m_inFlight.empty() ? m_t : m_inFlightEnd;
    countStep();
    if (!m_inFlight.empty())
        landInFlight(); // the previous step ends as this one starts
    std::swap(m_inFlight, m_next);
    m_inFlightEnd = start + dt;
    sample(false);
    return sloOutOfReach() ? Flow::Stop : Flow::Next;
}

// The step (update_from_output follows it at once).
Engine::Flow Engine::runStep() {
    std::int64_t decode = 0, prefill = 0;
    for (const auto& [idx, k] : m_scheduled) {
        const Req& r = m_slab[static_cast<std::size_t>(idx)];
        if (k == 1 && r.computed >= r.prompt)
            ++decode;
        else
            prefill += k;
    }
    const double dt = stepSeconds(decode, prefill);
    m_integral += dt * static_cast<double>(m_inSystem);
    m_runningIntegral += dt * static_cast<double>(m_running.size());
    m_t += dt;
    countStep();

    bool anyDone = false;
    for (const auto& [idx, k] : m_scheduled) {
        Req& r = m_slab[static_cast<std::size_t>(idx)];
        r.computed += k;
        if (r.computed < r.numTokens())
            continue; // a prefill chunk: no token yet
        anyDone = deliverToken(r) || anyDone;
    }
    if (anyDone) {
        std::vector<int> done;
        takeDone(m_running, done);
        retire(done);
        if (sloOutOfReach())
            return Flow::Stop;
    }
    sample(false);
    return Flow::Next;
}

// After the loop: why it stopped early, the time-averages, percentiles and rates.
void Engine::wrapUp() {
    if (m_r.capped.empty() && sloOutOfReach()) {
        m_r.sloOutOfReach = true;
        char share[32];
        std::snprintf(share, sizeof share, "%g%%", m_o.stopBelowAttainment * 100);
        m_r.capped = withThousands(m_r.completed - m_good) + " of " + withThousands(m_expected) +
                     " requests had missed the SLO at " + seconds(m_t) +
                     ", so it can no longer hold for " + share + " of them; stopped there";
    }
    sample(true);
    if (m_windowIntegral < 0) {
        m_windowIntegral = m_integral;
        m_windowRunning = m_runningIntegral;
    }
    m_r.endS = m_t;
    m_r.lastArrivalS = std::max(0.0, m_lastArrival);
    const double window = m_closed ? m_t : m_r.lastArrivalS;
    if (window > 0) {
        m_r.meanInSystem = m_windowIntegral / window;
        m_r.meanRunning = m_windowRunning / window;
    }
    summarise();
    if (m_o.progress)
        m_o.progress(1.0);
}

// The latency percentiles, means over the requests served and the rates.
void Engine::summarise() {
    m_r.ttftMs = m_ttft.percentiles();
    m_r.tpotMs = m_tpot.percentiles();
    m_r.e2eMs = m_e2e.percentiles();
    m_r.itlMs = m_itl.percentiles();
    if (m_ttft.sampled())
        m_r.notes.push_back("percentiles from a uniform sample of " +
                            withThousands(static_cast<std::int64_t>(m_o.maxSamples)) +
                            " requests (means and maxima over all)");
    if (m_r.completed > 0) {
        m_r.meanLatencyS = m_sumLatency / static_cast<double>(m_r.completed);
        m_r.meanServiceS = m_sumService / static_cast<double>(m_r.completed);
        // Over the requests served: a request refused for its length is a property of the
        // workload, not of the rate (notes count them).
        m_r.sloAttainment = static_cast<double>(m_good) / static_cast<double>(m_r.completed);
    }
    if (m_t > 0) {
        m_r.throughputRps = static_cast<double>(m_r.completed) / m_t;
        m_r.outputTokensPerS = static_cast<double>(m_r.outputTokens) / m_t;
        m_r.goodputRps = static_cast<double>(m_good) / m_t;
    }
    if (m_r.rejected > 0)
        m_r.notes.push_back(withThousands(m_r.rejected) +
                            " requests were refused: longer than max_model_len or the pool");
}

} // namespace

SimResult simulate(const Scenario& s, RequestSource& source, const SimOptions& o) {
    Engine e(s, source, o, 0);
    return e.run();
}

SimResult simulate(const Scenario& s, const WorkloadSpec& w, const SimOptions& o) {
    if (const auto p = workloadProblem(w)) {
        SimResult r;
        r.error = "--" + p->option + ": " + p->message;
        return r;
    }
    SyntheticSource src(w);
    const std::int64_t expected =
        w.arrival == ArrivalKind::ClosedLoop && w.durationS > 0 ? 0 : w.requests;
    Engine e(s, src, o, expected);
    return e.run();
}

double staticRateBound(const Scenario& s, const WorkloadSpec& w, const SpeedAssumptions& a) {
    // The requests that run at once at prompt + output tokens (memory and max_num_seqs), and
    // the GPU time one of them costs: its prefill, compute-bound and taken alone, plus its share
    // of the decode steps at that batch. Prefill chunks also carry the other requests' decode
    // tokens, so the simulation can beat this a little; it seeds the rate search.
    const double prompt = w.prompt.expected();
    const double output = w.output.expected();
    Scenario sc = s;
    sc.workload.context = std::max<std::int64_t>(1, std::llround(prompt + output));
    const LedgerResult led = computeLedger(sc);
    const std::int64_t running = std::max<std::int64_t>(1, led.requestsYouCanRun);
    const double decodeMs = decodeStep(s, running, std::llround(prompt + output / 2), a).stepMs;
    const double ms = prefillMsEstimate(s, std::llround(prompt), a) +
                      output * decodeMs / static_cast<double>(running);
    return ms > 0 ? 1e3 / ms : 0;
}

RateSearch sustainableRate(const Scenario& s, WorkloadSpec w, const SimOptions& o,
                           double attainment, double relTolerance) {
    RateSearch out;
    w.arrival = w.arrival == ArrivalKind::ClosedLoop ? ArrivalKind::Poisson : w.arrival;
    // The runs report nothing themselves: the search tells its own progress, run by run, as
    // the runs done over those done plus the bisection steps still to go (an estimate that
    // only shrinks), so the fraction never goes back.
    SimOptions one = o;
    one.progress = nullptr;
    // Each run settles only whether the rate meets the SLO: one past the knee stops at its
    // first misses beyond what the attainment allows (the same answer, sooner).
    one.stopBelowAttainment = attainment;
    double reported = 0;
    auto tell = [&](double lo, double hi) {
        if (!o.progress)
            return;
        const double width = std::max(hi - lo, 0.0);
        const double left = hi > 0 && width > relTolerance * hi
                                ? std::ceil(std::log2(width / (relTolerance * hi))) + 1
                                : 0;
        const double f = std::min(0.99, out.runs / (out.runs + left + 1.0));
        if (f > reported) {
            reported = f;
            o.progress(f);
        }
    };
    auto cancelled = [&] { return o.cancel && o.cancel->load(std::memory_order_relaxed); };
    auto meets = [&](double rate, SimResult* keep) {
        w.rate = rate;
        SimResult r = simulate(s, w, one);
        ++out.runs;
        if (r.cancelled)
            out.cancelled = true;
        const bool ok = r.error.empty() && r.capped.empty() && r.sloAttainment >= attainment;
        if (!r.error.empty() && out.note.empty())
            out.note = r.error;
        if (keep)
            *keep = std::move(r);
        return ok;
    };
    auto stop = [&] {
        out.cancelled = true;
        out.found = false;
        out.rate = 0;
        out.note = "cancelled after " + std::to_string(out.runs) + " runs";
        return out;
    };
    auto done = [&] {
        if (o.progress)
            o.progress(1.0);
        return out;
    };
    double guess = staticRateBound(s, w, o.speed);
    if (!(guess > 0))
        guess = 1;
    double lo = 0, hi = std::min(kMaxRate, 2 * guess);
    SimResult best;
    // Grow the upper end until a rate fails.
    while (!cancelled() && meets(hi, &best)) {
        lo = hi;
        out.found = true;
        out.atRate = std::move(best);
        if (hi >= kMaxRate) {
            out.rate = hi;
            out.note = "the SLO holds up to the largest rate tried";
            return done();
        }
        hi = std::min(kMaxRate, hi * 4);
        tell(0, hi);
    }
    if (cancelled() || out.cancelled)
        return stop();
    if (!out.note.empty() && !out.found)
        return done();
    // The lower end: a rate that meets it, or none above kMinRate.
    if (!out.found) {
        double probe = hi / 4;
        while (probe >= kMinRate && !cancelled() && !meets(probe, &best)) {
            probe /= 4;
            tell(probe, hi);
        }
        if (cancelled() || out.cancelled)
            return stop();
        if (probe < kMinRate) {
            out.upperRate = hi;
            out.note = "no rate meets the SLO, down to " + std::to_string(kMinRate) +
                       " req/s: requests alone miss it";
            return done();
        }
        hi = std::min(hi, probe * 4);
        lo = probe;
        out.found = true;
        out.atRate = std::move(best);
    }
    tell(lo, hi);
    while (hi - lo > relTolerance * hi) {
        if (cancelled())
            return stop();
        const double mid = (lo + hi) / 2;
        if (meets(mid, &best)) {
            lo = mid;
            out.atRate = std::move(best);
        } else {
            if (out.cancelled)
                return stop();
            hi = mid;
        }
        tell(lo, hi);
    }
    out.rate = lo;
    out.upperRate = hi;
    return done();
}

void rankPlanBySlo(PlanResult& plan, double rate, WorkloadSpec w, const SimOptions& o,
                   double attainment, int layoutsPerGpu) {
    plan.rankedBySlo = true;
    if (w.arrival == ArrivalKind::ClosedLoop)
        w.arrival = ArrivalKind::Poisson;
    for (GpuPlan& g : plan.gpus) {
        const int n = std::min<int>(layoutsPerGpu, static_cast<int>(g.layouts.size()));
        for (int i = 0; i < n; ++i) {
            Deployment& d = g.layouts[static_cast<std::size_t>(i)];
            // DP replicas are independent engines; each takes its share of the arrivals.
            w.rate = rate / std::max(1, d.layout.dp);
            const SimResult r = simulate(d.scenario, w, o);
            d.sloChecked = true;
            d.sloAttainment = r.sloAttainment;
            d.ttftP99Ms = r.ttftMs.p99;
            d.tpotP99Ms = r.tpotMs.p99;
            d.sloNote = !r.error.empty() ? r.error : r.capped;
            d.meetsSlo = r.error.empty() && r.capped.empty() && r.sloAttainment >= attainment;
        }
        std::stable_sort(g.layouts.begin(), g.layouts.begin() + n,
                         [](const Deployment& a, const Deployment& b) {
                             if (a.meetsSlo != b.meetsSlo)
                                 return a.meetsSlo;
                             return a.layout.gpus() < b.layout.gpus();
                         });
    }
}

std::string engineNotSimulated(core::Engine engine) {
    return "the traffic simulation follows vLLM v1's scheduler and block pool; " +
           std::string(engineDisplayName(engine)) +
           "'s are not simulated (vLLM only; ledger and plan size every engine's pool)";
}

} // namespace kvl::core::sim
