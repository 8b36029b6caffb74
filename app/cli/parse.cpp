#include "app/cli.h"

#include "options.h"

#include "core/deployment.h"
#include "core/io/scenario_args.h"
#include "core/io/scenario_file.h"
#include "core/names.h"
#include "core/units.h"

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QStringList>

namespace kvl::app {

namespace {

using cli::AppOption;
using cli::bad;
using cli::CommandSpec;
using cli::findAppOption;
using cli::findCommand;
using cli::ownOptions;
using cli::q;
using cli::scenarioParserOptions;

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

// The scenario file's fields and the options that set them.
const std::vector<std::pair<std::string_view, std::vector<const char*>>> kOptionsOfField{
    {"hardware.kv_memory_bytes", {"kv-memory-gib", "kv-memory-bytes"}},
    {"levers.paging.block_size", {"block-size"}},
    {"levers.quant.format.group_size", {"kv-group-size", "kv-granularity", "kv-dtype"}},
    {"gpu.memory_bytes", {"gpu"}},
    {"gpu.bandwidth_gbs", {"gpu"}},
};

// Why QCommandLineParser refused argv: an unknown option (with the nearest name), else Qt's
// own line.
Error parseFailure(const QCommandLineParser& p, const CommandSpec& c,
                   const QList<QCommandLineOption>& own, const QStringList& argv,
                   const std::string& see) {
    if (!p.unknownOptionNames().isEmpty()) {
        const QString name = p.unknownOptionNames().front();
        std::vector<std::string> names;
        for (const auto& o : own)
            names.push_back(o.names().back().toStdString());
        if (c.scenario)
            for (const auto& o : io::scenarioOptions())
                names.emplace_back(o.name);
        return bad("unknown option '" + typedOption(argv, name) + "'" +
                   core::didYouMean(name.toStdString(), names, "--") + see);
    }
    // Qt's own one line, e.g. "Missing value after '--context'."
    QString e = p.errorText();
    if (e.endsWith(QLatin1Char('.')))
        e.chop(1);
    if (!e.isEmpty())
        e[0] = e[0].toLower();
    return bad(e.toStdString());
}

// The command's own options, each checked, and its positional arguments.
Status readOwnOptions(const CommandSpec& c, const QCommandLineParser& p, const std::string& see,
                      Invocation& inv) {
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
    return {};
}

// The rules a scenario file names by its field, named here by the option that set the
// value (the same message); a value that came from --scenario's file keeps the field.
Error fieldError(const core::FieldProblem& p, const std::vector<io::GivenOption>& given) {
    for (const auto& [field, options] : kOptionsOfField)
        if (p.field == field)
            for (const auto* o : options)
                for (const auto& g : given)
                    if (g.name == o)
                        return bad("--" + g.name + ": " + p.message);
    return bad("--scenario: " + p.field + ": " + p.message);
}

// A layout size out of range names the options that set it ("--pp: pipeline parallel size
// 100 exceeds the model's 32 layers").
Error validationError(const std::string& problem, const std::vector<io::GivenOption>& given) {
    static const std::vector<std::pair<std::string_view, std::vector<const char*>>>
        kOptionsOfProblem{{"tp (GPU count)", {"tp"}},
                          {"pipeline parallel", {"pp"}},
                          {"data parallel", {"dp"}},
                          {"decode context parallel", {"dcp", "tp"}}};
    for (const auto& [start, options] : kOptionsOfProblem)
        if (problem.rfind(start, 0) == 0) {
            std::string set;
            for (const auto* o : options)
                for (const auto& g : given)
                    if (g.name == o)
                        set += (set.empty() ? "--" : ", --") + g.name;
            if (!set.empty())
                return bad(set + ": " + problem);
        }
    return bad(problem);
}

// The scenario the options give, checked as the command needs it.
Status checkScenario(const CommandSpec& c, const core::Scenario& s,
                     const std::vector<io::GivenOption>& given) {
    if (auto problem = s.fieldProblem())
        return fieldError(*problem, given);
    if (auto problem = s.validate())
        return validationError(*problem, given);
    if (auto problem = core::blockSizeProblem(s))
        return fieldError(*problem, given);
    // The planner sizes each GPU kind's KV pool from that kind's memory, as vLLM does with
    // --gpu-memory-utilization; one fixed pool cannot be honoured across kinds.
    if (c.name == "plan" && s.hardware.kvMemoryBytes)
        return fieldError(core::FieldProblem{"hardware.kv_memory_bytes",
                                             "plan sizes each GPU's KV pool from its memory "
                                             "(--gpu-memory-utilization); a fixed KV memory is "
                                             "for ledger, export and the window"},
                          given);
    // A layout vLLM refuses to start is an error, not a result with a warning at its end.
    if (c.name == "ledger")
        if (auto st = core::checkLayout(s.model, core::layoutOf(s)); !st) {
            std::string set;
            for (const auto& g : given)
                if (g.name == "tp" || g.name == "pp" || g.name == "dp" || g.name == "dcp" ||
                    g.name == "enable-expert-parallel")
                    set += (set.empty() ? "--" : ", --") + g.name;
            // Unsupported, not BadInput: ledger --json answers it with "valid": false.
            return makeError(ErrorCode::Unsupported,
                             (set.empty() ? std::string("--scenario") : set) + ": layout " +
                                 core::layoutLabel(core::layoutOf(s)) + ": " + st.error().message);
        }
    // A context beyond max_model_len is one vLLM rejects; raising max_model_len (which vLLM
    // then checks against memory, as the ledger does) is the user's call, not ours.
    if ((c.name == "ledger" || c.name == "plan") && s.workload.context > s.effectiveMaxModelLen()) {
        const std::string ctx = core::withThousands(s.workload.context);
        if (s.workload.maxModelLen > 0)
            return bad("--context: " + ctx + " tokens exceed --max-model-len " +
                       core::withThousands(s.workload.maxModelLen) +
                       "; raise --max-model-len to at least " + ctx);
        return bad("--context: " + ctx + " tokens exceed " + s.model.id + "'s max model length (" +
                   core::withThousands(s.model.maxContext) + "); pass --max-model-len " +
                   std::to_string(s.workload.context) + " to ask vLLM for more");
    }
    return {};
}

// The scenario options into inv.scenario (and plan's --gpu list).
Status readScenario(const CommandSpec& c, const QCommandLineParser& p, Invocation& inv) {
    std::vector<io::GivenOption> given;
    for (const auto& o : io::scenarioOptions())
        if (p.isSet(q(o.name)))
            given.push_back({std::string(o.name), o.valueName.empty()
                                                      ? std::string()
                                                      : p.value(q(o.name)).toStdString()});
    auto s = io::applyScenarioOptions(given, io::defaultScenario());
    if (!s)
        return s.error();
    if (Status ok = checkScenario(c, *s, given); !ok)
        return ok;
    inv.scenario = *s;
    if (c.name == "plan")
        for (const QString& g : p.values(QStringLiteral("gpu")))
            inv.gpus.push_back(g.toStdString());
    return {};
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
    if (!p.parse(argv))
        return parseFailure(p, c, own, argv, see);
    Invocation inv;
    inv.command = std::string(c.name);
    if (p.isSet(QStringLiteral("help"))) {
        inv.help = true;
        return inv;
    }
    if (Status ok = readOwnOptions(c, p, see, inv); !ok)
        return ok.error();
    if (c.scenario)
        if (Status ok = readScenario(c, p, inv); !ok)
            return ok.error();
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

} // namespace kvl::app
