#include "cli.h"

#include "widgets/charts/chart_registry.h"

#include "core/engine.h"
#include "core/io/catalog.h"
#include "core/io/json.h"
#include "core/io/ledger_json.h"
#include "core/io/scenario_args.h"
#include "core/io/scenario_file.h"
#include "core/ledger.h"
#include "core/planner.h"
#include "core/speed.h"
#include "core/units.h"
#include "core/vllm_command.h"

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QStringList>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <sstream>

namespace kvl::app {

namespace {

using core::formatBytes;
using core::withThousands;
using Json = nlohmann::ordered_json; // keeps the keys in the order written

Error bad(std::string message) {
    return makeError(ErrorCode::BadInput, std::move(message));
}

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// Words of `text` from column `col`, wrapped at `width` with continuation lines indented by
// `indent`.
void wrapped(std::ostream& out, const std::string& text, int col, int indent) {
    constexpr int kWidth = 100;
    std::istringstream words(text);
    std::string w;
    bool first = true;
    while (words >> w) {
        if (!first && col + 1 + static_cast<int>(w.size()) > kWidth) {
            out << "\n" << std::string(static_cast<std::size_t>(indent), ' ');
            col = indent;
            first = true;
        }
        if (!first) {
            out << ' ';
            ++col;
        }
        out << w;
        col += static_cast<int>(w.size());
        first = false;
    }
    out << "\n";
}

// ---- the command table ------------------------------------------------------------------

// An option of a command other than the scenario options. `check` tells a bad value (the
// message without the option's name); nullptr for free text such as a file name.
struct AppOption {
    std::string_view name;
    std::string_view valueName; // empty for a flag
    std::string help;
    Status (*check)(const std::string& value) = nullptr;
};

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

Status positiveInt(const std::string& v, std::int64_t hi) {
    std::int64_t n = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || ptr != v.data() + v.size() || v.empty())
        return bad("expected a whole number, got '" + v + "'");
    if (n < 1 || n > hi)
        return bad("must be between 1 and " + std::to_string(hi) + ", got " + v);
    return {};
}

std::string sizeText(QSize s) {
    return std::to_string(s.width()) + "x" + std::to_string(s.height());
}

const std::vector<AppOption>& appOptions() {
    static const std::vector<AppOption> options = [] {
        std::string charts;
        for (const auto& c : widgets::chartSpecs()) {
            if (!charts.empty())
                charts += ", ";
            charts +=
                std::string(c.name) + " (" + widgets::formatSuffixes(c.formats).toStdString() + ")";
        }
        return std::vector<AppOption>{
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
                 return bad("expected " + widgets::chartNames().toStdString() + ", got '" + v +
                            "'");
             }},
            {"out", "FILE", "the file --chart writes; its suffix picks the format", fileName},
            {"report", "FILE.pdf",
             "the review report: scenario, charts, lever ladder and vLLM command (PDF), and a "
             "measured page with --probe-results",
             fileName},
            {"scale", "F",
             "multiplies PNG pixels (2 for high-DPI slides), " + fixed(kMinScale, 2) + " to " +
                 fixed(kMaxScale, 0) + ", at most " + fixed(widgets::kMaxPngPixels / 1e6, 0) +
                 " megapixels (default 1)",
             [](const std::string& v) -> Status {
                 auto s = parseScale(v);
                 return s ? Status{} : Status{s.error()};
             }},
            {"size", "WxH",
             "chart size in pixels (default " + sizeText(kDefaultChartSize) +
                 "), or the window's for --screenshot (default " + sizeText(kDefaultWindowSize) +
                 "); " + std::to_string(kMinWidth) + "x" + std::to_string(kMinHeight) + " to " +
                 std::to_string(kMaxSide) + "x" + std::to_string(kMaxSide),
             [](const std::string& v) -> Status {
                 auto s = parseSize(v);
                 return s ? Status{} : Status{s.error()};
             }},
            {"reference", "FILE", "pin a saved scenario (.kvl.json) as the dashed reference",
             fileName},
            {"probe-results", "FILE",
             "measured points from kvprobe bench --json or kvprobe run --json", fileName},
            {"screenshot", "FILE.png", "the PNG of the whole window to write", fileName},
            {"users", "N", "concurrent requests to hold, each of --context tokens",
             [](const std::string& v) -> Status { return positiveInt(v, core::kMaxRequests); }},
            {"all-gpus", "",
             "try every GPU of the catalog (else each --gpu given, or the "
             "scenario's)"},
            {"max-gpus", "N", "the most GPUs a plan may use (default 64)",
             [](const std::string& v) -> Status { return positiveInt(v, 4096); }},
            {"gpus-per-node", "N",
             "GPUs in one node: a layout whose TP x PP fits in one ranks first (default 8)",
             [](const std::string& v) -> Status { return positiveInt(v, 4096); }},
            {"rank", "R",
             "order the layouts of the fewest GPUs by gpus (capacity) or throughput (default "
             "gpus)",
             [](const std::string& v) -> Status {
                 return v == "gpus" || v == "throughput"
                            ? Status{}
                            : Status{bad("expected gpus or throughput, got '" + v + "'")};
             }},
            {"tab", "T", "the tab shown: ledger, measured, speed or deployment (default ledger)",
             [](const std::string& v) -> Status {
                 return v == "ledger" || v == "measured" || v == "speed" || v == "deployment"
                            ? Status{}
                            : Status{bad("expected ledger, measured, speed or deployment, got '" +
                                         v + "'")};
             }},
            {"theme", "T", "light or dark (default light)",
             [](const std::string& v) -> Status {
                 return v == "light" || v == "dark"
                            ? Status{}
                            : Status{bad("expected light or dark, got '" + v + "'")};
             }},
        };
    }();
    return options;
}

