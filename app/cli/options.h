#pragma once
// kvledger's command table and the options of its commands other than the scenario options
// (those are core/io/scenario_args.h's table): one row per command naming its options, from
// which parse.cpp builds the QCommandLineParser and help.cpp prints --help.

#include "core/result.h"

#include <QCommandLineOption>
#include <QList>
#include <QString>

#include <string>
#include <string_view>
#include <vector>

namespace kvl::app::cli {

inline Error bad(std::string message) {
    return makeError(ErrorCode::BadInput, std::move(message));
}

// An option of a command other than the scenario options. `check` tells a bad value (the
// message without the option's name); nullptr for free text such as a file name.
struct AppOption {
    std::string_view name;
    std::string_view valueName; // empty for a flag
    std::string help;
    Status (*check)(const std::string& value) = nullptr;
};

const std::vector<AppOption>& appOptions();
const AppOption* findAppOption(std::string_view name);

struct CommandSpec {
    std::string_view name;               // the command word; "" = the window
    std::vector<std::string_view> usage; // after "kvledger "
    std::string_view summary;
    std::vector<std::string_view> options; // AppOption names
    bool scenario = false;                 // takes the scenario options
    int maxPositional = 0;
};

const std::vector<CommandSpec>& commands();
const CommandSpec* findCommand(std::string_view name);

QString q(std::string_view s);

// The parser's options of a command, in help order: its own, then the scenario options.
// parseCommand registers exactly these and helpText prints exactly these.
QList<QCommandLineOption> ownOptions(const CommandSpec& c);
QList<QCommandLineOption> scenarioParserOptions();

} // namespace kvl::app::cli
