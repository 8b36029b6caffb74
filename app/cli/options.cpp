#include "options.h"

#include "text.h"

#include "app/cli.h"
#include "widgets/charts/chart_registry.h"

#include "core/io/scenario_args.h"
#include "core/io/scenario_file.h"
#include "core/scenario.h"
#include "core/sim/workload.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace kvl::app {

namespace cli {

namespace {

// A file name, not the next option swallowed as one (`--screenshot --help` must not write a
// file named "--help"); a file that starts with a dash is still ./-name.
Status fileName(const std::string& v) {
    if (v.empty())
        return bad("expected a file name, got ''");
    if (v[0] == '-')
        return bad("expected a file name, got the option '" + v + "' (write ./" + v +
                   " for a file of that name)");
    return {};
}

// A finite number in [lo, hi].
Status numberIn(const std::string& v, double lo, double hi, const std::string& what) {
    char* end = nullptr;
    const double x = v.empty() ? 0.0 : std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x) || x < lo || x > hi)
        return bad("expected " + what + ", got '" + v + "'");
    return {};
}

Status lengthDist(const std::string& v) {
    auto d = core::sim::parseLengthDist(v);
    return d ? Status{} : Status{d.error()};
}

Status positiveInt(const std::string& v, std::int64_t hi) {
    std::int64_t n = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || ptr != v.data() + v.size() || v.empty())
        return bad("expected a whole number, got '" + v + "'");
    if (n < 1 || n > hi)
        return bad("must be between 1 and " + std::to_string(hi) + ", got " + v);
    return {};
}

// A few words as a sentence lists them: "light or dark", "gpus, throughput or ...".
template <class Words> std::string orList(const Words& words) {
    std::string list;
    for (std::size_t i = 0; i < words.size(); ++i)
        list += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + std::string(words[i]);
    return list;
}

// One of a few words: "expected light or dark, got 'x'".
template <const auto& words> Status oneOf(const std::string& v) {
    if (std::find(words.begin(), words.end(), v) != words.end())
        return {};
    return bad("expected " + orList(words) + ", got '" + v + "'");
}

// --rank and --theme's words, as the commands read them (--tab's are kTabNames, app/cli.h).
constexpr std::array<std::string_view, 2> kRanks{"gpus", "throughput"};
constexpr std::array<std::string_view, 2> kThemes{"light", "dark"};

std::string sizeText(QSize s) {
    return std::to_string(s.width()) + "x" + std::to_string(s.height());
}

// The output: JSON, units, and what export and --screenshot write.
std::vector<AppOption> outputOptions() {
    std::string charts;
    for (const auto& c : widgets::chartSpecs()) {
        if (!charts.empty())
            charts += ", ";
        charts +=
            std::string(c.name) + " (" + widgets::formatSuffixes(c.formats).toStdString() + ")";
    }
    return {
        {"json", "", "print JSON instead of a table"},
        {"units", "U",
         "gib (GiB, 2^30 bytes) or gb (GB, 10^9 bytes) for the figures shown (default gib)",
         [](const std::string& v) -> Status {
             auto u = parseUnits(v);
             return u ? Status{} : Status{u.error()};
         }},
        {"chart", "NAME",
         "the chart or table to export: " + charts +
             "; quality, speed and probe show --probe-results",
         [](const std::string& v) -> Status {
             if (widgets::findChartSpec(QString::fromStdString(v)))
                 return {};
             return bad("expected " + widgets::chartNames().toStdString() + ", got '" + v + "'");
         }},
        {"out", "FILE", "the file --chart writes; its suffix picks the format", fileName},
        {"report", "FILE.pdf",
         "the review report: scenario, charts, lever ladder and vLLM command (PDF), and a "
         "measured page with --probe-results",
         fileName},
        {"scale", "F",
         "multiplies PNG pixels (2 for high-DPI slides), " + fixed(kMinScale, 2) + " to " +
             fixed(kMaxScale, 0) + ", at most " + fixed(widgets::kMaxPngPixels / 1e6, 0) +
             " megapixels (default " + fixed(kDefaultScale, 0) + ")",
         [](const std::string& v) -> Status {
             auto s = parseScale(v);
             return s ? Status{} : Status{s.error()};
         }},
        {"size", "WxH",
         "chart size in pixels (default " + sizeText(kDefaultChartSize) + ", so " +
             sizeText(kDefaultChartSize * kDefaultScale) +
             " PNG pixels; a table takes the size it needs), or the window's for --screenshot "
             "(default " +
             sizeText(kDefaultWindowSize) + "); " + std::to_string(kMinWidth) + "x" +
             std::to_string(kMinHeight) + " to " + std::to_string(kMaxSide) + "x" +
             std::to_string(kMaxSide),
         [](const std::string& v) -> Status {
             auto s = parseSize(v);
             return s ? Status{} : Status{s.error()};
         }},
        {"reference", "FILE", "pin a saved scenario (.kvl.json) as the dashed reference", fileName},
        {"probe-results", "FILE", "measured points from kvprobe bench --json or kvprobe run --json",
         fileName},
        {"screenshot", "FILE.png", "the PNG of the whole window to write", fileName},
    };
}

