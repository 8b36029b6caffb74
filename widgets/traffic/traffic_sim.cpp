#include "widgets/traffic/traffic_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace kvl::widgets {

namespace sim = core::sim;

core::sim::WorkloadSpec trafficWorkload(const TrafficInputs& in, double rate, std::string* error) {
    sim::WorkloadSpec w;
    w.arrival = sim::ArrivalKind::Poisson;
    w.rate = rate;
    w.requests = in.requests;
    w.seed = in.seed;
    w.prefixShare = in.prefixTokens > 0 ? in.prefixShare : 0;
    w.prefixTokens = in.prefixShare > 0 ? in.prefixTokens : 0;
    // The CLI's own parser (core/sim/workload.h): one grammar for --prompt-tokens and the tab.
    auto prompt = sim::parseLengthDist(in.prompt);
    auto output = sim::parseLengthDist(in.output);
    if (error) {
        error->clear();
        if (!prompt)
            *error = "prompt tokens: " + prompt.error().message;
        else if (!output)
            *error = "output tokens: " + output.error().message;
    }
    if (prompt)
        w.prompt = *prompt;
    if (output)
        w.output = *output;
    if (error && error->empty())
        if (const auto p = sim::workloadProblem(w))
            *error = p->option + ": " + p->message;
    return w;
}

core::sim::WorkloadSpec trafficWorkload(const TrafficInputs& in, double rate,
                                        std::int64_t requests) {
    sim::WorkloadSpec w = trafficWorkload(in, rate);
    w.requests = requests;
    return w;
}

std::int64_t trafficRequestsPerPoint(const TrafficInputs& in, const core::Scenario& step) {
    // With only as many requests as the pool holds at once, any rate looks sustainable: they
    // all arrive, run together and finish within the SLO. A few times that many make a rate
    // the replica cannot sustain build a queue, which is what the SLO then sees.
    const sim::WorkloadSpec w = trafficWorkload(in, 1);
    core::Scenario sc = step;
    sc.workload.context =
        std::max<std::int64_t>(1, std::llround(w.prompt.expected() + w.output.expected()));
    const core::LedgerResult led = core::computeLedger(sc);
    const std::int64_t atOnce = std::max<std::int64_t>(0, led.requestsYouCanRun);
    return std::clamp(kBurstMultiple * atOnce, in.requests,
                      std::max(in.requests, kMaxPointRequests));
}

core::sim::SimOptions trafficOptions(const TrafficInputs& in, const core::Scenario& step) {
    sim::SimOptions o;
    o.speed = in.speed;
    o.sloTtftMs = in.sloTtftMs;
    o.sloTpotMs = in.sloTpotMs;
    // vLLM caches prefixes by default; the ladder's rungs before "+prefix" are the ledger's
    // figures without sharing, so their simulations run without the cache too.
    o.prefixCaching = step.levers.prefix.enabled && step.levers.paging.enabled;
    o.seriesPoints = 400;
    o.interTokenLatency = false; // the tab shows TTFT and TPOT, not the per-token gaps
    return o;
}

const TrafficStep* TrafficResult::currentStep() const {
    for (const TrafficStep& st : steps)
        if (st.current)
            return &st;
    return nullptr;
}

std::string trafficAssumptions(const TrafficInputs& in) {
    char b[400];
    std::snprintf(b, sizeof b,
                  "Simulated: vLLM v1 scheduler, Poisson arrivals, at least %lld requests per "
                  "point (2x those that fit at once), seed %llu; one replica; step times from "
                  "the speed model (a roofline estimate); "
                  "sustainable rate: %.0f%% of requests within the SLO, by bisection to %.0f%%",
                  static_cast<long long>(in.requests), static_cast<unsigned long long>(in.seed),
                  in.attainment * 100, in.relTolerance * 100);
    return b;
}

namespace {

// Progress over the whole job: each run is one unit; a rate search counts as kSearchUnits.
constexpr double kSearchUnits = 8;

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class Progress {
public:
    Progress(const std::function<void(double)>& f, double total) : m_f(f), m_total(total) {}
    // A callback for the work of `units` starting now.
    std::function<void(double)> part(double units) {
        if (!m_f)
            return {};
        const double base = m_done;
        m_done += units;
        return [this, base, units](double f) { tell((base + f * units) / m_total); };
    }
    void tell(double f) {
        f = std::min(f, 1.0);
        if (m_f && f > m_last) {
            m_last = f;
            m_f(f);
        }
    }

private:
    const std::function<void(double)>& m_f;
    double m_total = 1, m_done = 0, m_last = 0;
};

} // namespace