const AppOption* findAppOption(std::string_view name) {
    for (const auto& o : appOptions())
        if (o.name == name)
            return &o;
    return nullptr;
}

struct CommandSpec {
    std::string_view name;               // the command word; "" = the window
    std::vector<std::string_view> usage; // after "kvledger "
    std::string_view summary;
    std::vector<std::string_view> options; // AppOption names
    bool scenario = false;                 // takes the scenario options
    int maxPositional = 0;
};

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
         {"plan --users N [--gpu ID ...|--all-gpus] [options]"},
         "the deployment planner: for each GPU kind, the fewest GPUs and the TP x PP x DP "
         "layouts vLLM accepts that hold N users at --context, best first",
         {"users", "all-gpus", "max-gpus", "gpus-per-node", "rank", "json", "units"},
         true},
        {"models", {"models [--json]"}, "the model catalog (resources/models.json)", {"json"}},
        {"gpus", {"gpus [--json]"}, "the GPU catalog (resources/gpus.json)", {"json"}},
        {"export",
         {"export --chart NAME --out FILE [options]", "export --report FILE.pdf [options]"},
         "a chart, a table or the review report, written without a window",
         {"chart", "out", "report", "scale", "size", "units", "reference", "probe-results"},
         true},
        {"--screenshot",
         {"--screenshot FILE.png [options]"},
         "a PNG of the whole window, without a display",
         {"screenshot", "size", "units", "reference", "probe-results", "tab", "theme"},
         true},
    };
    return table;
}

const CommandSpec* findCommand(std::string_view name) {
    for (const auto& c : commands())
        if (c.name == name)
            return &c;
    return nullptr;
}