// The deployment planner's search.
std::vector<AppOption> planOptions() {
    return {
        {"users", "N", "concurrent requests to hold, each of --context tokens",
         [](const std::string& v) -> Status { return positiveInt(v, core::kMaxRequests); }},
        {"all-gpus", "",
         "try every GPU of the catalog, the scenario's first (else each --gpu given, "
         "side by side, or the scenario's)"},
        {"max-gpus", "N", "the most GPUs a plan may use (default 64)",
         [](const std::string& v) -> Status { return positiveInt(v, 4096); }},
        {"gpus-per-node", "N",
         "GPUs in one node: a layout whose TP x PP fits in one ranks first (default 8)",
         [](const std::string& v) -> Status { return positiveInt(v, 4096); }},
        {"rank", "R",
         "order the layouts of the fewest GPUs by gpus (capacity) or throughput (default "
         "gpus)",
         oneOf<kRanks>},
    };
}

// simulate's workload, SLO and report.
std::vector<AppOption> trafficOptions() {
    return {
        {"rate", "R",
         "open loop: requests per second arriving at the deployment (Poisson, or Gamma with "
         "--burstiness); each of --dp replicas gets 1/DP",
         [](const std::string& v) {
             return numberIn(v, core::sim::kMinRate, core::sim::kMaxRate,
                             "requests per second from 1e-06 to 1,000,000");
         }},
        {"burstiness", "CV",
         "Gamma arrivals whose gaps have this coefficient of variation (1 = Poisson, the "
         "default; 2 = bursty)",
         [](const std::string& v) {
             return numberIn(v, 0.01, 100, "a coefficient of variation from 0.01 to 100");
         }},
        {"prompt-tokens", "DIST",
         "prompt lengths, shared prefix included: N, uniform:MIN:MAX, lognormal:MEAN:SIGMA "
         "or hist:V:W,V:W,... (default 1024)",
         lengthDist},
        {"output-tokens", "DIST", "output lengths, as --prompt-tokens (default 256)", lengthDist},
        {"prefix-share", "F",
         "the fraction of requests whose prompt starts with the shared --prefix-tokens "
         "prefix (default 0: no sharing)",
         [](const std::string& v) { return numberIn(v, 0, 1, "a fraction from 0 to 1"); }},
        {"prefix-groups", "N", "distinct shared prefixes, chosen uniformly (default 1)",
         [](const std::string& v) -> Status { return positiveInt(v, 1'000'000); }},
        {"trace", "FILE",
         "requests from a JSONL or CSV file (arrival_s, prompt_tokens, output_tokens, "
         "optional prefix_id, prefix_tokens), read line by line",
         fileName},
        {"duration", "S", "stop arrivals after S seconds",
         [](const std::string& v) {
             return numberIn(v, 1e-6, core::sim::kMaxDurationS,
                             "seconds from 1e-06 to 100,000,000");
         }},
        {"requests", "N", "stop after N requests (default 1000 without --duration)",
         [](const std::string& v) -> Status { return positiveInt(v, core::sim::kMaxSimRequests); }},
        {"slo-ttft-ms", "A", "the SLO's time to first token, ms: goodput and the sustainable rate",
         [](const std::string& v) {
             return numberIn(v, 1e-3, 1e9, "milliseconds from 0.001 to 1e9");
         }},
        {"slo-tpot-ms", "B", "the SLO's time per output token, ms",
         [](const std::string& v) {
             return numberIn(v, 1e-3, 1e9, "milliseconds from 0.001 to 1e9");
         }},
        {"slo-attainment", "F",
         "the fraction of requests that must meet the SLO for a rate to count as sustainable "
         "(default 0.99)",
         [](const std::string& v) { return numberIn(v, 0.5, 1, "a fraction from 0.5 to 1"); }},
        {"seed", "K", "the workload's random seed (default 1)",
         [](const std::string& v) -> Status {
             std::uint64_t n = 0;
             const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
             if (ec != std::errc() || ptr != v.data() + v.size() || v.empty())
                 return bad("expected a whole number from 0 to 18446744073709551615, got '" + v +
                            "'");
             return {};
         }},
        {"series", "", "print the sampled time series (table: every point; JSON always has it)"},
    };
}