TrafficResult computeTraffic(const core::Scenario& s, const TrafficInputs& in,
                             const std::atomic<bool>* cancel,
                             const std::function<void(double)>& progress) {
    TrafficResult out;
    out.scenario = s;
    out.inputs = in;
    std::string problem;
    (void)trafficWorkload(in, 1, &problem);
    if (!problem.empty()) {
        out.error = problem;
        return out;
    }
    if (!(in.sloTtftMs > 0) && !(in.sloTpotMs > 0)) {
        out.error = "give a TTFT or a TPOT objective: the sustainable rate is the largest that "
                    "meets it";
        return out;
    }
    if (s.engine.kind != core::Engine::Vllm) {
        // The scheduler simulated is vLLM v1's over vLLM's own block pool: another engine's
        // pool and scheduler would give other numbers, so none are shown for it.
        out.error = core::sim::engineNotSimulated(s.engine.kind);
        return out;
    }
    const auto ladder = core::computeLadder(s);
    std::size_t lastApplied = 0;
    for (std::size_t i = 0; i < ladder.size(); ++i)
        if (ladder[i].applied)
            lastApplied = i;
    int applied = 0;
    for (const auto& st : ladder)
        applied += st.applied ? 1 : 0;
    const int points = std::max(2, in.ratePoints);
    Progress prog(progress, applied * (points + kSearchUnits) + 1);
    auto stopped = [&] { return cancel && cancel->load(std::memory_order_relaxed); };

    for (std::size_t i = 0; i < ladder.size(); ++i) {
        const core::LadderStep& ls = ladder[i];
        if (!ls.applied)
            continue;
        if (stopped())
            break;
        TrafficStep st;
        st.id = ls.id;
        st.label = ls.label;
        st.current = i == lastApplied;
        st.scenario = ls.scenario;
        sim::SimOptions o = trafficOptions(in, st.scenario);
        o.cancel = cancel;
        st.requestsPerPoint = trafficRequestsPerPoint(in, st.scenario);
        const sim::WorkloadSpec w = trafficWorkload(in, 1, st.requestsPerPoint);
        st.staticBound = sim::staticRateBound(st.scenario, w, in.speed);
        o.progress = prog.part(kSearchUnits);
        auto t0 = std::chrono::steady_clock::now();
        const sim::RateSearch search =
            sim::sustainableRate(st.scenario, w, o, in.attainment, in.relTolerance);
        out.searchS += secondsSince(t0);
        ++out.runs;
        if (search.cancelled)
            break;
        st.found = search.found;
        st.sustainableRate = search.found ? search.rate : 0;
        st.searchRuns = search.runs;
        st.note = search.note;
        // The grid: evenly from 0 to past the knee (the larger of the static bound and the
        // sustainable rate, and 30% more), so every curve shows where it leaves the SLO.
        double top = std::max(st.staticBound, st.sustainableRate);
        if (!(top > 0) || !std::isfinite(top))
            top = 1;
        top = std::clamp(top * 1.3, sim::kMinRate * points, sim::kMaxRate);
        t0 = std::chrono::steady_clock::now();
        for (int k = 1; k <= points && !stopped(); ++k) {
            const double rate = top * k / points;
            o.progress = prog.part(1);
            const sim::SimResult r =
                sim::simulate(st.scenario, trafficWorkload(in, rate, st.requestsPerPoint), o);
            ++out.runs;
            if (r.cancelled)
                break;
            TrafficPoint p;
            p.rate = rate;
            p.ttftMs = r.ttftMs;
            p.tpotMs = r.tpotMs;
            p.attainment = r.sloAttainment;
            p.problem = !r.error.empty() ? r.error : r.capped;
            p.meets = p.problem.empty() && r.sloAttainment >= in.attainment;
            st.points.push_back(p);
        }
        out.gridS += secondsSince(t0);
        if (stopped())
            break;
        out.steps.push_back(std::move(st));
    }
    if (stopped()) {
        out.cancelled = true;
        return out;
    }
    // The scenario at the chosen rate: its occupancy and queue over time.
    const TrafficStep* cur = out.currentStep();
    if (cur) {
        out.currentRate = in.rate > 0  ? in.rate
                          : cur->found ? 0.8 * cur->sustainableRate
                                       : 0.5 * std::max(cur->staticBound, sim::kMinRate);
        sim::SimOptions o = trafficOptions(in, cur->scenario);
        o.cancel = cancel;
        o.progress = prog.part(1);
        const auto t0 = std::chrono::steady_clock::now();
        out.current = sim::simulate(cur->scenario,
                                    trafficWorkload(in, out.currentRate, cur->requestsPerPoint), o);
        out.timelineS = secondsSince(t0);
        ++out.runs;
        if (out.current.cancelled) {
            out.cancelled = true;
            return out;
        }
    }
    prog.tell(1);
    return out;
}

std::string trafficRateText(double r) {
    if (!(r > 0))
        return "0";
    char buf[32];
    if (r < 1)
        std::snprintf(buf, sizeof buf, "%.2g", r);
    else
        std::snprintf(buf, sizeof buf, "%.*f", r < 10 ? 2 : r < 100 ? 1 : 0, r);
    return buf;
}

} // namespace kvl::widgets