QString q(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

// The parser's options of a command, in help order: its own, then the scenario options.
// parseCommand registers exactly these and helpText prints exactly these.
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

// "  --context N                   tokens per request (default 4096)", wrapped at 100 columns.
void printOptions(std::ostream& out, const QList<QCommandLineOption>& options) {
    constexpr int kColumn = 32;
    for (const auto& o : options) {
        QStringList names;
        for (const QString& n : o.names())
            names << (n.size() == 1 ? QStringLiteral("-") : QStringLiteral("--")) + n;
        QString line = QStringLiteral("  ") + names.join(QStringLiteral(", "));
        if (!o.valueName().isEmpty())
            line += QLatin1Char(' ') + o.valueName();
        const std::string head = line.toStdString();
        out << head;
        int col = static_cast<int>(head.size());
        if (col >= kColumn - 1) {
            out << "\n";
            col = 0;
        }
        out << std::string(static_cast<std::size_t>(kColumn - col), ' ');
        wrapped(out, o.description().toStdString(), kColumn, kColumn);
    }
}

std::string commandTitle(const CommandSpec& c) {
    return c.name.empty() ? std::string("kvledger") : "kvledger " + std::string(c.name);
}

// What the user typed for an option Qt calls `name` ("frobnicate" -> "--frobnicate=1").
std::string typedOption(const QStringList& argv, const QString& name) {
    for (const QString& a : argv) {
        QString n = a;
        while (n.startsWith(QLatin1Char('-')))
            n.remove(0, 1);
        if (a.startsWith(QLatin1Char('-')) && n.section(QLatin1Char('='), 0, 0) == name)
            return a.section(QLatin1Char('='), 0, 0).toStdString();
    }
    return (name.size() == 1 ? "-" : "--") + name.toStdString();
}

Result<Invocation> parseArguments(const CommandSpec& c, const QStringList& argv) {
    QCommandLineParser p;
    // "-help" and "--help" alike: no option of ours is a bundle of one-letter flags.
    p.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
    const QList<QCommandLineOption> own = ownOptions(c);
    p.addOptions(own);
    if (c.scenario)
        p.addOptions(scenarioParserOptions());
    const std::string see = " (see " + commandTitle(c) + " --help)";
    // Help wins wherever it is, even where an option would take it as its value
    // (`kvledger --screenshot --help`).
    if (argv.mid(1).contains(QStringLiteral("--help")) ||
        argv.mid(1).contains(QStringLiteral("-h"))) {
        Invocation inv;
        inv.command = std::string(c.name);
        inv.help = true;
        return inv;
    }
    if (!p.parse(argv)) {
        if (!p.unknownOptionNames().isEmpty())
            return bad("unknown option '" + typedOption(argv, p.unknownOptionNames().front()) +
                       "'" + see);
        // Qt's own one line, e.g. "Missing value after '--context'."
        QString e = p.errorText();
        if (e.endsWith(QLatin1Char('.')))
            e.chop(1);
        if (!e.isEmpty())
            e[0] = e[0].toLower();
        return bad(e.toStdString());
    }
    Invocation inv;
    inv.command = std::string(c.name);
    if (p.isSet(QStringLiteral("help"))) {
        inv.help = true;
        return inv;
    }
    for (const auto name : c.options) {
        const AppOption* o = findAppOption(name);
        if (!p.isSet(q(name)))
            continue;
        const std::string v = o->valueName.empty() ? std::string() : p.value(q(name)).toStdString();
        if (o->check)
            if (auto ok = o->check(v); !ok)
                return ok.error().prefixed("--" + std::string(name));
        inv.options.emplace(std::string(name), v);
    }
    // After the options: `--out --units gb` is about --out, not about a stray "gb".
    const QStringList positional = p.positionalArguments();
    if (positional.size() > c.maxPositional)
        return bad("unexpected argument '" + positional.value(c.maxPositional).toStdString() + "'" +
                   see);
    for (const QString& a : positional)
        inv.positional.push_back(a.toStdString());
    if (inv.has("units"))
        inv.units = *parseUnits(inv.value("units"));
    if (c.scenario) {
        std::vector<io::GivenOption> given;
        for (const auto& o : io::scenarioOptions())
            if (p.isSet(q(o.name)))
                given.push_back({std::string(o.name), o.valueName.empty()
                                                          ? std::string()
                                                          : p.value(q(o.name)).toStdString()});
        auto s = io::applyScenarioOptions(given, io::defaultScenario());
        if (!s)
            return s.error();
        if (auto problem = s->validate())
            return bad(*problem);
        inv.scenario = *s;
        if (c.name == "plan")
            for (const QString& g : p.values(QStringLiteral("gpu")))
                inv.gpus.push_back(g.toStdString());
    }
    return inv;
}

} // namespace

