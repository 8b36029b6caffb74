// kvprobe: the probe on the command line. The only place that prints and chooses exit codes:
// 0 success, 1 a check or run failed (or the device is missing), 2 bad usage or bad input.
// Options live in one table: each command accepts only its own, and --help is generated from it.
// (Hand-written rather than a library: the GPU machine builds this with only CMake, nvcc and a
// compiler, and the grammar is a handful of --name value pairs.)
#include "core/io/files.h"
#include "core/io/model_table.h"
#include "core/units.h"
#include "gpu_probe/backend.h"
#include "gpu_probe/io/probe_json.h"
#include "gpu_probe/run/probe.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace kvl;
using namespace kvl::probe;

namespace {

enum Command : unsigned { kInfo = 1, kCheck = 2, kRun = 4, kBench = 8 };
constexpr unsigned kAllCommands = kInfo | kCheck | kRun | kBench;

struct CommandSpec {
    Command id;
    const char* name;
    const char* summary;
};
constexpr CommandSpec kCommands[] = {
    {kInfo, "info", "list the backends and why one is unavailable"},
    {kCheck, "check", "every operation x format x block size against the FP64 references"},
    {kRun, "run", "measure one layer: memory against core, speed, quality"},
    {kBench, "bench", "formats x contexts x batch sizes on one backend"},
};

struct OptionSpec {
    const char* name;
    const char* valueName;         // nullptr: a flag
    unsigned commands;             // the commands that take it
    unsigned requiredBy;           // the commands that need it
    std::int64_t low, high;        // the range of an integer value (low > high: not an integer)
    std::string (*defaultValue)(); // nullptr: none
    const char* help;
};

std::string defaultBackend() {
    return ProbePlan{}.backend;
}
std::string defaultSeed() {
    return std::to_string(ProbePlan{}.seed);
}
std::string defaultPrefix() {
    return std::to_string(ProbePlan{}.prefixTokens);
}
std::string defaultRepeats() {
    return std::to_string(ProbePlan{}.repeats);
}

constexpr std::int64_t kNoRange = 1, kNoRangeHigh = 0;
constexpr std::int64_t kMaxContext = std::int64_t(1) << 24;

const OptionSpec kOptions[] = {
    {"--backend", "cpu|cuda|emulated-cuda", kCheck | kRun | kBench, 0, kNoRange, kNoRangeHigh,
     defaultBackend, "the backend to measure on"},
    {"--model", "ID", kRun, kRun, kNoRange, kNoRangeHigh, nullptr,
     "catalog id of the model whose layer is probed (llama-3-8b, ...)"},
    {"--kv-dtype", "X", kRun, kRun, kNoRange, kNoRangeHigh, nullptr, "KV format (see below)"},
    {"--block-size", "B", kRun, kRun, 1, 4096, nullptr, "tokens per page"},
    {"--batch", "N", kRun, kRun, 1, 4096, nullptr, "requests"},
    {"--context", "T", kRun, kRun, 1, kMaxContext, nullptr, "tokens per request"},
    {"--prefix-tokens", "P", kRun, 0, 0, kMaxContext, defaultPrefix,
     "prompt prefix shared by every request (its full blocks)"},
    {"--seed", "N", kCheck | kRun | kBench, 0, 0, INT64_MAX, defaultSeed,
     "seed of the synthetic data, the shapes and the page order"},
    {"--repeats", "R", kRun, 0, 1, 1000, defaultRepeats, "timed repeats (the median is reported)"},
    {"--k-npy", "FILE", kRun, 0, kNoRange, kNoRangeHigh, nullptr,
     "real keys, float16/float32 [tokens, kv_heads, head_dim], C order"},
    {"--v-npy", "FILE", kRun, 0, kNoRange, kNoRangeHigh, nullptr, "real values, same shape"},
    {"--bf16-input", nullptr, kRun, 0, kNoRange, kNoRangeHigh, nullptr,
     "store bf16 inputs instead of fp16"},
    {"--quick", nullptr, kCheck | kBench, 0, kNoRange, kNoRangeHigh, nullptr,
     "fewer cases: one per format and block size (check), fewer sizes (bench)"},
    {"--json", nullptr, kAllCommands, 0, kNoRange, kNoRangeHigh, nullptr,
     "print one JSON object (schema in gpu_probe/README.md)"},
    {"--jsonl", "FILE", kBench, 0, kNoRange, kNoRangeHigh, nullptr,
     "append each row to FILE as it finishes, one JSON object per line (the run document of "
     "that row), so a run cut short keeps its rows"},
    {"--help", nullptr, kAllCommands, 0, kNoRange, kNoRangeHigh, nullptr, "this help"},
};

const OptionSpec* findOption(const std::string& name) {
    for (const auto& option : kOptions)
        if (name == option.name || (name == "-h" && std::string(option.name) == "--help"))
            return &option;
    return nullptr;
}

const CommandSpec* findCommand(const std::string& name) {
    for (const auto& command : kCommands)
        if (name == command.name)
            return &command;
    return nullptr;
}

std::string commandNames(unsigned mask) {
    std::string names;
    for (const auto& command : kCommands)
        if (mask & command.id)
            names += (names.empty() ? "" : ", ") + std::string(command.name);
    return names;
}

std::string synopsis(const CommandSpec& command) {
    std::string line = std::string("kvprobe ") + command.name;
    for (const auto& option : kOptions) {
        if (!(option.commands & command.id) || std::string(option.name) == "--help")
            continue;
        std::string word = option.name;
        if (option.valueName)
            word += std::string(" ") + option.valueName;
        line += ' ' + ((option.requiredBy & command.id) ? word : "[" + word + "]");
    }
    return line;
}

constexpr const char* kFormats =
    "kv-dtype: fp16 bf16 fp32 fp8 fp8_e4m3 fp8_e5m2 (add -per-head) int8 int4 int4-g32 int4-g64\n"
    "          int4-g128 int4-kivi int2 int2-kivi\n";

std::string generalHelp() {
    std::string text = "usage:\n";
    for (const auto& command : kCommands)
        text += "  " + synopsis(command) + "\n";
    text += "commands:\n";
    for (const auto& command : kCommands)
        text += "  " + std::string(command.name) +
                std::string(8 - std::string(command.name).size(), ' ') + command.summary + "\n";
    text += "kvprobe COMMAND --help describes a command's options. ";
    text += "Exit status: 0 ok, 1 a check or run failed, 2 bad usage or input.\n";
    return text + kFormats;
}

std::string commandHelp(const CommandSpec& command) {
    std::string text = "usage: " + synopsis(command) + "\n" + command.summary + "\noptions:\n";
    for (const auto& option : kOptions) {
        if (!(option.commands & command.id))
            continue;
        std::string left = std::string("  ") + option.name;
        if (option.valueName)
            left += std::string(" ") + option.valueName;
        text += left + std::string(left.size() < 24 ? 24 - left.size() : 1, ' ') + option.help;
        if (option.low <= option.high && option.high == INT64_MAX)
            text += ", an integer >= " + std::to_string(option.low);
        else if (option.low <= option.high)
            text += ", " + std::to_string(option.low) + "-" + std::to_string(option.high);
        if (option.requiredBy & command.id)
            text += "; required";
        if (option.defaultValue)
            text += "; default " + option.defaultValue();
        text += "\n";
    }
    return command.id == kRun ? text + kFormats : text;
}

struct Args {
    const CommandSpec* command = nullptr;
    std::map<std::string, std::string> values; // given values and flags ("" for a flag)
    bool help = false;

