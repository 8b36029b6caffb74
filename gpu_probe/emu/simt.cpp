// The SIMT execution layer (simt.h): blocks of fibers, barriers, warp exchanges, shared memory,
// the allocation registry and fault reports.
//
// Under AddressSanitizer the fibers switch through ucontext with Boost's own ASan annotations
// (BOOST_USE_UCONTEXT + BOOST_USE_ASAN, documented in Boost.Context's "Sanitizers" section), as
// ASan needs to be told about every stack switch; otherwise through fcontext, the fast default.
#if defined(__SANITIZE_ADDRESS__)
#define BOOST_USE_UCONTEXT
#define BOOST_USE_ASAN
#endif
#include "gpu_probe/emu/simt.h"
#include "core/enum_names.h"

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
// Debian builds libboost_context for fcontext only, so the ucontext implementation's one
// out-of-line function is not in it. It is the calling thread's current activation record,
// which starts as a record of the thread's own (main) context and lives as long as the thread.
namespace boost::context::detail {
fiber_activation_record*& fiber_activation_record::current() noexcept {
    thread_local const std::unique_ptr<fiber_activation_record> mainContext =
        std::make_unique<fiber_activation_record>();
    thread_local fiber_activation_record* record = mainContext.get();
    return record;
}
} // namespace boost::context::detail
#endif

thread_local uint3 threadIdx{0, 0, 0};
thread_local uint3 blockIdx{0, 0, 0};
thread_local uint3 blockDim{1, 1, 1};
thread_local uint3 gridDim{1, 1, 1};

