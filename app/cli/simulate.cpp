#include "simulate.h"

#include "text.h"

#include "core/engine.h"
#include "core/io/json.h"
#include "core/io/trace.h"
#include "core/sim/simulator.h"
#include "core/units.h"

#include <charconv>
#include <cmath>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

namespace kvl::app::cli {

namespace {

using core::withThousands;
using Json = nlohmann::ordered_json;
namespace sim = core::sim;

// A trace cut at N requests or at an arrival time (--requests, --duration), and with DP
// replicas the share of one of them: every DP-th request (round robin).
class Limited : public sim::RequestSource {
public:
    Limited(sim::RequestSource& inner, std::int64_t requests, double durationS, int dp)
        : m_inner(inner), m_left(requests), m_until(durationS), m_dp(dp) {}
    bool next(sim::ArrivingRequest& out) override {
        if (m_left == 0)
            return false;
        for (int skip = 0; skip < m_dp; ++skip)
            if (!m_inner.next(out))
                return false;
        if (m_until > 0 && out.arrivalS > m_until)
            return false;
        if (m_left > 0)
            --m_left;
        return true;
    }
    std::string error() const override { return m_inner.error(); }

private:
    sim::RequestSource& m_inner;
    std::int64_t m_left; // -1 = no limit
    double m_until;
    int m_dp;
};

// "12,345.6" for figures people read: thousands separators, `decimals` after the point.
std::string number(double v, int decimals) {
    if (!std::isfinite(v))
        return "-";
    const double scale = std::pow(10.0, decimals);
    const double r = std::round(std::abs(v) * scale) / scale;
    const auto whole = static_cast<std::int64_t>(std::floor(r));
    std::string s = withThousands(whole);
    if (v < 0 && r > 0)
        s.insert(s.begin(), '-');
    if (decimals > 0) {
        const std::string f = fixed(r - static_cast<double>(whole), decimals);
        s += f.substr(f.find('.'));
    }
    return s;
}

// Milliseconds with sensible precision.
std::string ms(double v) {
    return number(v, v < 10 ? 2 : v < 1000 ? 1 : 0);
}

Json percentilesJson(const sim::Percentiles& p) {
    return Json{{"count", p.count}, {"mean", p.mean}, {"p50", p.p50},
                {"p90", p.p90},     {"p99", p.p99},   {"max", p.max}};
}

std::string arrivalText(const sim::WorkloadSpec& w, bool trace) {
    if (trace)
        return "trace";
    if (w.arrival == sim::ArrivalKind::ClosedLoop)
        return "closed loop of " + withThousands(w.concurrency) + " clients";
    std::string t = (w.arrival == sim::ArrivalKind::Poisson ? "Poisson " : "Gamma ") +
                    number(w.rate, w.rate < 10 ? 3 : 1) + " req/s";
    if (w.arrival == sim::ArrivalKind::Gamma)
        t += " (CV " + number(w.cv, 2) + ")";
    return t;
}

// A refused option: its name (without the dashes) and why.
struct OptionError {
    std::string option, message;
};

// The options that exclude or need one another, before any is read.
std::optional<OptionError> optionConflict(const Invocation& inv) {
    const core::Scenario& s = inv.scenario;
    if (s.engine.kind != core::Engine::Vllm)
        return OptionError{"engine", core::sim::engineNotSimulated(s.engine.kind)};
    const bool trace = inv.has("trace");
    const bool rate = inv.has("rate");
    const bool closed = s.workload.concurrency > 0;
    if (rate && closed)
        return OptionError{"rate", "--rate (open loop) and --concurrency (closed loop) exclude "
                                   "each other"};
    if (trace && (rate || closed))
        return OptionError{"trace", "a trace brings its own arrivals: drop --" +
                                        std::string(rate ? "rate" : "concurrency")};
    if (!trace && !rate && !closed)
        return OptionError{"rate", "missing: give --rate R, --concurrency C or --trace FILE"};
    if (trace)
        for (const char* o : {"prompt-tokens", "output-tokens", "burstiness", "prefix-share",
                              "prefix-groups", "seed"})
            if (inv.has(o))
                return OptionError{o, "a trace brings its own requests: drop it with --trace"};
    if (inv.has("burstiness") && !rate)
        return OptionError{"burstiness", "bursty arrivals need --rate"};
    if (inv.has("prefix-share") && !s.levers.prefix.enabled)
        return OptionError{"prefix-share", "needs --prefix-tokens P (the shared prefix's length)"};
    return std::nullopt;
}

// The workload of one replica from the options. --rate, --concurrency and a trace are what
// reaches the whole deployment; each of the DP replicas (independent engines) serves 1/DP of
// it, and one of them is simulated.
std::optional<OptionError> replicaWorkload(const Invocation& inv, int dp, sim::WorkloadSpec& w) {
    const core::Scenario& s = inv.scenario;
    const bool trace = inv.has("trace");
    if (inv.has("rate")) {
        w.rate = std::stod(inv.value("rate")) / dp;
        w.cv = inv.has("burstiness") ? std::stod(inv.value("burstiness")) : 1.0;
        w.arrival = w.cv == 1.0 ? sim::ArrivalKind::Poisson : sim::ArrivalKind::Gamma;
    } else if (s.workload.concurrency > 0) {
        w.arrival = sim::ArrivalKind::ClosedLoop;
        if (s.workload.concurrency % dp != 0)
            return OptionError{"concurrency", std::to_string(s.workload.concurrency) +
                                                  " clients do not split evenly over " +
                                                  std::to_string(dp) + " DP replicas"};
        w.concurrency = s.workload.concurrency / dp;
    }
    w.prompt = inv.has("prompt-tokens") ? *sim::parseLengthDist(inv.value("prompt-tokens"))
                                        : sim::LengthDist::fixed(1024);
    w.output = inv.has("output-tokens") ? *sim::parseLengthDist(inv.value("output-tokens"))
                                        : sim::LengthDist::fixed(256);
    // The prefix lever's length (--prefix-tokens), shared by --prefix-share of the requests.
    if (s.levers.prefix.enabled && inv.has("prefix-share")) {
        w.prefixTokens = s.levers.prefix.sharedTokens;
        w.prefixShare = std::stod(inv.value("prefix-share"));
    }
    w.prefixGroups = inv.has("prefix-groups") ? std::stoi(inv.value("prefix-groups")) : 1;
    w.requests = inv.has("requests") ? std::stoll(inv.value("requests")) : 0;
    w.durationS = inv.has("duration") ? std::stod(inv.value("duration")) : 0;
    if (!trace && w.requests == 0 && w.durationS == 0)
        w.requests = 1000;
    if (inv.has("seed"))
        std::from_chars(inv.value("seed").data(),
                        inv.value("seed").data() + inv.value("seed").size(), w.seed);
    if (trace)
        return std::nullopt;
    // A prompt that cannot run at this max_model_len is refused here, by its option.
    const std::int64_t maxLen = s.effectiveMaxModelLen();
    // A lognormal's tail is refused request by request (counted as refused), not as a whole.
    const bool tail = w.prompt.kind == sim::LengthDist::Kind::LogNormal;
    if (tail ? w.prompt.expected() >= static_cast<double>(maxLen) : w.prompt.largest() >= maxLen)
        return OptionError{
            "prompt-tokens",
            "prompts up to " +
                withThousands(tail ? std::llround(w.prompt.expected()) : w.prompt.largest()) +
                " tokens reach the max model length (" + withThousands(maxLen) +
                "); vLLM refuses them"};
    if (const auto p = sim::workloadProblem(w))
        return OptionError{p->option, p->message};
    return std::nullopt;
}

// What one run of `kvledger simulate` used and found, for its report.
struct SimReport {
    const Invocation& inv;
    const core::Scenario& s;
    const sim::WorkloadSpec& w;
    const sim::SimOptions& o;
    const sim::SimResult& r;
    const sim::RateSearch& search;
    int dp;
    bool trace, slo, searched;
    double attainment;
};

Json workloadJson(const SimReport& p) {
    const sim::WorkloadSpec& w = p.w;
    Json wl;
    wl["arrivals"] = p.trace                                     ? "trace"
                     : w.arrival == sim::ArrivalKind::ClosedLoop ? "closed"
                     : w.arrival == sim::ArrivalKind::Poisson    ? "poisson"
                                                                 : "gamma";
    if (p.trace)
        wl["trace"] = p.inv.value("trace");
    else {
        if (w.arrival == sim::ArrivalKind::ClosedLoop) {
            wl["concurrency"] = w.concurrency * p.dp;
            wl["concurrency_per_replica"] = w.concurrency;
        } else {
            wl["rate"] = w.rate * p.dp;
            wl["rate_per_replica"] = w.rate;
        }
        if (w.arrival == sim::ArrivalKind::Gamma)
            wl["cv"] = w.cv;
        wl["prompt_tokens"] = w.prompt.text();
        wl["output_tokens"] = w.output.text();
        wl["prefix_share"] = w.prefixShare;
        wl["prefix_tokens"] = w.prefixTokens;
        wl["prefix_groups"] = w.prefixGroups;
        wl["seed"] = w.seed;
    }
    wl["requests"] = w.requests;
    wl["duration_s"] = w.durationS;
    return wl;
}

Json perReplicaJson(const sim::SimResult& r) {
    return {
        {"arrived", r.arrived},
        {"completed", r.completed},
        {"refused", r.rejected},
        {"preemptions", r.preemptions},
        {"steps", r.steps},
        {"prompt_tokens", r.promptTokens},
        {"output_tokens", r.outputTokens},
        {"prefix_hit_tokens", r.prefixHitTokens},
        {"end_s", r.endS},
        {"throughput_rps", r.throughputRps},
        {"output_tokens_per_s", r.outputTokensPerS},
        {"mean_in_system", r.meanInSystem},
        {"mean_running", r.meanRunning},
        {"peak_running", r.peakRunning},
        {"peak_waiting", r.peakWaiting},
        {"peak_blocks_in_use", r.peakBlocksTotal},
        {"peak_blocks_in_use_per_group", r.peakBlocksInUse},
    };
}

Json sloJson(const SimReport& p) {
    const sim::SimResult& r = p.r;
    Json g{{"slo_ttft_ms", p.o.sloTtftMs},
           {"slo_tpot_ms", p.o.sloTpotMs},
           {"attainment", r.sloAttainment},
           {"goodput_rps", r.goodputRps}};
    if (p.searched) {
        g["sustainable_rate_rps"] = p.search.found ? Json(p.search.rate) : Json(nullptr);
        g["sustainable_rate_cluster_rps"] =
            p.search.found ? Json(p.search.rate * p.dp) : Json(nullptr);
        g["search_attainment"] = p.attainment;
        g["search_runs"] = p.search.runs;
        g["search_note"] = p.search.note;
    }
    return g;
}

Json seriesJson(const sim::SimResult& r) {
    Json series;
    series["t_s"] = r.series.t;
    series["running"] = r.series.running;
    series["waiting"] = r.series.waiting;
    series["preempted"] = r.series.preempted;
    Json blocks = Json::object();
    for (std::size_t g = 0; g < r.groupLabels.size(); ++g)
        blocks[std::to_string(g) + " " + r.groupLabels[g]] = r.series.blocksInUse[g];
    series["blocks_in_use"] = blocks;
    return series;
}

// --json: the whole report as one object.
Json simulationJson(const SimReport& p) {
    const core::Scenario& s = p.s;
    const sim::SimResult& r = p.r;
    Json j;
    j["kind"] = "simulation";
    j["assumptions"] =
        "one replica of vLLM v1's scheduler (core/sim): step time from KV Ledger's speed "
        "model, a roofline estimate; not a measurement";
    j["model"] = s.model.name;
    j["gpu"] = s.hardware.gpu.name;
    j["layout"] = {{"tp", s.hardware.gpuCount}, {"pp", s.hardware.pipelineParallel}, {"dp", p.dp}};
    j["workload"] = workloadJson(p);
    j["pool"] = {{"blocks", r.numBlocks},
                 {"groups", r.groupLabels},
                 {"max_num_seqs", r.maxNumSeqs},
                 {"max_num_batched_tokens", r.maxNumBatchedTokens}};
    j["per_replica"] = perReplicaJson(r);
    j["cluster"] = {{"replicas", p.dp},
                    {"throughput_rps", r.throughputRps * p.dp},
                    {"output_tokens_per_s", r.outputTokensPerS * p.dp}};
    j["latency_ms"] = {{"ttft", percentilesJson(r.ttftMs)},
                       {"tpot", percentilesJson(r.tpotMs)},
                       {"itl", percentilesJson(r.itlMs)},
                       {"e2e", percentilesJson(r.e2eMs)}};
    if (p.slo)
        j["slo"] = sloJson(p);
    j["series"] = seriesJson(r);
    j["capped"] = r.capped.empty() ? Json(nullptr) : Json(r.capped);
    j["notes"] = r.notes;
    return j;
}

void printRow(std::ostream& out, const std::string& label, const std::string& text) {
    out << "  " << std::left << std::setw(24) << label << text << "\n";
}

// The text report's heading and its rows up to the throughput.
void printSummary(const SimReport& p, std::ostream& out) {
    const core::Scenario& s = p.s;
    const sim::WorkloadSpec& w = p.w;
    const sim::SimResult& r = p.r;
    const int dp = p.dp;
    out << "Simulation (vLLM v1 scheduler, one replica; step times from the speed model, a "
           "roofline estimate)\n";
    out << printable(s.model.name) << " on " << s.hardware.gpuCount << " x "
        << printable(s.hardware.gpu.name);
    if (s.hardware.pipelineParallel > 1)
        out << " x PP " << s.hardware.pipelineParallel;
    if (dp > 1)
        out << ", DP " << dp << " (one replica simulated at 1/" << dp
            << " of the arrivals; cluster = x " << dp << ")";
    out << "\n";
    std::string load = arrivalText(w, p.trace);
    if (dp > 1)
        load += " per replica";
    if (p.trace)
        load += " " + printable(p.inv.value("trace"));
    else
        load += ", prompt " + w.prompt.text() + ", output " + w.output.text() + " tokens";
    printRow(out, "Workload", load);
    if (!p.trace && w.prefixShare > 0)
        printRow(out, "Shared prefix",
                 withThousands(w.prefixTokens) + " tokens, " + number(100 * w.prefixShare, 0) +
                     "% of requests, " + withThousands(w.prefixGroups) + " group(s)");
    if (!p.trace)
        printRow(out, "Seed", std::to_string(w.seed));
    std::string groups;
    for (const auto& g : r.groupLabels)
        groups += (groups.empty() ? "" : ", ") + g;
    printRow(out, "KV pool (per replica)",
             withThousands(r.numBlocks) + " blocks; groups: " + groups);
    printRow(out, "Scheduler",
             "max_num_seqs " + withThousands(r.maxNumSeqs) + ", max_num_batched_tokens " +
                 withThousands(r.maxNumBatchedTokens));
    printRow(out, "Requests (per replica)",
             withThousands(r.completed) + " served of " + withThousands(r.arrived + r.rejected) +
                 " in " + number(r.endS, 1) + " s; " + withThousands(r.rejected) + " refused; " +
                 withThousands(r.preemptions) + " preemptions");
    printRow(out, "Throughput (replica)",
             number(r.throughputRps, 2) + " req/s, " + number(r.outputTokensPerS, 0) +
                 " output tokens/s");
    if (dp > 1)
        printRow(out, "Throughput (cluster)",
                 number(r.throughputRps * dp, 2) + " req/s, " + number(r.outputTokensPerS * dp, 0) +
                     " output tokens/s");
}

void printLatency(const sim::SimResult& r, std::ostream& out) {
    out << "\n  " << std::left << std::setw(24) << "Latency (ms)";
    for (const char* h : {"mean", "p50", "p90", "p99", "max"})
        out << std::right << std::setw(11) << h;
    out << "\n";
    auto latency = [&](const char* label, const sim::Percentiles& p) {
        out << "  " << std::left << std::setw(24) << label;
        for (const double v : {p.mean, p.p50, p.p90, p.p99, p.max})
            out << std::right << std::setw(11) << (p.count > 0 ? ms(v) : "-");
        out << "\n";
    };
    latency("TTFT", r.ttftMs);
    latency("TPOT", r.tpotMs);
    latency("ITL (token to token)", r.itlMs);
    latency("End to end", r.e2eMs);
    out << "\n";
}

void printGoodput(const SimReport& p, std::ostream& out) {
    const sim::SimOptions& o = p.o;
    std::string sloText;
    if (o.sloTtftMs > 0)
        sloText = "TTFT <= " + ms(o.sloTtftMs) + " ms";
    if (o.sloTpotMs > 0)
        sloText +=
            (sloText.empty() ? "" : " and ") + std::string("TPOT <= ") + ms(o.sloTpotMs) + " ms";
    printRow(out, "Goodput (replica)",
             number(p.r.goodputRps, 2) + " req/s at " + sloText + " (" +
                 number(100 * p.r.sloAttainment, 1) + "% of requests)");
    if (!p.searched)
        return;
    if (p.search.found)
        printRow(out, "Sustainable rate",
                 number(p.search.rate, 2) + " req/s per replica" +
                     (p.dp > 1 ? ", " + number(p.search.rate * p.dp, 2) + " per cluster" : "") +
                     " (" + number(100 * p.attainment, 1) + "% within the SLO; " +
                     std::to_string(p.search.runs) + " runs)");
    else
        printRow(out, "Sustainable rate", "none: " + p.search.note);
}

// --series: the sampled queues and blocks over time.
void printSeries(const sim::SimResult& r, std::ostream& out) {
    out << "\n  " << std::right << std::setw(10) << "t (s)" << std::setw(10) << "running"
        << std::setw(10) << "waiting" << std::setw(12) << "preempted";
    for (const auto& g : r.groupLabels)
        out << "  " << g;
    out << "\n";
    for (std::size_t i = 0; i < r.series.t.size(); ++i) {
        out << "  " << std::setw(10) << number(r.series.t[i], 2) << std::setw(10)
            << withThousands(r.series.running[i]) << std::setw(10)
            << withThousands(r.series.waiting[i]) << std::setw(12)
            << withThousands(r.series.preempted[i]);
        for (std::size_t g = 0; g < r.groupLabels.size(); ++g)
            out << "  " << std::setw(static_cast<int>(r.groupLabels[g].size()))
                << withThousands(r.series.blocksInUse[g][i]);
        out << "\n";
    }
}

// The text report.
void printSimulation(const SimReport& p, std::ostream& out) {
    const sim::SimResult& r = p.r;
    printSummary(p, out);
    printLatency(r, out);
    if (p.slo)
        printGoodput(p, out);
    printRow(out, "Peak",
             "running " + withThousands(r.peakRunning) + ", waiting " +
                 withThousands(r.peakWaiting) + ", KV blocks " + withThousands(r.peakBlocksTotal) +
                 " of " + withThousands(r.numBlocks) + " (" +
                 number(100.0 * static_cast<double>(r.peakBlocksTotal) /
                            static_cast<double>(std::max<std::int64_t>(1, r.numBlocks)),
                        1) +
                 "%)");
    if (r.prefixHitTokens > 0)
        printRow(out, "Prefix cache hits", withThousands(r.prefixHitTokens) + " tokens");
    if (p.inv.has("series"))
        printSeries(r, out);
    if (!r.capped.empty())
        out << "Capped: " << r.capped << "\n";
    for (const auto& n : r.notes)
        out << "Note: " << n << "\n";
}

// Runs the replica on the trace or on the workload; an error of the trace is --trace's.
std::optional<OptionError> simulateReplica(const Invocation& inv, const sim::WorkloadSpec& w,
                                           const sim::SimOptions& o, int dp, sim::SimResult& r) {
    const core::Scenario& s = inv.scenario;
    if (!inv.has("trace")) {
        r = sim::simulate(s, w, o);
        return std::nullopt;
    }
    // A line's prefix_id shares the scenario's --prefix-tokens unless it gives its own.
    auto src = io::TraceSource::open(inv.value("trace"),
                                     s.levers.prefix.enabled ? s.levers.prefix.sharedTokens : 0);
    if (!src)
        return OptionError{"trace", src.error().message};
    Limited limited(**src, w.requests > 0 ? w.requests : -1, w.durationS, dp);
    r = sim::simulate(s, limited, o);
    if (!(*src)->error().empty())
        return OptionError{"trace", (*src)->error()};
    return std::nullopt;
}

} // namespace

int runSimulate(const Invocation& inv, std::ostream& out, std::ostream& err) {
    const std::string me = "kvledger simulate: ";
    auto badOption = [&](const OptionError& e) {
        err << me << "--" << e.option << ": " << printable(e.message) << "\n";
        return 2;
    };
    if (const auto e = optionConflict(inv))
        return badOption(*e);
    const core::Scenario& s = inv.scenario;
    const bool trace = inv.has("trace");
    const int dp = std::max(1, s.hardware.dataParallel);
    sim::WorkloadSpec w;
    if (const auto e = replicaWorkload(inv, dp, w))
        return badOption(*e);

    sim::SimOptions o;
    o.sloTtftMs = inv.has("slo-ttft-ms") ? std::stod(inv.value("slo-ttft-ms")) : 0;
    o.sloTpotMs = inv.has("slo-tpot-ms") ? std::stod(inv.value("slo-tpot-ms")) : 0;
    const double attainment =
        inv.has("slo-attainment") ? std::stod(inv.value("slo-attainment")) : 0.99;
    const bool slo = o.sloTtftMs > 0 || o.sloTpotMs > 0;
    if (inv.has("slo-attainment") && !slo)
        return badOption({"slo-attainment", "needs --slo-ttft-ms or --slo-tpot-ms"});

    sim::SimResult r;
    if (const auto e = simulateReplica(inv, w, o, dp, r))
        return badOption(*e);
    if (!r.error.empty()) {
        err << me << printable(r.error) << "\n";
        return 1;
    }
    sim::RateSearch search;
    const bool searched = slo && !trace;
    if (searched)
        search = sim::sustainableRate(s, w, o, attainment);

    const SimReport report{inv, s, w, o, r, search, dp, trace, slo, searched, attainment};
    if (inv.has("json"))
        out << io::dumpJson(simulationJson(report)) << "\n";
    else
        printSimulation(report, out);
    return 0;
}

} // namespace kvl::app::cli
