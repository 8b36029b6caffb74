// Benchmark (not a test): the time of one full recompute, as the window does it on every
// change (ledger + ladder + every curve of the sweep), over a mix of catalog models and
// levers. Prints the median and p95 and their ratio to the 1 ms budget, all from this run.
// usage: bench_ledger [--json FILE] [--iterations N]

#include "core/io/catalog.h"
#include "core/io/json.h"
#include "core/io/scenario_file.h"
#include "core/ledger.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace kvl;

int main(int argc, char** argv) {
    std::string jsonPath;
    int iterations = 2000;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--json" && i + 1 < argc)
            jsonPath = argv[++i];
        else if (a == "--iterations" && i + 1 < argc)
            iterations = std::max(10, std::atoi(argv[++i]));
    }
    // Scenarios cycling through models and levers, so no single branch is warmed alone.
    std::vector<core::Scenario> scenarios;
    const auto base = io::defaultScenario();
    const core::KvDtype dtypes[] = {core::KvDtype::Fp16, core::KvDtype::Fp8E4M3,
                                    core::KvDtype::Int8, core::KvDtype::Int4};
    int k = 0;
    for (const auto& m : io::builtinModels()) {
        core::Scenario s = base;
        s.model = m;
        s.levers.quant.enabled = (k % 5) != 0;
        s.levers.quant.format = core::KvFormat::defaultFor(dtypes[k % 4]);
        s.levers.prefix = {k % 2 == 0, 2048, (k % 3) * 8};
        s.levers.attention = {k % 3 == 0, core::AttentionMode::Mqa, 8};
        s.workload.context = 1024 << (k % 6);
        ++k;
        if (s.validate()) // e.g. INT4 g128 on head_dim 96
            s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int8);
        scenarios.push_back(s);
    }
    using Clock = std::chrono::steady_clock;
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(iterations));
    std::size_t points = 0;
    std::int64_t sink = 0;
    for (int i = 0; i < iterations + 100; ++i) {
        const auto& s = scenarios[static_cast<std::size_t>(i) % scenarios.size()];
        const auto t0 = Clock::now();
        const auto r = core::computeLedger(s);
        const auto ladder = core::computeLadder(s);
        const auto sweep = core::computeSweep(s);
        const auto t1 = Clock::now();
        sink += r.maxRequestsAtContext + static_cast<std::int64_t>(ladder.size()) +
                static_cast<std::int64_t>(sweep.contexts.size());
        if (i >= 100) { // warm-up discarded
            us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            points = std::max(points, sweep.contexts.size() * sweep.curves.size());
        }
    }
    std::sort(us.begin(), us.end());
    const double median = us[us.size() / 2];
    const double p95 = us[us.size() * 95 / 100];
    std::printf(
        "full recompute (ledger + ladder + sweep of up to %zu points), %d runs over %zu models:\n",
        points, iterations, scenarios.size());
    std::printf("  median %.1f us, p95 %.1f us; p95 / 1 ms budget = %.3f  (sink %lld)\n", median,
                p95, p95 / 1000.0, static_cast<long long>(sink % 7));
    if (!jsonPath.empty()) {
        nlohmann::ordered_json o;
        o["benchmark"] = "ledger_full_recompute";
        o["iterations"] = iterations;
        o["points_per_recompute"] = static_cast<std::int64_t>(points);
        o["median_us"] = median;
        o["p95_us"] = p95;
        o["p95_over_1ms"] = p95 / 1000.0;
        std::ofstream(jsonPath) << io::dumpJson(o) << "\n";
    }
    return 0;
}
