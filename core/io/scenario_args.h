#pragma once
// The scenario options of the command line, as one table: kvledger's ledger, export and
// --screenshot commands register every row into their QCommandLineParser, apply the values
// through it and print --help from it, so options, defaults and help cannot drift apart.
//
// The table is pure C++ beside core::Scenario, not in app: each row is a statement about a
// scenario field (its range, its default, how a value sets it), testable without Qt, and a new
// Scenario field (pipeline parallel size, max_num_seqs, ...) is one more row here. Splitting
// argv into options and values is QCommandLineParser's job in app; nothing here tokenizes.

#include "core/result.h"
#include "core/scenario.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvl::io {

// The order options apply in, whatever order they were typed in: a saved scenario first, then
// the model, then everything else, then what refines those (granularity after the dtype, the
// layer count after the model). Within a phase, table order.
enum class OptionPhase : std::uint8_t { Start, Model, Scenario, Refine };

struct ScenarioOption {
    std::string_view name;      // without the dashes: "context"
    std::string_view valueName; // "N"; empty for a flag
    std::string_view help;      // one line, without the default
    // The default --help shows, read from the base scenario; nullptr when there is none.
    std::string (*defaultOf)(const core::Scenario& base) = nullptr;
    // Sets the field(s) from the value ("" for a flag); the error does not repeat the name.
    Status (*apply)(core::Scenario& s, const std::string& value) = nullptr;
    OptionPhase phase = OptionPhase::Scenario;
    std::string_view excludes; // an option this one cannot be combined with
};

std::span<const ScenarioOption> scenarioOptions();
const ScenarioOption* findScenarioOption(std::string_view name);

// "tokens per request (default 4096)": the row's help with its default from `base`.
std::string scenarioOptionDescription(const ScenarioOption& option, const core::Scenario& base);

// One option as given: its name (no dashes) and its value ("" for a flag). The last of a
// repeated option wins, as in most command lines.
struct GivenOption {
    std::string name;
    std::string value;
};

// Applies `given` to `base` in phase order. Errors are one line naming the option:
// "--context: expected a whole number, got 'lots'".
kvl::Result<core::Scenario> applyScenarioOptions(const std::vector<GivenOption>& given,
                                                 const core::Scenario& base);

} // namespace kvl::io