    bool has(const std::string& name) const { return values.count(name) != 0; }
    std::string get(const std::string& name) const {
        if (auto it = values.find(name); it != values.end())
            return it->second;
        const OptionSpec* option = findOption(name);
        return option && option->defaultValue ? option->defaultValue() : std::string();
    }
    std::int64_t integer(const std::string& name) const { // checked by parseArgs
        return std::strtoll(get(name).c_str(), nullptr, 10);
    }
};

Status checkInteger(const OptionSpec& option, const std::string& text) {
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || errno || *end || value < option.low || value > option.high)
        return Error{ErrorCode::BadInput, std::string(option.name) + " must be an integer " +
                                              std::to_string(option.low) + "-" +
                                              std::to_string(option.high) + ", got '" + text + "'"};
    return {};
}

Result<Args> parseArgs(int argc, char** argv) {
    Args args;
    const std::string first = argc > 1 ? argv[1] : "";
    if (first == "--help" || first == "-h") {
        args.help = true;
        return args;
    }
    args.command = findCommand(first);
    if (!args.command)
        return Error{ErrorCode::BadInput,
                     first.empty() ? "no command given (info, check, run or bench; see --help)"
                                   : "unknown command '" + first +
                                         "' (info, check, run or bench; see --help)"};
    const std::string name = args.command->name;
    for (int i = 2; i < argc; ++i) {
        const std::string word = argv[i];
        const OptionSpec* option = findOption(word);
        if (!option)
            return Error{ErrorCode::BadInput, "unknown option '" + word + "' (kvprobe " + name +
                                                  " --help lists " + name + "'s options)"};
        if (!(option->commands & args.command->id))
            return Error{ErrorCode::BadInput, word + " is not an option of " + name +
                                                  " (it belongs to " +
                                                  commandNames(option->commands) + ")"};
        if (args.has(option->name))
            return Error{ErrorCode::BadInput, word + " is given twice"};
        std::string value;
        if (option->valueName) {
            if (i + 1 >= argc)
                return Error{ErrorCode::BadInput,
                             word + " needs a value (" + option->valueName + ")"};
            value = argv[++i];
            if (option->low <= option->high)
                if (Status valid = checkInteger(*option, value); !valid)
                    return valid.error();
        }
        args.values[option->name] = value;
    }
    args.help = args.has("--help");
    if (!args.help)
        for (const auto& option : kOptions)
            if ((option.requiredBy & args.command->id) && !args.has(option.name))
                return Error{ErrorCode::BadInput, name + " needs " + option.name + " " +
                                                      option.valueName + " (see kvprobe " + name +
                                                      " --help)"};
    return args;
}