std::string Invocation::value(std::string_view name) const {
    const auto it = options.find(name);
    return it == options.end() ? std::string() : it->second;
}

Result<Invocation> parseCommand(std::string_view command, const std::vector<std::string>& args) {
    const CommandSpec* c = findCommand(command);
    if (!c)
        return bad("unknown command '" + std::string(command) + "' (see kvledger --help)");
    QStringList argv{QStringLiteral("kvledger")};
    for (const auto& a : args)
        argv << QString::fromStdString(a);
    return parseArguments(*c, argv);
}

Result<Invocation> parseWindowArguments(const QStringList& arguments) {
    return parseArguments(*findCommand(""), arguments);
}

std::string helpText(std::string_view command) {
    std::ostringstream out;
    const CommandSpec* c = command == "help" ? nullptr : findCommand(command);
    if (c && !c->name.empty()) {
        const char* prefix = "usage: ";
        for (const auto u : c->usage) {
            out << prefix << "kvledger " << u << "\n";
            prefix = "       ";
        }
        std::string summary(c->summary);
        summary[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(summary[0])));
        out << "\n";
        wrapped(out, summary + ".", 0, 0);
        out << "\nOptions:\n";
        printOptions(out, ownOptions(*c));
        if (c->scenario) {
            out << "\nScenario options (the default is " << io::defaultScenario().model.name
                << " on an " << io::defaultScenario().hardware.gpu.name
                << " with vLLM's defaults):\n";
            printOptions(out, scenarioParserOptions());
        }
        return out.str();
    }
    out << "usage: kvledger [COMMAND] [options]\n\nCommands:\n";
    for (const auto& cmd : commands()) {
        for (const auto u : cmd.usage)
            out << "  kvledger " << u << "\n";
        out << "      ";
        wrapped(out, std::string(cmd.summary), 6, 6);
    }
    out << "\nCharts and tables (export --chart):\n";
    // columns as wide as their longest entry, so a long name never runs into its title
    std::size_t nameWidth = 0, titleWidth = 0;
    for (const auto& chart : widgets::chartSpecs()) {
        nameWidth = std::max(nameWidth, std::string_view(chart.name).size());
        titleWidth = std::max(titleWidth, widgets::chartTitle(chart).toStdString().size());
    }
    for (const auto& chart : widgets::chartSpecs())
        out << "  " << std::left << std::setw(int(nameWidth + 2)) << chart.name
            << std::setw(int(titleWidth + 2)) << widgets::chartTitle(chart).toStdString()
            << widgets::formatSuffixes(chart.formats).toStdString()
            << (chart.measured ? "  (needs --probe-results)" : "") << "\n";
    out << "\n";
    wrapped(out,
            "Without a display, run the window with QT_QPA_PLATFORM=offscreen; export and "
            "--screenshot select it themselves. kvledger COMMAND --help lists the options of a "
            "command.",
            0, 0);
    out << "\nScenario options (ledger, export, --screenshot):\n";
    printOptions(out, scenarioParserOptions());
    return out.str();
}

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

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out;
}

