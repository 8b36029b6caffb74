// Benchmark (not a test) of the traffic simulation (issue 30), all figures from this run:
//   1. 10,000 requests of 1K prompt and 256 output tokens (Poisson at 90% of the static rate
//      bound) on one core, vs the 0.5 s target;
//   2. the Traffic tab's curves: 10 rates x the 5 ladder steps, 1,000 requests each, vs the
//      1 s target;
//   3. a 1M-request JSONL trace streamed from disk: the time and the growth of the peak
//      resident memory (it must stay bounded: the trace is read line by line).
// usage: bench_simulate [--skip-trace]

#include "core/io/scenario_file.h"
#include "core/io/trace.h"
#include "core/ledger.h"
#include "core/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

using namespace kvl;
namespace sim = core::sim;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// CPU seconds this process has used (user + system): on a shared machine the wall time
// includes other processes' turns; this does not.
double cpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

long peakRssKiB() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

sim::WorkloadSpec oneK(double rate, std::int64_t requests) {
    sim::WorkloadSpec w;
    w.rate = rate;
    w.requests = requests;
    w.prompt = sim::LengthDist::fixed(1024);
    w.output = sim::LengthDist::fixed(256);
    return w;
}

} // namespace

int main(int argc, char** argv) {
    bool trace = true;
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--skip-trace")
            trace = false;
    core::Scenario s = io::defaultScenario();
    s.model.maxContext = std::max<std::int64_t>(s.model.maxContext, 8192);
    s.levers.prefix.enabled = false;

    // 1. 10,000 requests, best of 3.
    const double bound = sim::staticRateBound(s, oneK(1, 1));
    sim::SimResult r;
    double best = 1e9, bestCpu = 1e9;
    for (int i = 0; i < 3; ++i) {
        const auto t0 = Clock::now();
        const double c0 = cpuSeconds();
        r = sim::simulate(s, oneK(0.9 * bound, 10000));
        best = std::min(best, seconds(t0, Clock::now()));
        bestCpu = std::min(bestCpu, cpuSeconds() - c0);
    }
    std::printf("simulate 10,000 requests (1K prompt, 256 out, %.2f req/s, %s on %s):\n"
                "  %.3f s wall, %.3f s CPU (target 0.5 s, ratio %.2f wall, %.2f CPU); %lld steps, "
                "%lld completed, p99 TTFT %.1f ms, mean running %.1f\n",
                0.9 * bound, s.model.name.c_str(), s.hardware.gpu.name.c_str(), best, bestCpu,
                best / 0.5, bestCpu / 0.5, static_cast<long long>(r.steps),
                static_cast<long long>(r.completed), r.ttftMs.p99, r.meanRunning);

    // 2. 10 rates x 5 ladder steps, 1,000 requests each.
    const auto ladder = core::computeLadder(s);
    const auto t0 = Clock::now();
    const double c0 = cpuSeconds();
    int runs = 0;
    std::int64_t steps = 0;
    for (const auto& step : ladder) {
        const double top = sim::staticRateBound(step.scenario, oneK(1, 1));
        for (int k = 1; k <= 10; ++k) {
            const auto res = sim::simulate(step.scenario, oneK(top * 0.12 * k, 1000));
            steps += res.steps;
            ++runs;
        }
    }
    const double sweep = seconds(t0, Clock::now());
    const double sweepCpu = cpuSeconds() - c0;
    std::printf("rate sweep: %d runs (10 rates x %zu ladder steps, 1,000 requests each): %.3f s "
                "wall, %.3f s CPU (target 1 s, ratio %.2f wall, %.2f CPU); %lld steps\n",
                runs, ladder.size(), sweep, sweepCpu, sweep, sweepCpu,
                static_cast<long long>(steps));

    // 3. A 1M-request trace, streamed.
    if (trace) {
        char path[] = "/tmp/kvl-bench-traceXXXXXX.jsonl";
        const int fd = mkstemps(path, 6);
        if (fd < 0)
            return 1;
        close(fd);
        {
            std::ofstream f(path);
            sim::Rng rng(5);
            double t = 0;
            const double rate = 0.5 * bound;
            for (int i = 0; i < 1'000'000; ++i) {
                t += rng.exponential() / rate;
                f << "{\"arrival_s\": " << t << ", \"prompt_tokens\": " << 256 + rng.next() % 1024
                  << ", \"output_tokens\": " << 16 + rng.next() % 128 << "}\n";
            }
        }
        const long before = peakRssKiB();
        const auto t1 = Clock::now();
        auto src = io::TraceSource::open(path);
        if (!src) {
            std::printf("trace: %s\n", src.error().message.c_str());
            return 1;
        }
        const sim::SimResult tr = sim::simulate(s, **src);
        const double took = seconds(t1, Clock::now());
        std::printf("1M-request JSONL trace: %.2f s, %lld completed%s%s; peak RSS %ld MiB before, "
                    "%ld MiB after (growth %ld MiB)\n",
                    took, static_cast<long long>(tr.completed),
                    tr.error.empty() ? "" : ", error: ", tr.error.c_str(), before / 1024,
                    peakRssKiB() / 1024, (peakRssKiB() - before) / 1024);
        std::remove(path);
    }
    return 0;
}