// Bad usage and bad input (a flag, a file, a name) exit 2; everything else that failed, 1.
int exitCodeFor(const Error& error) {
    switch (error.code) {
    case ErrorCode::BadInput:
    case ErrorCode::BadFile:
    case ErrorCode::NotFound:
        return 2;
    default:
        return 1;
    }
}

int fail(const Error& error) {
    std::fprintf(stderr, "kvprobe: %s\n", error.message.c_str());
    return exitCodeFor(error);
}

void printJson(const std::string& document) {
    std::fputs(document.c_str(), stdout);
}

int cmdInfo(const Args& args) {
    const auto backends = listBackends();
    if (args.has("--json")) {
        printJson(infoJson(backends, cudaCompiled()));
        return 0;
    }
    std::printf("kvprobe (schema %d)\n", kSchemaVersion);
    for (const auto& backend : backends) {
        if (backend.available)
            std::printf("  %-5s available: %s%s%s\n", backend.name.c_str(), backend.device.c_str(),
                        backend.details.empty() ? "" : ", ", backend.details.c_str());
        else
            std::printf("  %-5s unavailable: %s\n", backend.name.c_str(), backend.reason.c_str());
    }
    return 0;
}

int cmdCheck(const Args& args) {
    CheckPlan plan;
    plan.backend = args.get("--backend");
    plan.seed = std::uint64_t(args.integer("--seed"));
    plan.quick = args.has("--quick");
    const CheckReport report = runCheck(plan);
    if (args.has("--json")) {
        printJson(checkJson(report));
    } else if (report.ok()) {
        for (const auto& check : report.cases)
            std::printf("%s  %-44s %s\n", check.passed ? "PASS" : "FAIL", check.name.c_str(),
                        check.detail.c_str());
        std::printf("%d passed, %d failed\n", report.passed, report.failed);
    }
    if (!report.ok())
        return fail(report.error);
    if (args.has("--json"))
        std::fprintf(stderr, "%d passed, %d failed\n", report.passed, report.failed);
    return report.failed == 0 ? 0 : 1;
}

