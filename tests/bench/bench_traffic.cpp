// The Traffic tab's recompute: widgets::computeTraffic (every applied ladder step's latency
// curve over its rate grid, each step's sustainable-rate bisection and the timeline run), the
// one function the tab's worker thread and the exports call, timed on this thread for a few
// scenarios against issue 30's budget of 1 s. Not a CTest test: the machine is shared, so it
// prints each time beside the budget and the process's CPU time in the same run.
//
// usage: bench_traffic [--repeats N]

#include "widgets/traffic/traffic_sim.h"

#include "core/io/catalog.h"
#include "core/io/scenario_file.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

double cpuSeconds() {
    return double(std::clock()) / CLOCKS_PER_SEC;
}

struct Case {
    const char* name;
    const char* model;
    const char* gpu;
    int tp;
    std::int64_t context;
};

} // namespace

int main(int argc, char** argv) {
    int repeats = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--repeats" && i + 1 < argc)
            repeats = std::max(1, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: bench_traffic [--repeats N]\n");
            return 2;
        }
    }
    const std::vector<Case> cases = {
        {"window default: Llama-3-8B, H100, 4K", nullptr, nullptr, 1, 0},
        {"Llama-3.1-8B, H100, 8K", "llama-3.1-8b", "h100-80gb", 1, 8192},
        {"Llama-3.1-70B, 4 x H100 (TP 4), 8K", "llama-3.1-70b", "h100-80gb", 4, 8192},
        {"gpt-oss-120b (sliding + full), H200, 32K", "gpt-oss-120b", "h200", 1, 32768},
    };
    constexpr double kBudgetS = 1.0;
    std::printf(
        "bench_traffic: the Traffic tab's recompute (computeTraffic), best and worst of %d, "
        "against issue 30's %.0f s budget\n",
        repeats, kBudgetS);
    bool allWithin = true;
    for (const Case& c : cases) {
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
        double best = 1e9, worst = 0, cpu = 0;
        kvl::widgets::TrafficResult r;
        for (int k = 0; k < repeats; ++k) {
            const double c0 = cpuSeconds();
            const auto t0 = std::chrono::steady_clock::now();
            r = kvl::widgets::computeTraffic(s, in);
            const double wall =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            cpu += cpuSeconds() - c0;
            best = std::min(best, wall);
            worst = std::max(worst, wall);
        }
        if (!r.error.empty()) {
            std::printf("  %-44s not simulated: %s\n", c.name, r.error.c_str());
            continue;
        }
        const auto* cur = r.currentStep();
        std::printf("  %-44s %3d runs, %zu steps: %.3f-%.3f s = %.2f-%.2f of the budget (CPU %.3f "
                    "s a run); sustainable %.2f req/s per replica\n",
                    c.name, r.runs, r.steps.size(), best, worst, best / kBudgetS, worst / kBudgetS,
                    cpu / repeats, cur ? cur->sustainableRate : 0.0);
        allWithin = allWithin && worst <= kBudgetS;
    }
    std::printf("  %s\n", allWithin ? "every case within the budget"
                                    : "some case over the budget (see above)");
    return 0;
}