namespace kvl::emu {

namespace {

namespace bctx = boost::context;

constexpr std::size_t kStackBytes = std::size_t(256) << 10; // per CUDA thread
constexpr std::size_t kStaticSharedBytes = std::size_t(48) << 10;
constexpr std::size_t kCanaryBytes = 256;
constexpr std::uint8_t kPoison = 0xFF;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr std::size_t kDefaultDynamicSharedLimit = std::size_t(48) << 10;
constexpr std::size_t kMaxDynamicShared = std::size_t(227) << 10; // sm_90's opt-in maximum
constexpr std::uint64_t kPoisonWord = ~std::uint64_t(0);

std::atomic<int> g_fault{0};

// ---- allocation registry

std::mutex g_allocMutex;
std::map<std::uintptr_t, std::size_t>& allocations() {
    static std::map<std::uintptr_t, std::size_t> map;
    return map;
}

// ---- kernel attributes

std::mutex g_attrMutex;
std::map<const void*, int>& maxDynamicShared() {
    static std::map<const void*, int> map;
    return map;
}

std::uint64_t mix(std::uint64_t x) { // splitmix64's finalizer
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::string coord(uint3 v) {
    return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

std::string where(const std::source_location& loc) {
    std::string file = loc.file_name();
    const auto slash = file.find_last_of('/');
    if (slash != std::string::npos)
        file = file.substr(slash + 1);
    return file + ":" + std::to_string(loc.line());
}

// Stacks with a PROT_NONE guard page below each (an overflowing kernel thread faults at once
// instead of corrupting its neighbour), kept for reuse by the OS thread that made them.
class StackPool {
public:
    ~StackPool() {
        for (void* base : m_all)
            munmap(base, kStackBytes + guard());
    }
    bctx::stack_context allocate() {
        void* base = nullptr;
        if (!m_free.empty()) {
            base = m_free.back();
            m_free.pop_back();
        } else {
            base = mmap(nullptr, kStackBytes + guard(), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (base == MAP_FAILED)
                throw std::bad_alloc();
            mprotect(base, guard(), PROT_NONE);
            m_all.push_back(base);
        }
        bctx::stack_context sc;
        sc.size = kStackBytes;
        sc.sp = static_cast<char*>(base) + guard() + kStackBytes;
        return sc;
    }
    void deallocate(bctx::stack_context& sc) noexcept {
        m_free.push_back(static_cast<char*>(sc.sp) - kStackBytes - guard());
    }

private:
    static std::size_t guard() { return std::size_t(sysconf(_SC_PAGESIZE)); }
    std::vector<void*> m_free, m_all;
};
thread_local StackPool t_stacks;

struct PooledStack {
    bctx::stack_context allocate() { return t_stacks.allocate(); }
    void deallocate(bctx::stack_context& sc) noexcept { t_stacks.deallocate(sc); }
};

// Thrown inside a fiber to unwind a block that cannot finish (deadlock or a fatal fault).
struct Abort {};

// One launch: its configuration and the first fault of any block.
struct Launch {
    const char* name;
    uint3 grid, block;
    std::size_t dynamicShared;
    std::uint64_t seed;
    int preemptEvery;
    const std::function<void()>* body;

    std::mutex mutex;
    std::atomic<bool> failed{false};
    cudaError_t error = cudaSuccess;
    std::uint64_t firstBlock = ~std::uint64_t(0);
    std::string message;
    std::int64_t faults = 0;

    void fault(std::uint64_t blockLinear, cudaError_t code, const std::string& text) {
        const std::lock_guard<std::mutex> lock(mutex);
        ++faults;
        failed = true;
        if (blockLinear < firstBlock) { // the lowest block's fault, whatever the OS threads did
            firstBlock = blockLinear;
            error = code;
            message = text;
        }
    }
};

enum class State : std::uint8_t { Ready, AtBarrier, AtExchange, Done };

struct Thread {
    bctx::fiber fiber; // the suspended thread, held by the scheduler
    bctx::fiber sink;  // the scheduler, held by the thread while it runs
    uint3 idx{0, 0, 0};
    int warp = 0, lane = 0;
    State state = State::Ready;
    bool queued = false;
    std::uint64_t result = 0;
    std::source_location at;
    std::size_t staticCursor = 0;
};

struct PendingExchange {
    bool live = false;
    unsigned mask = 0, arrived = 0;
    Exchange kind = Exchange::Sync;
    int width = 32;
    std::source_location at;
    std::uint64_t values[32] = {};
    int src[32] = {};
};

struct Warp {
    unsigned lanes = 0;                   // lanes that exist (a partial last warp has fewer)
    unsigned exited = 0;                  // lanes that have returned
    std::vector<PendingExchange> pending; // slots reused: live ones are the warp's open exchanges
};

// The CUDA intrinsic each exchange stands for, as fault reports name it.
constexpr core::EnumRow<Exchange, const char*> kExchangeNames[] = {
    {Exchange::Sync, "__syncwarp"},     {Exchange::Idx, "__shfl_sync"},
    {Exchange::Up, "__shfl_up_sync"},   {Exchange::Down, "__shfl_down_sync"},
    {Exchange::Xor, "__shfl_xor_sync"}, {Exchange::Ballot, "__ballot_sync"},
    {Exchange::Any, "__any_sync"},      {Exchange::All, "__all_sync"}};

const char* exchangeName(Exchange kind) {
    return core::lookupOr(kExchangeNames, kind, "?");
}

class Block;
thread_local Block* t_block = nullptr;
thread_local Thread* t_thread = nullptr;
thread_local LaunchOptions t_options;
thread_local std::uint64_t t_launches = 0;
thread_local std::string t_lastError;

class Block {
public:
    Block(Launch& launch, std::uint64_t linear, uint3 index)
        : m_launch(launch), m_linear(linear), m_index(index),
          m_rng(mix(launch.seed ^ mix(linear))) {
        const unsigned n = launch.block.x * launch.block.y * launch.block.z;
        m_threads.resize(n);
        m_warps.resize((n + 31) / 32);
        for (unsigned i = 0; i < n; ++i) {
            Thread& t = m_threads[i];
            t.idx = {i % launch.block.x, (i / launch.block.x) % launch.block.y,
                     i / (launch.block.x * launch.block.y)};
            t.warp = int(i / 32);
            t.lane = int(i % 32);
            m_warps[i / 32].lanes |= 1u << (i % 32);
        }
        m_alive = int(n);
        // [static shared][dynamic shared][canary], all poisoned.
        m_shared.assign(kStaticSharedBytes + launch.dynamicShared + kCanaryBytes + 128, kPoison);
        const auto base = reinterpret_cast<std::uintptr_t>(m_shared.data());
        m_static = reinterpret_cast<std::uint8_t*>((base + 127) / 128 * 128);
        m_dynamic = m_static + kStaticSharedBytes;
    }

    void run() {
        t_block = this;
        blockIdx = m_index;
        std::vector<int> ready(m_threads.size());
        for (std::size_t i = 0; i < ready.size(); ++i) {
            ready[i] = int(i);
            m_threads[i].fiber =
                bctx::fiber(std::allocator_arg, PooledStack{}, [this, i](bctx::fiber&& sink) {
                    return entry(m_threads[i], std::move(sink));
                });
        }
        while (!m_stop) {
            std::shuffle(ready.begin(), ready.end(), m_rng);
            for (int id : ready) {
                m_threads[std::size_t(id)].queued = false;
                resume(m_threads[std::size_t(id)]);
                afterYield(id);
                if (m_stop)
                    break;
            }
            if (m_stop)
                break;
            if (m_next.empty()) {
                if (m_alive > 0)
                    deadlock();
                break;
            }
            ready.swap(m_next);
            m_next.clear();
        }
        if (m_stop)
            abortAll();
        checkCanary();
        t_block = nullptr;
        t_thread = nullptr;
    }

    // ---- called by the running thread

    void syncThreads(const std::source_location& at) {
        Thread& t = *t_thread;
        if (m_atBarrier > 0 && (std::strcmp(at.file_name(), m_barrierAt.file_name()) != 0 ||
                                at.line() != m_barrierAt.line())) {
            fatal(cudaErrorLaunchFailure, "divergent __syncthreads: reached at " + where(at) +
                                              " and at " + where(m_barrierAt) +
                                              " by other threads of the block");
            yield(t);
            return;
        }
        if (m_atBarrier == 0)
            m_barrierAt = at;
        ++m_atBarrier;
        t.state = State::AtBarrier;
        t.at = at;
        completeBarrier();
        yield(t);
    }

    std::uint64_t exchange(unsigned mask, std::uint64_t value, Exchange kind, int arg, int width,
                           const std::source_location& at) {
        Thread& t = *t_thread;
        Warp& w = m_warps[std::size_t(t.warp)];
        const unsigned bit = 1u << t.lane;
        if (!(mask & bit)) {
            fault(cudaErrorLaunchFailure,
                  std::string(exchangeName(kind)) + " at " + where(at) + " with mask " + hex(mask) +
                      ", which leaves out the calling lane " + std::to_string(t.lane));
            return kind == Exchange::Sync ? 0 : value;
        }
        if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
            fault(cudaErrorLaunchFailure, std::string(exchangeName(kind)) + " at " + where(at) +
                                              " with width " + std::to_string(width) +
                                              " (a power of two up to 32)");
            return value;
        }
        PendingExchange* e = nullptr;
        PendingExchange* freeSlot = nullptr;
        for (auto& p : w.pending) {
            if (!p.live) {
                freeSlot = freeSlot ? freeSlot : &p;
                continue;
            }
            if (p.mask == mask && !(p.arrived & bit)) {
                e = &p;
                break;
            }
            if ((p.mask & mask) && p.mask != mask) {
                fatal(cudaErrorLaunchFailure,
                      "warp " + std::to_string(t.warp) + ": " + exchangeName(kind) + " at " +
                          where(at) + " with mask " + hex(mask) + " meets " + exchangeName(p.kind) +
                          " at " + where(p.at) + " with mask " + hex(p.mask));
                yield(t);
                return value;
            }
        }
        if (!e) {
            if (!freeSlot) {
                w.pending.emplace_back();
                freeSlot = &w.pending.back();
            }
            e = freeSlot;
            e->live = true;
            e->arrived = 0;
            e->mask = mask;
            e->kind = kind;
            e->width = width;
            e->at = at;
        } else if (e->kind != kind || e->width != width) {
            fatal(cudaErrorLaunchFailure, "warp " + std::to_string(t.warp) + ": lane " +
                                              std::to_string(t.lane) + " calls " +
                                              exchangeName(kind) + " at " + where(at) +
                                              " while lanes " + hex(e->arrived) + " wait in " +
                                              exchangeName(e->kind) + " at " + where(e->at));
            yield(t);
            return value;
        }
        e->values[t.lane] = value;
        e->src[t.lane] = sourceLane(kind, t.lane, arg, width);
        e->arrived |= bit;
        t.state = State::AtExchange;
        t.at = at;
        completeExchanges(w, t.warp);
        yield(t);
        return t.result;
    }

    void* staticShared(std::size_t bytes, std::size_t align) {
        Thread& t = *t_thread;
        const std::size_t n = t.staticCursor++;
        if (n < m_staticSlots.size()) {
            if (m_staticSlots[n].second != bytes)
                fault(cudaErrorLaunchFailure,
                      "static shared array " + std::to_string(n) + " declared with " +
                          std::to_string(bytes) + " bytes here and " +
                          std::to_string(m_staticSlots[n].second) + " bytes by another thread");
            return m_static + m_staticSlots[n].first;
        }
        const std::size_t offset = (m_staticUsed + align - 1) / align * align;
        if (offset + bytes > kStaticSharedBytes) {
            fatal(cudaErrorLaunchOutOfResources,
                  "static shared memory of the block exceeds 48 KiB");
            yield(t);
        }
        m_staticSlots.emplace_back(offset, bytes);
        m_staticUsed = offset + bytes;
        return m_static + offset;
    }
    void* dynamicShared() const { return m_dynamic; }
    unsigned activeMask() const {
        const Warp& w = m_warps[std::size_t(t_thread->warp)];
        return w.lanes & ~w.exited;
    }

    void preempt() {
        Thread& t = *t_thread;
        m_next.push_back(int(&t - m_threads.data()));
        t.queued = true;
        yield(t);
    }

    // A fault the block can run past (a bad access reads zeros, a store is dropped), by
    // `thread` (the running one by default).
    void fault(cudaError_t code, const std::string& what, const Thread* thread = t_thread) {
        m_launch.fault(m_linear, code, prefix(thread) + what);
    }
    // A fault after which the block cannot continue.
    void fatal(cudaError_t code, const std::string& what) {
        fault(code, what);
        m_stop = true;
    }

    std::string prefix(const Thread* thread) const {
        std::string s = std::string(m_launch.name) + ": ";
        if (thread)
            s += "thread " + coord(thread->idx) + " of ";
        return s + "block " + coord(m_index) + ": ";
    }

private:
    static std::string hex(unsigned v) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%08x", v);
        return buf;
    }

    static int sourceLane(Exchange kind, int lane, int arg, int width) {
        const int start = lane & ~(width - 1);
        switch (kind) {
        case Exchange::Idx:
            return start + (((arg % width) + width) % width);
        case Exchange::Up:
            return lane - arg >= start ? lane - arg : lane;
        case Exchange::Down:
            return lane + arg < start + width ? lane + arg : lane;
        case Exchange::Xor: {
            const int src = lane ^ arg;
            // CUDA: a lane may read an earlier group, not a later one (it keeps its own value).
            return src >= 0 && src < 32 && src < start + width ? src : lane;
        }
        default:
            return lane;
        }
    }

    bctx::fiber entry(Thread& t, bctx::fiber&& sink) {
        t.sink = std::move(sink);
        try {
            if (!m_stop)
                (*m_launch.body)();
        } catch (const Abort&) {
        } catch (const std::exception& e) {
            fault(cudaErrorLaunchFailure, std::string("the kernel threw: ") + e.what());
        }
        t.state = State::Done;
        return std::move(t.sink);
    }

    void resume(Thread& t) {
        t_thread = &t;
        threadIdx = t.idx;
        t.fiber = std::move(t.fiber).resume();
        t_thread = nullptr;
    }

    void yield(Thread& t) {
        t.sink = std::move(t.sink).resume();
        if (m_aborting)
            throw Abort{};
    }

    void queue(int id) {
        Thread& t = m_threads[std::size_t(id)];
        if (!t.queued && t.state != State::Done) {
            t.queued = true;
            m_next.push_back(id);
        }
    }

    void afterYield(int id) {
        Thread& t = m_threads[std::size_t(id)];
        if (t.state != State::Done)
            return;  // waiting, or preempted and queued already
        if (t.fiber) // finished fibers hand back an empty continuation
            return;
        --m_alive;
        Warp& w = m_warps[std::size_t(t.warp)];
        w.exited |= 1u << t.lane;
        completeBarrier();
        completeExchanges(w, t.warp);
    }

    void completeBarrier() {
        if (m_atBarrier == 0 || m_atBarrier < m_alive)
            return;
        // Exited threads count as arrived (what sm_70+ hardware does); everyone else is here.
        m_atBarrier = 0;
        for (std::size_t i = 0; i < m_threads.size(); ++i)
            if (m_threads[i].state == State::AtBarrier) {
                m_threads[i].state = State::Ready;
                queue(int(i));
            }
    }

    void completeExchanges(Warp& w, int warp) {
        for (PendingExchange& e : w.pending) {
            // Lanes that do not exist or have exited never arrive; the others all have.
            if (!e.live || ((e.arrived | w.exited | ~w.lanes) & e.mask) != e.mask || e.arrived == 0)
                continue;
            std::uint64_t vote = 0;
            const bool voting =
                e.kind == Exchange::Ballot || e.kind == Exchange::Any || e.kind == Exchange::All;
            for (int lane = 0; voting && lane < 32; ++lane)
                if ((e.arrived >> lane) & 1u)
                    vote |= std::uint64_t(e.values[lane] != 0) << lane;
            for (int lane = 0; lane < 32; ++lane) {
                if (!((e.arrived >> lane) & 1u))
                    continue;
                Thread& t = m_threads[std::size_t(warp * 32 + lane)];
                switch (e.kind) {
                case Exchange::Sync:
                    t.result = 0;
                    break;
                case Exchange::Ballot:
                    t.result = vote;
                    break;
                case Exchange::Any:
                    t.result = vote != 0;
                    break;
                case Exchange::All:
                    t.result = vote == e.arrived;
                    break;
                default: {
                    const int src = e.src[lane];
                    if ((e.arrived >> src) & 1u) {
                        t.result = e.values[src];
                    } else {
                        // The hardware leaves this undefined: a kernel that relies on it is wrong.
                        fault(cudaErrorLaunchFailure,
                              std::string(exchangeName(e.kind)) + " at " + where(e.at) +
                                  " reads lane " + std::to_string(src) + ", which " +
                                  (((w.exited >> src) & 1u) ? "has exited"
                                                            : "is not in the mask " + hex(e.mask)),
                              &t);
                        t.result = kPoisonWord;
                    }
                }
                }
                t.state = State::Ready;
                queue(warp * 32 + lane);
            }
            e.live = false;
        }
    }

    void deadlock() {
        // Group the waiting threads by the place they wait at.
        std::map<std::string, std::pair<int, std::string>> groups;
        for (const Thread& t : m_threads) {
            if (t.state == State::Done)
                continue;
            const std::string key =
                (t.state == State::AtBarrier ? std::string("__syncthreads") : "a warp intrinsic") +
                " at " + where(t.at);
            auto& g = groups[key];
            if (g.first++ == 0)
                g.second = coord(t.idx);
        }
        std::string text = "deadlock:";
        for (const auto& [key, g] : groups)
            text += " " + std::to_string(g.first) + " thread(s) (first " + g.second + ") wait in " +
                    key + ";";
        text.pop_back();
        fatal(cudaErrorLaunchTimeout, text);
    }

    void abortAll() {
        m_aborting = true;
        for (std::size_t i = 0; i < m_threads.size(); ++i) {
            Thread& t = m_threads[i];
            while (t.fiber) // resumes into yield(), which throws Abort and unwinds the thread
                resume(t);
        }
    }

    void checkCanary() {
        const std::uint8_t* canary = m_dynamic + m_launch.dynamicShared;
        for (std::size_t i = 0; i < kCanaryBytes; ++i)
            if (canary[i] != kPoison) {
                m_launch.fault(m_linear, cudaErrorLaunchFailure,
                               std::string(m_launch.name) + ": block " + coord(m_index) +
                                   ": shared memory written " + std::to_string(i) +
                                   " bytes past the end of its " +
                                   std::to_string(m_launch.dynamicShared) + " dynamic bytes");
                return;
            }
    }

    Launch& m_launch;
    std::uint64_t m_linear;
    uint3 m_index;
    std::mt19937_64 m_rng;
    std::vector<Thread> m_threads;
    std::vector<Warp> m_warps;
    std::vector<int> m_next;
    int m_alive = 0;
    int m_atBarrier = 0;
    std::source_location m_barrierAt;
    bool m_stop = false, m_aborting = false;
    std::vector<std::uint8_t> m_shared;
    std::uint8_t* m_static = nullptr;
    std::uint8_t* m_dynamic = nullptr;
    std::vector<std::pair<std::size_t, std::size_t>> m_staticSlots;
    std::size_t m_staticUsed = 0;
};

// The calling thread's block, or a clear failure when an intrinsic runs outside a kernel.
Block& block() {
    if (!t_block || !t_thread) {
        std::fprintf(stderr, "kvl::emu: a CUDA intrinsic was called outside an emulated kernel\n");
        std::terminate();
    }
    return *t_block;
}

thread_local std::mt19937 t_preemptRng{1};
thread_local int t_preemptEvery = 0;

void resetPreemption() {
    t_preemptCountdown =
        t_preemptEvery > 0 ? 1 + int(t_preemptRng() % unsigned(2 * t_preemptEvery)) : (1 << 30);
}

void runBlocks(Launch& launch, const std::vector<std::uint64_t>& order,
               std::atomic<std::size_t>& next) {
    t_preemptEvery = launch.preemptEvery;
    for (;;) {
        const std::size_t k = next.fetch_add(1);
        if (k >= order.size() || launch.failed.load())
            break;
        const std::uint64_t linear = order[k];
        const uint3 index{unsigned(linear % launch.grid.x),
                          unsigned((linear / launch.grid.x) % launch.grid.y),
                          unsigned(linear / (std::uint64_t(launch.grid.x) * launch.grid.y))};
        t_preemptRng.seed(std::uint32_t(mix(launch.seed + linear)));
        resetPreemption();
        blockDim = launch.block;
        gridDim = launch.grid;
        try {
            Block b(launch, linear, index);
            b.run();
        } catch (const std::bad_alloc&) {
            launch.fault(linear, cudaErrorMemoryAllocation,
                         std::string(launch.name) + ": out of host memory for the block's fibers");
        }
    }
    t_preemptCountdown = 1 << 30;
}

} // namespace

void injectFault(Fault fault) {
    g_fault = int(fault);
}
Fault injectedFault() {
    return Fault(g_fault.load(std::memory_order_relaxed));
}

void registerAllocation(const void* begin, std::size_t bytes) {
    const std::lock_guard<std::mutex> lock(g_allocMutex);
    allocations()[reinterpret_cast<std::uintptr_t>(begin)] = bytes;
}

void unregisterAllocation(const void* begin) {
    const std::lock_guard<std::mutex> lock(g_allocMutex);
    allocations().erase(reinterpret_cast<std::uintptr_t>(begin));
}

Span findAllocation(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const std::lock_guard<std::mutex> lock(g_allocMutex);
    auto& map = allocations();
    auto it = map.upper_bound(a);
    if (it == map.begin())
        return {};
    --it;
    if (a >= it->first + it->second && !(a == it->first && it->second == 0))
        return {};
    return {it->first, it->first + it->second};
}

void badAccess(std::uintptr_t address, std::size_t bytes, std::size_t align, bool write, Span span,
               const std::source_location& at) {
    std::string what = std::string(write ? "store" : "load") + " of " + std::to_string(bytes) +
                       " bytes at " + where(at) + ": ";
    if (span.begin == span.end) {
        what += "the pointer is not from a device allocation";
    } else if (address % align != 0) {
        what += "misaligned (address % " + std::to_string(align) + " = " +
                std::to_string(address % align) + ")";
    } else {
        const auto size = span.end - span.begin;
        if (address >= span.begin)
            what += "offset " + std::to_string(address - span.begin) + " of a " +
                    std::to_string(size) + "-byte allocation (" +
                    std::to_string(address + bytes - span.end) + " bytes past its end)";
        else
            what += std::to_string(span.begin - address) + " bytes before a " +
                    std::to_string(size) + "-byte allocation";
    }
    const cudaError_t code =
        address % align != 0 ? cudaErrorMisalignedAddress : cudaErrorIllegalAddress;
    if (t_block)
        t_block->fault(code, what);
}

void preemptionPoint() {
    resetPreemption();
    if (t_block && t_thread)
        t_block->preempt();
}

void syncThreads(const std::source_location& at) {
    block().syncThreads(at);
}

std::uint64_t warpExchange(unsigned mask, std::uint64_t value, Exchange kind, int arg, int width,
                           const std::source_location& at) {
    return block().exchange(mask, value, kind, arg, width, at);
}

void* dynamicShared() {
    return block().dynamicShared();
}

void* staticShared(std::size_t bytes, std::size_t align) {
    return block().staticShared(bytes, align);
}

unsigned activeMask() {
    return block().activeMask();
}

void setLaunchOptions(const LaunchOptions& options) {
    t_options = options;
    t_launches = 0;
}

LaunchOptions launchOptions() {
    return t_options;
}

const std::string& lastLaunchError() {
    return t_lastError;
}

void setMaxDynamicShared(const void* kernel, int bytes) {
    const std::lock_guard<std::mutex> lock(g_attrMutex);
    maxDynamicShared()[kernel] = bytes;
}

cudaError_t launch(const char* name, const void* kernel, dim3 grid, dim3 block,
                   std::size_t dynamicSharedBytes, const std::function<void()>& body) {
    t_lastError.clear();
    auto refuse = [&](cudaError_t code, const std::string& why) {
        t_lastError = std::string(name) + ": launch refused: " + why;
        return code;
    };
    const std::uint64_t threads = std::uint64_t(block.x) * block.y * block.z;
    if (threads == 0 || threads > kMaxThreadsPerBlock || block.z > 64)
        return refuse(cudaErrorInvalidConfiguration, "block " + coord({block.x, block.y, block.z}) +
                                                         " has " + std::to_string(threads) +
                                                         " threads (1-1024)");
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
        grid.z > 65535)
        return refuse(cudaErrorInvalidConfiguration,
                      "grid " + coord({grid.x, grid.y, grid.z}) + " (x 1-2^31-1, y and z 1-65535)");
    std::size_t limit = kDefaultDynamicSharedLimit;
    {
        const std::lock_guard<std::mutex> lock(g_attrMutex);
        auto it = maxDynamicShared().find(kernel);
        if (it != maxDynamicShared().end())
            limit = std::size_t(it->second);
    }
    if (dynamicSharedBytes > std::min(limit, kMaxDynamicShared))
        return refuse(cudaErrorInvalidValue,
                      std::to_string(dynamicSharedBytes) + " bytes of dynamic shared memory, " +
                          std::to_string(limit) +
                          " allowed (above 48 KiB only after cudaFuncSetAttribute)");