void printMemory(const ProbeResult& result) {
    using core::formatBytes;
    std::printf("memory (one layer, %d KV heads x head_dim %d):\n", result.kvHeads, result.headDim);
    std::printf("  predicted by core   %lld B (%s)\n", (long long)result.predictedPoolBytes,
                formatBytes(result.predictedPoolBytes).c_str());
    std::printf("  pool (pages x page) %lld B = %lld pages x %lld B, %lld pages saved by sharing; "
                "%s\n",
                (long long)result.poolBytes, (long long)result.pagesUsed,
                (long long)result.pageBytes, (long long)result.pagesSaved,
                result.poolBytes == result.predictedPoolBytes ? "equal to core's prediction"
                                                              : "DIFFERS from core's prediction");
    std::printf("  allocated           %lld B: +%lld B rounding to the allocator's %lld B "
                "granularity (%+.4f%%, informational)\n",
                (long long)result.allocatedPoolBytes,
                (long long)(result.allocatedPoolBytes - result.poolBytes),
                (long long)result.allocatorGranularity, result.memoryErrorPct);
    std::printf("  device account      %lld B (%s)\n", (long long)result.devicePoolBytes,
                result.deviceAccountKind.c_str());
}

void printResultText(const ProbeResult& result) {
    std::printf("%s on %s (%s), %s, block %d, batch %d x %lld tokens, prefix %lld\n",
                result.formatLabel.c_str(), result.backend.c_str(), result.device.c_str(),
                result.modelId.c_str(), result.blockSize, result.batch, (long long)result.context,
                (long long)result.prefixTokens);
    printMemory(result);
    if (result.speedMeasured) {
        std::printf("speed (median):\n");
        std::printf("  copy       %.1f GB/s (read + write)\n", result.copyGBs);
        if (result.readGBs > 0) // 0: this backend has no read stream
            std::printf("  read       %.1f GB/s (read stream)\n", result.readGBs);
        std::printf("  store      %.3f ms, %.1f GB/s, %.0f%% of copy\n", result.storeMs,
                    result.storeGBs, result.storePctOfCopy);
        std::printf("  attention  %.3f ms/step, %.0f tokens/s, %.1f GB/s, %.0f%% of copy\n",
                    result.attentionMs, result.tokensPerS, result.attentionGBs,
                    result.attentionPctOfCopy);
    }
    if (result.qualityMeasured) {
        std::printf("quality (%s data, vs FP64 on unquantized K/V):\n", result.dataSource.c_str());
        std::printf("  attention rel L2 %.3e, max abs %.3e, top-8 agreement %.3f\n", result.relL2,
                    result.maxAbs, result.top8);
        std::printf("  kernel vs FP64 on the same dequantized pages: rel L2 %.2e\n",
                    result.kernelVsRefRelL2);
        std::printf("  per element: K rel L2 %.3e (max %.3e), V rel L2 %.3e (max %.3e)\n",
                    result.kRelL2, result.kMaxAbs, result.vRelL2, result.vMaxAbs);
    }
    for (const auto& point : result.qualityVsContext)
        std::printf("  context %6lld: rel L2 %.3e, top-8 %.3f\n", (long long)point.context,
                    point.relL2, point.top8);
    for (const auto& note : result.notes)
        std::printf("note: %s\n", note.c_str());
}