namespace {

std::string fixed2(double v) {
    return fixed(v, 2);
}

void printTable(std::ostream& out, const core::Scenario& s, const core::LedgerResult& r,
                const std::vector<core::LadderStep>& ladder, core::UnitSystem u) {
    auto bytes = [u](std::int64_t b) {
        return formatBytes(b, u) + " (" + withThousands(b) + " B)";
    };
    out << printable(s.model.name) << " on " << s.hardware.gpuCount << " x "
        << printable(s.hardware.gpu.name) << "\n";
    out << "  " << s.model.geometrySummary() << "\n";
    out << "  attention " << r.kv.attentionLabel << ", KV " << core::formatLabel(r.kv.format)
        << ", "
        << (r.blockSize > 0 ? "paged " + std::to_string(r.blockSize) : std::string("contiguous"));
    if (s.levers.prefix.enabled)
        out << ", prefix " << withThousands(s.levers.prefix.sharedTokens) << " tokens x "
            << (s.levers.prefix.sharingRequests > 0
                    ? std::to_string(s.levers.prefix.sharingRequests)
                    : std::string("all"));
    out << "\n\n";
    const int w = 34;
    auto row = [&](const std::string& k, const std::string& v) {
        out << "  " << std::left << std::setw(w) << k << v << "\n";
    };
    row("KV per token (model)", bytes(r.kvBytesPerToken));
    row("KV per token (per GPU)", bytes(r.kvBytesPerTokenPerGpu));
    if (r.blockSize > 0)
        row("Block (all layers, per GPU)", bytes(r.pageBytesPerGpu));
    row("KV per request @" + withThousands(r.contextTokens), bytes(r.kvBytesPerRequest));
    if (s.hardware.gpuCount > 1)
        row("KV per request per GPU", bytes(r.kvBytesPerRequestPerGpu));
    if (r.sharedBytesPerRequestPerGpu > 0)
        row("Shared prefix saved per request", bytes(r.sharedBytesPerRequestPerGpu));
    row("Weights per GPU", bytes(r.weightsBytesPerGpu));
    if (r.kvMemoryOverridden) {
        row("KV memory (fixed)", bytes(r.availableKvBytes));
    } else {
        row("GPU memory", bytes(r.gpuMemoryBytes));
        row("Requested (x " + fixed2(s.hardware.memoryUtilization) + ")", bytes(r.requestedBytes));
        row("Activation + non-torch reserve", bytes(r.activationBytes + r.overheadBytes));
        row("Available for KV cache", bytes(r.availableKvBytes));
    }
    if (r.blockSize > 0)
        row("GPU blocks", withThousands(r.numGpuBlocks));
    row("Requests of " + withThousands(r.contextTokens) + " that fit",
        withThousands(r.maxRequestsAtContext));
    if (!r.kvCacheGroups.empty()) {
        out << "\n  KV cache groups (vLLM v1, one pool of " << withThousands(r.numGpuBlocks)
            << " blocks of " << bytes(r.bytesPerBlock) << "):\n";
        for (const auto& g : r.kvCacheGroups)
            out << "    " << std::left << std::setw(24)
                << std::string(core::specTypeName(g.type)) +
                       (g.window > 0 ? " " + withThousands(g.window) : std::string())
                << std::right << std::setw(4) << g.layers << " layers"
                << (g.paddingSlots > 0 ? " + " + std::to_string(g.paddingSlots) + " padding"
                                       : std::string())
                << ", block " << g.blockSize << ", " << withThousands(g.admissionBlocks)
                << " blocks per max-length request\n";
    }
    if (r.blockSize > 0 && !r.capacityLogLine.empty()) {
        out << "\n  vLLM would log:\n    " << r.capacityLogLine << "\n";
        out << "    (older vLLM: GPU KV cache size " << withThousands(r.gpuKvCacheTokensLegacy)
            << " tokens)\n";
    } else {
        out << "\n  Contiguous reservation (not vLLM): " << withThousands(r.gpuKvCacheTokens)
            << " tokens, " << fixed2(r.maxConcurrency) << "x at max model length\n";
    }
    {
        const std::int64_t batch = io::speedBatch(s, r);
        const core::DecodeStep d = core::decodeStep(s, batch, s.workload.context);
        if (d.stepMs > 0)
            out << "\n  Decode (estimate, eta_mem " << fixed2(core::kDefaultMemoryEfficiency)
                << "): " << withThousands(batch) << " requests x "
                << withThousands(s.workload.context) << " tokens -> " << fixed2(d.stepMs)
                << " ms/step, " << fixed(d.tokensPerSecondPerUser, 1) << " tokens/s per user, "
                << fixed(d.clusterTokensPerSecond, 0) << " tokens/s per replica x DP ("
                << core::regimeName(d.regime) << ")\n";
    }
    if (s.workload.targetRequests > 0) {
        const auto need = core::computeGpusNeeded(s, s.workload.targetRequests);
        out << "\n  " << withThousands(s.workload.targetRequests) << " requests x "
            << withThousands(s.workload.context) << " tokens: weights "
            << formatBytes(need.weightsBytes, core::UnitSystem::Decimal) << " + KV "
            << formatBytes(need.kvBytes, core::UnitSystem::Decimal) << " = "
            << formatBytes(need.totalBytes, core::UnitSystem::Decimal) << " -> ";
        if (need.gpus > 0)
            out << need.gpus << " x " << printable(s.hardware.gpu.name) << " as "
                << core::layoutLabel(need.layout) << " (vLLM)"
                << (need.pooledGpus > 0 && need.pooledGpus != need.gpus
                        ? "; pooled memory alone would say " + std::to_string(need.pooledGpus)
                        : std::string())
                << "\n";
        else
            out << "no layout of " << core::kMaxPlanGpus
                << " GPUs or fewer: " << printable(need.note) << "\n";
    }
    out << "\n  Lever ladder @" << withThousands(r.contextTokens) << " tokens\n";
    out << "  " << std::left << std::setw(36) << "step" << std::right << std::setw(14) << "KV/token"
        << std::setw(16) << "per request" << std::setw(12) << "requests"
        << "\n";
    for (const auto& st : ladder) {
        out << "  " << std::left << std::setw(36) << printable(st.label) << std::right
            << std::setw(14) << formatBytes(st.result.kvBytesPerToken, u) << std::setw(16)
            << formatBytes(st.result.kvBytesPerRequest, u) << std::setw(12)
            << withThousands(st.result.maxRequestsAtContext) << "\n";
    }
    for (const auto& wmsg : r.warnings)
        out << "\n  warning: " << printable(wmsg);
    if (!r.warnings.empty())
        out << "\n";
    if (!r.error.empty())
        out << "\n  " << printable(r.error) << "\n";
}

// KV bytes per token in the model's own dtype (vLLM "auto"), whole model.
std::int64_t nativeBytesPerToken(const core::ModelSpec& m) {
    core::Scenario s = io::defaultScenario();
    s.model = m;
    s.levers = {};
    return core::computeLedger(s).kvBytesPerToken;
}

int runModels(const Invocation& inv, std::ostream& out) {
    const bool json = inv.has("json");
    const auto& models = io::builtinModels();
    if (json) {
        Json a = Json::array();
        for (const auto& m : models)
            a.push_back({{"id", m.id},
                         {"name", m.name},
                         {"family", m.family},
                         {"layers", m.numLayers()},
                         {"q_heads", m.qHeads},
                         {"kv_heads", m.kvHeads},
                         {"head_dim", m.headDim},
                         {"params", m.params},
                         {"max_context", m.maxContext},
                         {"kv_bytes_per_token", nativeBytesPerToken(m)}});
        out << io::dumpJson(a) << "\n";
        return 0;
    }
    out << std::left << std::setw(24) << "id" << std::setw(16) << "family" << std::right
        << std::setw(7) << "layers" << std::setw(8) << "q" << std::setw(5) << "kv" << std::setw(6)
        << "hd" << std::setw(10) << "max ctx" << std::setw(14) << "KV/token"
        << "  notes\n";
    for (const auto& m : models) {
        out << std::left << std::setw(24) << printable(m.id) << std::setw(16) << printable(m.family)
            << std::right << std::setw(7) << m.numLayers() << std::setw(8) << m.qHeads
            << std::setw(5) << m.kvHeads << std::setw(6) << m.headDim << std::setw(10)
            << withThousands(m.maxContext) << std::setw(14) << withThousands(nativeBytesPerToken(m))
            << "  " << printable(m.notes) << "\n";
    }
    return 0;
}

int runGpus(const Invocation& inv, std::ostream& out) {
    const bool json = inv.has("json");
    const auto& gpus = io::builtinGpus();
    if (json) {
        Json a = Json::array();
        for (const auto& g : gpus)
            a.push_back({{"id", g.id},
                         {"name", g.name},
                         {"vendor", g.vendor},
                         {"memory_bytes", g.memoryBytes},
                         {"bandwidth_gbs", g.bandwidthGBs},
                         {"memory_type", g.memoryType}});
        out << io::dumpJson(a) << "\n";
        return 0;
    }
    out << std::left << std::setw(18) << "id" << std::setw(26) << "name" << std::right
        << std::setw(14) << "memory" << std::setw(18) << "bytes" << std::setw(12) << "GB/s"
        << "\n";
    for (const auto& g : gpus)
        out << std::left << std::setw(18) << printable(g.id) << std::setw(26) << printable(g.name)
            << std::right << std::setw(14) << formatBytes(g.memoryBytes) << std::setw(18)
            << withThousands(g.memoryBytes) << std::setw(12) << g.bandwidthGBs << "\n";
    return 0;
}

int runLedger(const Invocation& inv, std::ostream& out, std::ostream& err) {
    // A block size the user asked for must be one vLLM takes (the window shows it as a
    // what-if; the command line refuses it).
    if (inv.scenario.levers.paging.enabled && inv.scenario.levers.paging.blockSize > 0)
        if (const auto bs = core::resolveBlockSizes(inv.scenario); !bs.error.empty()) {
            err << "kvledger ledger: --block-size: " << printable(bs.error) << "\n";
            return 2;
        }
    const auto r = core::computeLedger(inv.scenario);
    const auto ladder = core::computeLadder(inv.scenario);
    if (inv.has("json"))
        out << io::dumpJson(io::ledgerJson(inv.scenario, r, ladder)) << "\n";
    else
        printTable(out, inv.scenario, r, ladder, inv.units);
    return 0;
}

int runPlan(const Invocation& inv, std::ostream& out, std::ostream& err) {
    if (!inv.has("users")) {
        err << "kvledger plan: --users: missing (the concurrent requests to hold)\n";
        return 2;
    }
    core::PlanRequest req;
    req.base = inv.scenario;
    req.users = std::stoll(inv.value("users"));
    req.context = inv.scenario.workload.context;
    req.maxGpus = inv.has("max-gpus") ? std::stoi(inv.value("max-gpus")) : 64;
    req.gpusPerNode = inv.has("gpus-per-node") ? std::stoi(inv.value("gpus-per-node")) : 8;
    req.rank =
        inv.value("rank") == "throughput" ? core::PlanRank::Throughput : core::PlanRank::Gpus;
    if (inv.has("all-gpus")) {
        req.gpus = io::builtinGpus();
    } else if (!inv.gpus.empty()) {
        for (const auto& id : inv.gpus) {
            const core::GpuSpec* g = io::findGpu(id);
            if (!g) {
                err << "kvledger plan: --gpu: unknown GPU '" << printable(id)
                    << "' (kvledger gpus lists them)\n";
                return 2;
            }
            req.gpus.push_back(*g);
        }
    } else {
        req.gpus = {inv.scenario.hardware.gpu};
    }
    const core::PlanResult plan = core::planDeployments(req);
    if (inv.has("json")) {
        out << io::dumpJson(io::planJson(req, plan)) << "\n";
        return 0;
    }
    const auto order = plan.bestFirst();
    const core::UnitSystem u = inv.units;
    out << withThousands(req.users) << " users x " << withThousands(req.context) << " tokens of "
        << printable(inv.scenario.model.name) << ", KV "
        << core::shortLabel(core::storedKvFormat(inv.scenario)) << " (per GPU figures)\n\n";
    out << "  " << std::left << std::setw(20) << "GPU" << std::right << std::setw(6) << "GPUs"
        << "  " << std::left << std::setw(22) << "layout" << std::right << std::setw(10)
        << "per repl." << std::setw(9) << "cluster" << std::setw(12) << "KV/GPU" << std::setw(12)
        << "weights/GPU" << std::setw(12) << "headroom" << std::setw(12) << "tok/s/user"
        << "\n";
    for (const core::GpuPlan* g : order) {
        out << "  " << std::left << std::setw(20) << printable(g->gpu.id);
        if (!g->fits) {
            out << "     -  " << printable(g->reason) << "\n";
            continue;
        }
        const core::Deployment& d = g->layouts.front();
        out << std::right << std::setw(6) << d.layout.gpus() << "  " << std::left << std::setw(22)
            << core::layoutLabel(d.layout) << std::right << std::setw(10)
            << withThousands(d.requestsPerReplica) << std::setw(9)
            << withThousands(d.clusterRequests) << std::setw(12) << formatBytes(d.kvBytesPerGpu, u)
            << std::setw(12) << formatBytes(d.weightsBytesPerGpu, u) << std::setw(12)
            << formatBytes(d.headroomBytesPerGpu, u) << std::setw(12)
            << fixed(d.tokensPerSecondPerUser, 1) << "\n";
        for (std::size_t i = 1; i < g->layouts.size() && i < 4; ++i)
            out << "  " << std::setw(28) << ""
                << "or " << core::layoutLabel(g->layouts[i].layout) << "\n";
    }
    if (!order.empty() && order.front()->fits) {
        out << "\n  The best plan, for vLLM:\n";
        std::istringstream lines(
            core::vllmServeCommand(order.front()->layouts.front().scenario).text());
        for (std::string line; std::getline(lines, line);)
            out << "    " << line << "\n";
    }
    return 0;
}

} // namespace

int runLedgerCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 bool& handled) {
    handled = true;
    if (args.empty()) {
        handled = false;
        return 0;
    }
    const std::string& first = args[0];
    if (first == "--help" || first == "-h" || first == "help") {
        // `kvledger help export` is `kvledger export --help`.
        const std::string topic = first == "help" && args.size() > 1 ? args[1] : std::string();
        if (!topic.empty() && !findCommand(topic)) {
            err << "kvledger help: unknown command '" << printable(topic)
                << "' (see kvledger --help)\n";
            return 2;
        }
        out << helpText(topic);
        return 0;
    }
    if (first == "--version") {
#ifdef KVL_VERSION
        out << "kvledger " << KVL_VERSION << "\n";
#endif
        return 0;
    }
    if (first != "ledger" && first != "plan" && first != "models" && first != "gpus") {
        handled = false;
        return 0;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    auto inv = parseCommand(first, rest);
    if (!inv) {
        err << "kvledger " << first << ": " << printable(inv.error().message) << "\n";
        return 2;
    }
    if (inv->help) {
        out << helpText(first);
        return 0;
    }
    if (first == "ledger")
        return runLedger(*inv, out, err);
    if (first == "plan")
        return runPlan(*inv, out, err);
    if (first == "models")
        return runModels(*inv, out);
    return runGpus(*inv, out);
}

} // namespace kvl::app
