// The Traffic tab's recompute: widgets::computeTraffic (every applied ladder step's latency
// curve over its rate grid, each step's sustainable-rate bisection and the timeline run), the
// one function the tab's worker thread and the exports call, timed on this thread for a few
// scenarios against issue 30's budget of 1 s. Not a CTest test: the machine is shared, so it
// prints each time beside the budget and the process's CPU time in the same run.
//
// Each case also prints where the time goes (the sustainable-rate searches, the rate grids,
// the timeline run) and a digest of every figure the tab shows, so that a change made for
// speed can be seen to change no result.
//
// usage: bench_traffic [--repeats N] [--case SUBSTRING]

#include "widgets/traffic/traffic_sim.h"

#include "core/io/catalog.h"
#include "core/io/scenario_file.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

// FNV-1a over every figure the tab shows (each point's percentiles and attainment, each step's
// sustainable rate, the timeline run's series): equal digests before and after a change to the
// simulation's speed show that it changed no result.
struct Digest {
    std::uint64_t h = 1469598103934665603ull;
    void add(const void* p, std::size_t n) {
        const auto* b = static_cast<const unsigned char*>(p);
        for (std::size_t i = 0; i < n; ++i)
            h = (h ^ b[i]) * 1099511628211ull;
    }
    void add(double v) { add(&v, sizeof v); }
    void add(std::int64_t v) { add(&v, sizeof v); }
    void add(const kvl::core::sim::Percentiles& p) {
        add(p.mean);
        add(p.p50);
        add(p.p90);
        add(p.p99);
        add(p.max);
        add(p.count);
    }
};

std::uint64_t digestOf(const kvl::widgets::TrafficResult& r) {
    Digest d;
    for (const auto& st : r.steps) {
        d.add(st.sustainableRate);
        d.add(static_cast<std::int64_t>(st.found));
        for (const auto& p : st.points) {
            d.add(p.rate);
            d.add(p.ttftMs);
            d.add(p.tpotMs);
            d.add(p.attainment);
            d.add(static_cast<std::int64_t>(p.meets));
        }
    }
    d.add(r.currentRate);
    d.add(r.current.ttftMs);
    d.add(r.current.tpotMs);
    d.add(r.current.e2eMs);
    d.add(r.current.steps);
    d.add(r.current.preemptions);
    for (const double t : r.current.series.t)
        d.add(t);
    for (const auto v : r.current.series.running)
        d.add(v);
    for (const auto v : r.current.series.waiting)
        d.add(v);
    for (const auto& g : r.current.series.blocksInUse)
        for (const auto v : g)
            d.add(v);
    return d.h;
}

double cpuSeconds() {
    return double(std::clock()) / CLOCKS_PER_SEC;
}

struct Case {
    const char* name;
    const char* model;
    const char* gpu;
    int tp;
    std::int64_t context;
    std::int64_t prefix = 0; // shared prefix tokens (the prefix lever, and half the requests)
};

} // namespace

int main(int argc, char** argv) {
    int repeats = 3;
    std::string only; // a substring of the case names: run only those
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--repeats" && i + 1 < argc)
            repeats = std::max(1, std::atoi(argv[++i]));
        else if (a == "--case" && i + 1 < argc)
            only = argv[++i];
        else {
            std::fprintf(stderr, "usage: bench_traffic [--repeats N] [--case SUBSTRING]\n");
            return 2;
        }
    }
    const std::vector<Case> cases = {
        {"window default: Llama-3-8B, H100, 4K", nullptr, nullptr, 1, 0},
        {"Llama-3.1-8B, H100, 8K", "llama-3.1-8b", "h100-80gb", 1, 8192},
        {"Llama-3.1-70B, 4 x H100 (TP 4), 8K", "llama-3.1-70b", "h100-80gb", 4, 8192},
        {"gpt-oss-120b (sliding + full), H200, 32K", "gpt-oss-120b", "h200", 1, 32768},
        {"Llama-3.1-8B, H100, 8K, half share a 2K prefix", "llama-3.1-8b", "h100-80gb", 1, 8192,
         2048},
    };
    constexpr double kBudgetS = 1.0;
    std::printf(
        "bench_traffic: the Traffic tab's recompute (computeTraffic), best and worst of %d, "
        "against issue 30's %.0f s budget\n",
        repeats, kBudgetS);
    bool allWithin = true;
    for (const Case& c : cases) {
        if (!only.empty() && std::string(c.name).find(only) == std::string::npos)
            continue;
        kvl::core::Scenario s = kvl::io::defaultScenario();
        if (c.model) {
            const auto* m = kvl::io::findModel(c.model);
            const auto* g = kvl::io::findGpu(c.gpu);
            if (!m || !g) {
                std::fprintf(stderr, "bench_traffic: %s or %s is not in the catalog\n", c.model,
                             c.gpu);
                return 1;
            }
            s.model = *m;
            s.hardware.gpu = *g;
            s.hardware.gpuCount = c.tp;
            s.workload.context = c.context;
        }
        // The tab's defaults: prompts fill the context less the output.
        kvl::widgets::TrafficInputs in;
        in.output = "256";
        in.prompt = std::to_string(std::max<std::int64_t>(1, s.workload.context - 256));
        if (c.prefix > 0) {
            s.levers.prefix.enabled = true;
            s.levers.prefix.sharedTokens = c.prefix;
            in.prefixShare = 0.5;
            in.prefixTokens = c.prefix;
        }
        double best = 1e9, worst = 0, cpu = 0;
        double search = 0, grid = 0, timeline = 0; // of the best run
        kvl::widgets::TrafficResult r;
        for (int k = 0; k < repeats; ++k) {
            const double c0 = cpuSeconds();
            const auto t0 = std::chrono::steady_clock::now();
            r = kvl::widgets::computeTraffic(s, in);
            const double wall =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            cpu += cpuSeconds() - c0;
            if (wall < best) {
                search = r.searchS;
                grid = r.gridS;
                timeline = r.timelineS;
            }
            best = std::min(best, wall);
            worst = std::max(worst, wall);
        }
        if (!r.error.empty()) {
            std::printf("  %-50s not simulated: %s\n", c.name, r.error.c_str());
            continue;
        }
        const auto* cur = r.currentStep();
        std::printf("  %-50s %3d runs, %zu steps: %.3f-%.3f s = %.2f-%.2f of the budget (CPU %.3f "
                    "s a run); sustainable %.2f req/s per replica\n"
                    "  %-50s best run's phases: rate searches %.3f s, rate grids %.3f s, "
                    "timeline %.3f s; results digest %016llx\n",
                    c.name, r.runs, r.steps.size(), best, worst, best / kBudgetS, worst / kBudgetS,
                    cpu / repeats, cur ? cur->sustainableRate : 0.0, "", search, grid, timeline,
                    static_cast<unsigned long long>(digestOf(r)));
        allWithin = allWithin && worst <= kBudgetS;
    }
    std::printf("  %s\n", allWithin ? "every case within the budget"
                                    : "some case over the budget (see above)");
    return 0;
}