Result<ProbePlan> runPlan(const Args& args) {
    ProbePlan plan;
    plan.backend = args.get("--backend");
    const core::ModelSpec* model = io::findTableModel(args.get("--model"));
    if (!model)
        return Error{ErrorCode::NotFound, "unknown model '" + args.get("--model") + "'"};
    plan.model = *model;
    auto format = parseProbeFormat(args.get("--kv-dtype"));
    if (!format)
        return format.error().prefixed("--kv-dtype");
    plan.format = *format;
    plan.blockSize = int(args.integer("--block-size"));
    plan.batch = int(args.integer("--batch"));
    plan.context = args.integer("--context");
    plan.prefixTokens = args.integer("--prefix-tokens");
    plan.seed = std::uint64_t(args.integer("--seed"));
    plan.repeats = int(args.integer("--repeats"));
    plan.kNpy = args.get("--k-npy");
    plan.vNpy = args.get("--v-npy");
    plan.bf16Input = args.has("--bf16-input");
    plan.qualityRequests = 1;
    return plan;
}

int cmdRun(const Args& args) {
    auto plan = runPlan(args);
    if (!plan)
        return fail(plan.error());
    ProbeResult result = runProbe(*plan);
    // The acceptance rule: the pool's bytes equal core's prediction exactly. A run that breaks
    // it failed, in its JSON too (status "failed", the reason in "error", the measurements
    // kept), not only in the exit status.
    bool mismatch = false;
    if (result.ok())
        if (Status matches = checkPoolAgainstPrediction(result); !matches) {
            result.fail(matches.error());
            mismatch = true;
        }
    if (args.has("--json")) {
        printJson(runJson(result));
    } else if (result.ok() || mismatch) {
        printResultText(result);
    }
    if (!result.ok())
        return fail(result.error);
    return 0;
}

constexpr const char* kBenchHeader = "%-12s %5s %6s %12s %9s %8s %6s %10s %9s %7s %11s %7s\n";

void printBenchHeader(std::FILE* out) {
    std::fprintf(out, kBenchHeader, "format", "batch", "ctx", "pool", "store ms", "st GB/s", "st %",
                 "attn ms", "att GB/s", "att %", "rel L2", "top-8");
}

void printBenchRow(std::FILE* out, const ProbeResult& row) {
    if (!row.ok()) {
        std::fprintf(out, "%-12s %5d %6lld  error: %s\n", row.formatLabel.c_str(), row.batch,
                     (long long)row.context, row.error.message.c_str());
        return;
    }
    std::fprintf(out, "%-12s %5d %6lld %12s %9.3f %8.1f %6.0f %10.3f %9.1f %7.0f %11.3e %7.3f\n",
                 row.formatLabel.c_str(), row.batch, (long long)row.context,
                 core::formatBytes(row.poolBytes, core::UnitSystem::Binary, 1).c_str(), row.storeMs,
                 row.storeGBs, row.storePctOfCopy, row.attentionMs, row.attentionGBs,
                 row.attentionPctOfCopy, row.relL2, row.top8);
}

void printBenchText(const ProbeReport& report) {
    std::printf("kvprobe bench on %s (%s); copy %.1f GB/s (read + write, median)",
                report.backend.c_str(), report.device.c_str(), report.copyGBs);
    if (report.readGBs > 0)
        std::printf(", read stream %.1f GB/s (median)", report.readGBs);
    std::printf("\n");
    printBenchHeader(stdout);
    for (const auto& row : report.rows)
        printBenchRow(stdout, row);
    std::printf(
        "\nquality vs context (attention rel L2 vs FP64 on unquantized K/V / top-8 agreement):\n");
    for (const auto& [label, points] : report.qualityVsContext) {
        std::printf("%-12s", label.c_str());
        for (const auto& point : points)
            std::printf("  %lldK %.2e/%.2f", (long long)(point.context / 1024), point.relL2,
                        point.top8);
        std::printf("\n");
    }
}

