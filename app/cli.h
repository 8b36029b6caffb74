#pragma once
// kvledger's command line. Each command (the window, ledger, models, gpus, export and
// --screenshot) is one row of a table naming its options; a QCommandLineParser built from that
// row and from core/io's scenario-option table parses it (hotspot's convention), and --help is
// printed from the very options the parser was given, so the help cannot drift from what is
// parsed. Bad input is one line naming the option, and exit code 2.

#include "core/result.h"
#include "core/scenario.h"
#include "core/units.h"

#include <QSize>
#include <QStringList>

#include <array>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace kvl::app {

// One parsed command line.
struct Invocation {
    std::string command; // "ledger", "models", "gpus", "export", "--screenshot", "" (the window)
    bool help = false;   // --help / -h: nothing else was checked
    core::Scenario scenario; // the scenario options applied to io::defaultScenario(), validated
    core::UnitSystem units = core::UnitSystem::Binary;       // --units
    std::map<std::string, std::string, std::less<>> options; // the command's own options given,
                                                             // name -> value ("" for a flag)
    std::vector<std::string> positional;                     // the window's FILE
    std::vector<std::string> gpus;                           // plan: every --gpu given, in order

    bool has(std::string_view name) const { return options.find(name) != options.end(); }
    std::string value(std::string_view name) const; // "" when not given
};

// Parses the arguments of `command` (those after the command word; for --screenshot all of
// them, the option included). The error is one line naming the option.
Result<Invocation> parseCommand(std::string_view command, const std::vector<std::string>& args);

// The help of one command, or the overview of all ("" or "help").
std::string helpText(std::string_view command = {});

// The window's tabs by the names --tab takes, in the window's tab order: --tab checks its value
// against them and MainWindow::showTab brings the tab of a name to the front.
inline constexpr std::array<std::string_view, 6> kTabNames{"ledger",     "measured", "speed",
                                                           "deployment", "traffic",  "engines"};

// Values of the export options, checked by parseCommand already.
inline constexpr double kMinScale = 0.25, kMaxScale = 8;
inline constexpr int kMinWidth = 200, kMinHeight = 150, kMaxSide = 10000;
// A chart is 960 x 540 (16:9, a slide) and a PNG is drawn at 2x: 1920 x 1080 pixels, sharp on
// a high-DPI screen or a projector. A table (the ladder) takes the size it needs instead.
inline constexpr QSize kDefaultChartSize{960, 540}, kDefaultWindowSize{1600, 1000};
inline constexpr double kDefaultScale = 2;
Result<double> parseScale(std::string_view text); // a finite number in [kMinScale, kMaxScale]
Result<QSize> parseSize(std::string_view text);   // "1600x1000" within the limits
Result<core::UnitSystem> parseUnits(std::string_view text); // gib | gb, any case

// The window's command line once QApplication has taken its own options (-style, -reverse,
// -platform ...): at most one FILE. `arguments` starts with the program, as
// QCoreApplication::arguments() does.
Result<Invocation> parseWindowArguments(const QStringList& arguments);

// Control characters (a config.json's _name_or_path may hold any) written as \xNN, so that
// text output cannot move the cursor or ring the terminal.
std::string printable(std::string_view text);

// Runs `kvledger <command> args...` when args[0] is ledger, plan, models, gpus, help, --help
// or --version. Returns the exit code (0 ok, 2 bad input); handled = false for other commands.
int runLedgerCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 bool& handled);

} // namespace kvl::app