// The planner's speed floor, then the window's tab and theme (last, as the table always
// listed them).
std::vector<AppOption> viewOptions() {
    return {
        {"min-tokens-per-s-per-user", "F",
         "the speed floor: a plan slower per user (decode tokens/s) is flagged and not "
         "recommended while one above it exists; 0 turns it off (default 10)",
         [](const std::string& v) -> Status {
             char* end = nullptr;
             const double f = v.empty() ? -1.0 : std::strtod(v.c_str(), &end);
             if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(f) || f < 0 || f > 1e6)
                 return bad("expected a number from 0 to 1000000, got '" + v + "'");
             return {};
         }},
        {"tab", "T", "the tab shown: " + orList(kTabNames) + " (default ledger)", oneOf<kTabNames>},
        {"theme", "T",
         "light or dark (default light): the window's colours, and an exported chart's or "
         "table's; the PDF report prints light",
         oneOf<kThemes>},
    };
}

// The entry of `table` called `name` (exactly); null when there is none.
template <class T> const T* findNamed(const std::vector<T>& table, std::string_view name) {
    for (const T& entry : table)
        if (entry.name == name)
            return &entry;
    return nullptr;
}

} // namespace

// The table of every option, in the order the help lists them.
const std::vector<AppOption>& appOptions() {
    static const std::vector<AppOption> options = [] {
        std::vector<AppOption> all;
        for (auto&& group : {outputOptions(), planOptions(), trafficOptions(), viewOptions()})
            all.insert(all.end(), group.begin(), group.end());
        return all;
    }();
    return options;
}

const AppOption* findAppOption(std::string_view name) {
    return findNamed(appOptions(), name);
}

