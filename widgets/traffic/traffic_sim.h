#pragma once
// The Traffic tab's work, as one synchronous function of a scenario and the workload inputs:
// for every applied lever-ladder step (core::computeLadder), the latency-versus-rate curve (one
// core::sim::simulate run per rate), the largest rate that meets the SLO
// (core::sim::sustainableRate), and, for the scenario itself, one run at the chosen rate whose
// KV occupancy and queue the timeline shows. Everything is per replica: the rate is what one
// replica serves (a DP deployment serves DP times it).
//
// The window runs it on a worker (TrafficPanel); headless export and the report call it on
// their own thread: the same code path, so a picture and the tab show the same numbers.

#include "core/ledger.h"
#include "core/sim/simulator.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kvl::widgets {

// The workload in the user's words; the lengths are core::sim::parseLengthDist text.
struct TrafficInputs {
    double rate = 0; // req/s per replica for the timeline; 0 = 80% of the sustainable rate
    std::string prompt = "1024";
    std::string output = "256";
    double prefixShare = 0;        // fraction of requests that start with the shared prefix
    std::int64_t prefixTokens = 0; // its length
    double sloTtftMs = 2000;
    double sloTpotMs = 100;
    double attainment = 0.99; // the share of requests that must meet the SLO
    // Per simulated point, at least: a step runs max(this, kBurstMultiple x the requests that
    // fit at once) so that a rate above what the replica sustains shows as a growing queue,
    // not as one burst the pool absorbs whole; at most kMaxPointRequests.
    std::int64_t requests = 400;
    std::uint64_t seed = 1;
    int ratePoints = 8;
    double relTolerance = 0.05; // of the sustainable-rate bisection
    core::SpeedAssumptions speed;
};

// The workload of `in` at `rate`, or the first problem (naming the field) in `error`.
core::sim::WorkloadSpec trafficWorkload(const TrafficInputs& in, double rate,
                                        std::string* error = nullptr);
// The same with `requests` requests.
core::sim::WorkloadSpec trafficWorkload(const TrafficInputs& in, double rate,
                                        std::int64_t requests);
// The simulation options of a ladder step: the SLO, the speed model, and vLLM's prefix cache
// only where the step has the prefix-sharing lever (the steps before it are the ledger's
// "no sharing" rungs).
core::sim::SimOptions trafficOptions(const TrafficInputs& in, const core::Scenario& step);

inline constexpr std::int64_t kBurstMultiple = 2;
inline constexpr std::int64_t kMaxPointRequests = 1500;

// The requests each point of ladder step `step` simulates (see TrafficInputs::requests).
std::int64_t trafficRequestsPerPoint(const TrafficInputs& in, const core::Scenario& step);

struct TrafficPoint {
    double rate = 0;
    core::sim::Percentiles ttftMs, tpotMs;
    double attainment = 0;
    bool meets = false;  // attainment >= the target, and the run neither capped nor failed
    std::string problem; // the run's error or cap
};

struct TrafficStep {
    core::LadderStepId id = core::LadderStepId::Baseline;
    std::string label;
    bool current = false; // the scenario itself (the last applied step)
    core::Scenario scenario;
    std::vector<TrafficPoint> points;
    double staticBound = 0;            // core::sim::staticRateBound: where the rate grid comes from
    std::int64_t requestsPerPoint = 0; // trafficRequestsPerPoint
    bool found = false;                // some rate meets the SLO
    double sustainableRate = 0;
    int searchRuns = 0;
    std::string note; // why there is no sustainable rate (or the search's note)
};

struct TrafficResult {
    core::Scenario scenario;
    TrafficInputs inputs;
    std::vector<TrafficStep> steps;
    double currentRate = 0;       // the timeline's rate
    core::sim::SimResult current; // the scenario's run at currentRate (its time series)
    bool cancelled = false;
    std::string error; // nothing was simulated: bad inputs, or the scenario does not run
    int runs = 0;
    // Wall seconds of each phase (bench_traffic prints them): the sustainable-rate searches,
    // the rate grids, the timeline run.
    double searchS = 0, gridS = 0, timelineS = 0;
    const TrafficStep* currentStep() const;
};

// A rate in requests per second as the tab prints it: two significant digits below 1 (a
// 32K-token prompt on a 70B model sustains about 0.005 req/s, which two decimals showed as
// 0.00), two decimals below 10, one below 100, none above.
std::string trafficRateText(double requestsPerSecond);

// The assumptions line every view prints beside the figures.
std::string trafficAssumptions(const TrafficInputs& in);

// Runs everything on the calling thread; `cancel` stops it between and within runs (the
// result then has `cancelled` set and is not to be shown); `progress` goes from 0 to 1.
TrafficResult computeTraffic(const core::Scenario& s, const TrafficInputs& in,
                             const std::atomic<bool>* cancel = nullptr,
                             const std::function<void(double)>& progress = {});

} // namespace kvl::widgets