// One JSON document on one line: the writer's pretty layout with its line breaks and indents
// removed (a raw line break never occurs inside a JSON string: the writer escapes it as \n).
std::string oneLine(const std::string& document) {
    std::string line;
    line.reserve(document.size());
    for (std::size_t i = 0; i < document.size(); ++i) {
        if (document[i] == '\n') {
            while (i + 1 < document.size() && document[i + 1] == ' ')
                ++i;
            continue;
        }
        line += document[i];
    }
    return line + '\n';
}

// --jsonl FILE: rows appended as they finish (not an atomic write: the point is that a run
// killed by a timeout leaves every finished row in the file), each also printed as a table row
// on stderr. io::AppendFile never truncates the file, refuses a FIFO, device or link without
// blocking on it, and writes each row as one whole line: a write that fails (a full disk) cuts
// its partial line off again and stops the bench at once, with the OS's reason.
class RowLog {
public:
    static Result<RowLog> open(const std::string& path) {
        auto file = io::AppendFile::open(path);
        if (!file)
            return file.error().prefixed("--jsonl");
        return RowLog(std::move(*file));
    }
    // False once a row could not be written; the bench stops then.
    bool write(const ProbeResult& row, std::size_t index, std::size_t total) {
        if (index == 0)
            printBenchHeader(stderr);
        std::fprintf(stderr, "[row %zu/%zu] ", index + 1, total);
        printBenchRow(stderr, row);
        if (Status written = m_file.appendLine(oneLine(runJson(row))); !written) {
            m_error = written.error().prefixed("--jsonl");
            return false;
        }
        return true;
    }
    const std::optional<Error>& error() const { return m_error; }

private:
    explicit RowLog(io::AppendFile file) : m_file(std::move(file)) {}
    io::AppendFile m_file;
    std::optional<Error> m_error;
};

int cmdBench(const Args& args) {
    const SweepPlan plan = benchSweepPlan(args.get("--backend"), args.has("--quick"),
                                          std::uint64_t(args.integer("--seed")));
    std::optional<RowLog> rowLog;
    if (args.has("--jsonl")) {
        auto opened = RowLog::open(args.get("--jsonl"));
        if (!opened)
            return fail(opened.error());
        rowLog.emplace(std::move(*opened));
    }
    int lastDecile = -1;
    std::atomic<bool> stop{false}; // set when a row could not be written
    ProbeReport report = runSweep(
        plan,
        [&](double percent, const std::string& stage) {
            if (int(percent) / 10 != lastDecile) {
                lastDecile = int(percent) / 10;
                std::fprintf(stderr, "[%3.0f%%] %s\n", percent, stage.c_str());
            }
        },
        &stop,
        [&](const ProbeResult& row, std::size_t index, std::size_t total) {
            if (rowLog && !rowLog->write(row, index, total))
                stop = true;
        });
    // The sweep stopped because a row could not be written: that is why it failed, in the JSON
    // as in the message and the exit status.
    if (rowLog && rowLog->error())
        report.fail(*rowLog->error());
    if (args.has("--json"))
        printJson(benchJson(report));
    else if (report.ok())
        printBenchText(report);
    if (!report.ok())
        return fail(report.error);
    return report.okRows() == int(report.rows.size()) ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    auto args = parseArgs(argc, argv);
    if (!args)
        return fail(args.error());
    if (args->help) {
        std::fputs((args->command ? commandHelp(*args->command) : generalHelp()).c_str(), stdout);
        return 0;
    }
    switch (args->command->id) {
    case kInfo:
        return cmdInfo(*args);
    case kCheck:
        return cmdCheck(*args);
    case kRun:
        return cmdRun(*args);
    case kBench:
        return cmdBench(*args);
    }
    return 2;
}