    Launch launch;
    launch.name = name;
    launch.grid = {grid.x, grid.y, grid.z};
    launch.block = {block.x, block.y, block.z};
    launch.dynamicShared = dynamicSharedBytes;
    launch.seed = mix(t_options.seed + t_launches++); // every launch its own schedule
    launch.preemptEvery = t_options.preemptEvery;
    launch.body = &body;
    const std::uint64_t blocks = std::uint64_t(grid.x) * grid.y * grid.z;
    std::vector<std::uint64_t> order(blocks);
    for (std::uint64_t i = 0; i < blocks; ++i)
        order[i] = i;
    std::mt19937_64 rng(mix(launch.seed));
    std::shuffle(order.begin(), order.end(), rng);
    std::atomic<std::size_t> next{0};
    const int workers =
        int(std::clamp<std::uint64_t>(std::uint64_t(std::max(1, t_options.threads)), 1, blocks));
    std::vector<std::thread> pool;
    try {
        for (int i = 1; i < workers; ++i)
            pool.emplace_back([&] { runBlocks(launch, order, next); });
    } catch (const std::system_error&) {
        // fewer OS threads: the ones started (and this one) run every block
    }
    runBlocks(launch, order, next);
    for (auto& t : pool)
        t.join();
    if (!launch.failed)
        return cudaSuccess;
    t_lastError = launch.message;
    if (launch.faults > 1)
        t_lastError += " (" + std::to_string(launch.faults) + " faults in all)";
    return launch.error;
}

} // namespace kvl::emu
