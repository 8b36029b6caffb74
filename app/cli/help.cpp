#include "app/cli.h"

#include "options.h"
#include "text.h"

#include "widgets/charts/chart_registry.h"

#include "core/io/scenario_file.h"

#include <QCommandLineOption>
#include <QStringList>

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <sstream>

namespace kvl::app {

namespace {

using cli::commands;
using cli::CommandSpec;
using cli::findCommand;
using cli::ownOptions;
using cli::scenarioParserOptions;
using cli::wrapped;

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

} // namespace

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

} // namespace kvl::app