const std::vector<CommandSpec>& commands() {
    static const std::vector<CommandSpec> table{
        {"",
         {"[FILE.kvl.json]"},
         "open the explorer window, on a saved scenario when given (Qt's own options, such as "
         "-style or -reverse, work too)",
         {},
         false,
         1},
        {"ledger",
         {"ledger [options]"},
         "the KV ledger of one scenario: bytes per token and request, the pool, vLLM's blocks "
         "and concurrency, the lever ladder",
         {"json", "units"},
         true},
        {"plan",
         {"plan --users N [--gpu ID ...|--all-gpus] [options]",
          "plan --users N --rate R --slo-ttft-ms A [--slo-tpot-ms B] [options]"},
         "the deployment planner: for each GPU kind, the fewest GPUs and the TP x PP x DP "
         "layouts vLLM accepts that hold N users at --context, best first; with --rate and an "
         "SLO, each layout's replica is simulated at its share of the rate (simulate's "
         "workload options, prompts by default --context less the output) and the layouts that "
         "meet the SLO rank first",
         {"users", "all-gpus", "max-gpus", "gpus-per-node", "rank", "rate", "slo-ttft-ms",
          "slo-tpot-ms", "slo-attainment", "prompt-tokens", "output-tokens", "requests", "seed",
          "min-tokens-per-s-per-user", "json", "units"},
         true},
        {"simulate",
         {"simulate --rate R | --concurrency C [--prompt-tokens DIST] [--output-tokens DIST] "
          "[options]",
          "simulate --trace FILE [options]"},
         "a simulation of vLLM's scheduler on one replica serving a workload: TTFT, TPOT and "
         "latency percentiles, throughput, KV blocks and queues over time, goodput at an SLO and "
         "the largest rate that meets it (--concurrency is a closed loop of C clients)",
         {"rate", "burstiness", "prompt-tokens", "output-tokens", "prefix-share", "prefix-groups",
          "trace", "duration", "requests", "slo-ttft-ms", "slo-tpot-ms", "slo-attainment", "seed",
          "series", "json"},
         true},
        {"models", {"models [--json]"}, "the model catalog (resources/models.json)", {"json"}},
        {"gpus", {"gpus [--json]"}, "the GPU catalog (resources/gpus.json)", {"json"}},
        {"gguf",
         {"gguf FILE.gguf [--json]"},
         "a GGUF file's header, read without loading the weights: the architecture, the "
         "metadata llama.cpp sizes its KV cache from, and each tensor type's real bytes",
         {"json"},
         false,
         1},
        {"export",
         {"export --chart NAME --out FILE [options]", "export --report FILE.pdf [options]"},
         "a chart, a table or the review report, written without a window",
         {"chart", "out", "report", "scale", "size", "units", "reference", "probe-results", "theme",
          "rate", "prompt-tokens", "output-tokens", "slo-ttft-ms", "slo-tpot-ms"},
         true},
        {"--screenshot",
         {"--screenshot FILE.png [options]"},
         "a PNG of the whole window, without a display",
         {"screenshot", "size", "units", "reference", "probe-results", "tab", "theme", "rate",
          "prompt-tokens", "output-tokens", "slo-ttft-ms", "slo-tpot-ms"},
         true},
    };
    return table;
}

const CommandSpec* findCommand(std::string_view name) {
    return findNamed(commands(), name);
}

QString q(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

QList<QCommandLineOption> ownOptions(const CommandSpec& c) {
    QList<QCommandLineOption> out;
    for (const auto name : c.options) {
        const AppOption* o = findAppOption(name);
        out.append(QCommandLineOption(q(o->name), q(o->help), q(o->valueName)));
    }
    out.append(QCommandLineOption({QStringLiteral("h"), QStringLiteral("help")},
                                  QStringLiteral("show this help")));
    return out;
}

QList<QCommandLineOption> scenarioParserOptions() {
    const core::Scenario base = io::defaultScenario();
    QList<QCommandLineOption> out;
    for (const auto& o : io::scenarioOptions())
        out.append(QCommandLineOption(q(o.name), q(io::scenarioOptionDescription(o, base)),
                                      q(o.valueName)));
    return out;
}

} // namespace cli

using cli::bad;
using cli::fixed;
using cli::q;

Result<double> parseScale(std::string_view text) {
    const std::string t(text);
    char* end = nullptr;
    const double v = t.empty() ? 0.0 : std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v) || v < kMinScale ||
        v > kMaxScale)
        return bad("expected a number from " + fixed(kMinScale, 2) + " to " + fixed(kMaxScale, 0) +
                   ", got '" + t + "'");
    return v;
}

Result<QSize> parseSize(std::string_view text) {
    const QString t = q(text);
    const QStringList parts = t.split(QLatin1Char('x'));
    bool okW = false, okH = false;
    const int w = parts.size() == 2 ? parts[0].toInt(&okW) : 0;
    const int h = parts.size() == 2 ? parts[1].toInt(&okH) : 0;
    if (!okW || !okH || w < kMinWidth || h < kMinHeight || w > kMaxSide || h > kMaxSide)
        return bad("expected WIDTHxHEIGHT from " + std::to_string(kMinWidth) + "x" +
                   std::to_string(kMinHeight) + " to " + std::to_string(kMaxSide) + "x" +
                   std::to_string(kMaxSide) + " (e.g. 1600x1000), got '" + std::string(text) + "'");
    return QSize(w, h);
}

Result<core::UnitSystem> parseUnits(std::string_view text) {
    const QString t = q(text).toLower();
    if (t == QLatin1String("gib"))
        return core::UnitSystem::Binary;
    if (t == QLatin1String("gb"))
        return core::UnitSystem::Decimal;
    return bad("expected gib or gb, got '" + std::string(text) + "'");
}

} // namespace kvl::app
