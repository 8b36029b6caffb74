// Benchmark (not a test): the deployment planner's full search, every layout up to 64 GPUs,
// over 40 GPU kinds (the catalog's, and memory variants of them), for a dense, an MoE and an
// MLA model. Prints the median and p95 of one search and their ratio to the 50 ms budget.
// usage: bench_planner [--runs N]

#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/planner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace kvl;

int main(int argc, char** argv) {
    int runs = 20;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--runs")
            runs = std::max(3, std::atoi(argv[i + 1]));
    std::vector<core::GpuSpec> gpus = io::builtinGpus();
    for (std::size_t i = 0; gpus.size() < 40; ++i) { // memory variants up to 40 kinds
        core::GpuSpec g = io::builtinGpus()[i % io::builtinGpus().size()];
        g.id += "-variant" + std::to_string(i);
        g.memoryBytes = g.memoryBytes / 4 * 3;
        gpus.push_back(g);
    }
    const char* models[] = {"llama-3.1-70b", "qwen3-235b-a22b", "deepseek-v3"};
    std::vector<double> ms;
    std::size_t fitting = 0;
    for (int r = 0; r < runs; ++r)
        for (const char* id : models) {
            const core::ModelSpec* m = io::findModel(id);
            if (!m) {
                std::fprintf(stderr, "bench_planner: model %s is not in the catalog\n", id);
                return 2;
            }
            core::PlanRequest req;
            req.base = io::defaultScenario();
            req.base.model = *m;
            req.users = 50;
            req.context = 32768;
            req.gpus = gpus;
            req.maxGpus = 64;
            const auto t0 = std::chrono::steady_clock::now();
            const auto plan = core::planDeployments(req);
            const auto t1 = std::chrono::steady_clock::now();
            ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
            for (const auto& g : plan.gpus)
                fitting += g.fits ? 1 : 0;
        }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    const double p95 = ms[std::min(ms.size() - 1, ms.size() * 95 / 100)];
    std::printf("planner: 50 users at 32K, %zu GPU kinds x every layout up to 64 GPUs, %zu "
                "searches (3 models):\n  median %.2f ms, p95 %.2f ms; p95 / 50 ms budget = "
                "%.3f  (%zu fitting kinds)\n",
                gpus.size(), ms.size(), median, p95, p95 / 50.0, fitting / runs);
    return 0;
}
