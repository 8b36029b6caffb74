// `kvledger export`: a ScenarioDocument and a ChartBook, no window (issue 27); the checks
// both headless commands share. `--screenshot` pictures the window: screenshot.cpp.

#include "headless.h"

#include "cli.h"
#include "headless_p.h"
#include "theme.h"

#include "widgets/charts/chart_registry.h"
#include "widgets/charts/chart_widget.h"
#include "widgets/export/atomic_write.h"
#include "widgets/export/chart_book.h"
#include "widgets/probe/probe_charts.h"
#include "widgets/scenario/scenario_panel.h"
#include "widgets/state/scenario_document.h"
#include "widgets/state/status_text.h"
#include "widgets/traffic/traffic_fields.h"

#include "core/io/files.h"
#include "core/units.h"

#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>

namespace kvl::app {

namespace {

// What the options ask to draw, checked before anything is drawn: the chart (export --chart),
// the image's size and scale.
struct Target {
    const widgets::ChartSpec* chart = nullptr;
    QSize size;
    double scale = kDefaultScale;
};

// --screenshot's context, or export's --chart/--report and what the chart can be written as.
std::optional<Failure> checkTarget(const Invocation& o, bool screenshot, const std::string& cmd,
                                   Target& t) {
    if (screenshot) {
        if (!t.size.isValid())
            t.size = kDefaultWindowSize;
        // Issue 32 item 11: a context the window's box cannot show made a screenshot whose
        // Context read 16M beside figures for 1e9.
        if (o.scenario.workload.context > widgets::kWindowMaxContext)
            return Failure{"--context " + core::withThousands(o.scenario.workload.context) +
                           ": the window shows contexts up to " +
                           core::withThousands(widgets::kWindowMaxContext) +
                           " tokens; use kvledger ledger or export --chart for this one"};
        return std::nullopt;
    }
    if (o.has("report") == o.has("chart"))
        return Failure{"give either --chart NAME --out FILE or --report FILE.pdf (see " + cmd +
                       " --help)"};
    if (!o.has("chart"))
        return std::nullopt;
    t.chart = widgets::findChartSpec(QString::fromStdString(o.value("chart")));
    const widgets::ChartSpec* chart = t.chart;
    if (!o.has("out"))
        return Failure{"--chart needs --out FILE" +
                       widgets::formatSuffixes(chart->formats).toStdString()};
    if (chart->measured && !o.has("probe-results"))
        return Failure{"--chart " + o.value("chart") +
                       " shows measurements: add --probe-results FILE.json"};
    // A table (the ladder) is drawn at the size it needs unless --size asks for more:
    // a chart's 960 x 540 left it in the top of a mostly empty image.
    if (!t.size.isValid() && !chart->table)
        t.size = kDefaultChartSize;
    const auto format = widgets::formatOfPath(QString::fromStdString(o.value("out")));
    if (!format || !chart->formats.testFlag(*format))
        return Failure{"--out: the " + widgets::chartTitle(*chart).toLower().toStdString() +
                       " exports to " + widgets::formatSuffixes(chart->formats).toStdString() +
                       ", not '" + o.value("out") + "'"};
    if (*format == widgets::ExportFormat::Png && t.size.isValid())
        if (auto ok = widgets::ChartWidget::checkPngSize(t.size, t.scale); !ok)
            return Failure{"--scale: " + ok.error().message + "; lower --scale or --size"};
    return std::nullopt;
}

// The file to write, checked before anything is rendered: its name must say what it will
// hold (a PDF never goes out as r.png, a PNG as x.txt), and a path that exists must be a
// regular file this process may replace (a device node, FIFO, socket, directory or
// symbolic link is refused, exit 2; the OS's reason it cannot be written, exit 1).
std::optional<Failure> checkOutPath(const Invocation& o, bool screenshot) {
    const std::string outOption = screenshot ? "screenshot" : o.has("report") ? "report" : "out";
    const std::string outPath = o.value(outOption);
    if (outOption != "out") {
        const auto kind = screenshot ? widgets::FileKind::Png : widgets::FileKind::Pdf;
        const QString suffix = widgets::fileKindSuffix(kind);
        const QString given = QFileInfo(QString::fromStdString(outPath)).suffix();
        if (given.compare(suffix, Qt::CaseInsensitive) != 0)
            return Failure{"--" + outOption + ": " +
                           (screenshot ? "the screenshot is a PNG image"
                                       : "the review report is a PDF document") +
                           ": name it FILE." + suffix.toStdString() + ", not '" + outPath + "'"};
    }
    if (Status writable = io::checkWritable(outPath); !writable) {
        const bool badInput = writable.error().code == ErrorCode::BadFile ||
                              writable.error().code == ErrorCode::BadInput;
        return badInput ? Failure{"--" + outOption + ": " + writable.error().message}
                        : Failure{"Could not write " + writable.error().message, 1};
    }
    return std::nullopt;
}

// --probe-results into the book.
std::optional<Failure> loadProbeResults(widgets::ChartBook& book, const Invocation& o,
                                        const widgets::ChartSpec* chart) {
    if (Status loaded = book.loadProbeResults(QString::fromStdString(o.value("probe-results")));
        !loaded)
        return Failure{"--probe-results: " + loaded.error().message};
    // A file with nothing to draw wrote an empty chart and exited 0 (issue 32 item 9): a
    // chart of measurements is refused when no row gives it a point, saying why.
    const std::string name = chart ? chart->name : "";
    const auto* drawn =
        name == "speed" || name == "quality"
            ? static_cast<const widgets::ProbeChart*>(book.chart(QString::fromStdString(name)))
            : nullptr;
    if (drawn && !drawn->hasData()) {
        const probe::ProbeReport& report = book.probeReport();
        const std::string reason = report.okRows() == 0 ? "every row failed"
                                   : name == "speed" ? "no row that ran has a positive attention_ms"
                                                     : "no row that ran has a finite rel_l2_error";
        return Failure{"--probe-results: " + o.value("probe-results") +
                       ": nothing to draw in the " +
                       widgets::chartTitle(*chart).toLower().toStdString() + ": " + reason};
    }
    return std::nullopt;
}

// export: the document of the options' scenario (the reference pinned first), the book of
// its charts, and the chart or report written from them.
std::optional<Failure> writeExport(const Invocation& o, const Target& t,
                                   const std::optional<core::Scenario>& reference,
                                   Written& written) {
    // View > Theme's colours, set before the book makes a chart: each takes the palette then.
    if (o.has("theme"))
        applyTheme(o.value("theme") == "dark" ? Theme::Dark : Theme::Light);
    widgets::ScenarioDocument doc;
    doc.setUnits(o.units);
    if (reference) {
        doc.setScenario(*reference);
        doc.pinReference();
    }
    doc.setScenario(o.scenario);
    widgets::ChartBook book(&doc);
    if (o.has("probe-results"))
        if (auto f = loadProbeResults(book, o, t.chart))
            return f;
    if (hasTrafficOptions(o)) {
        widgets::TrafficInputs in = book.trafficInputs();
        if (auto f = applyTrafficOptions(o, doc.scenario().hardware.dataParallel, in))
            return f;
        book.setTrafficInputs(in);
    }
    QString error;
    bool ok = false;
    if (o.has("report")) {
        written.path = QString::fromStdString(o.value("report"));
        ok = book.exportReport(written.path, &error);
    } else {
        written.path = QString::fromStdString(o.value("out"));
        ok = book.exportChart(QLatin1String(t.chart->name), written.path, t.scale, t.size, &error);
    }
    if (!ok)
        return Failure{error.isEmpty() ? std::string("failed") : error.toStdString(), 1};
    written.summary =
        widgets::scopedSummaryLine(doc.snapshot(), doc.view().units, doc.view().scope);
    return std::nullopt;
}

} // namespace

bool hasTrafficOptions(const Invocation& o) {
    return o.has("rate") || o.has("prompt-tokens") || o.has("output-tokens") ||
           o.has("slo-ttft-ms") || o.has("slo-tpot-ms");
}

std::optional<Failure> applyTrafficOptions(const Invocation& o, int dataParallel,
                                           widgets::TrafficInputs& in) {
    if (o.has("rate"))
        in.rate = std::stod(o.value("rate")) / std::max(1, dataParallel);
    if (o.has("prompt-tokens"))
        in.prompt = o.value("prompt-tokens");
    if (o.has("output-tokens"))
        in.output = o.value("output-tokens");
    if (o.has("slo-ttft-ms"))
        in.sloTtftMs = std::stod(o.value("slo-ttft-ms"));
    if (o.has("slo-tpot-ms"))
        in.sloTpotMs = std::stod(o.value("slo-tpot-ms"));
    // The tab's fields hold what they can (traffic_fields.h, the ranges and decimals the tab
    // configures them with); a value one of them cannot hold is refused, not changed.
    const widgets::TrafficInputs held = widgets::heldTrafficInputs(in);
    for (const auto& [option, asked, kept] :
         {std::tuple{"rate", in.rate, held.rate},
          std::tuple{"slo-ttft-ms", in.sloTtftMs, held.sloTtftMs},
          std::tuple{"slo-tpot-ms", in.sloTpotMs, held.sloTpotMs}})
        if (o.has(option) && std::abs(asked - kept) > 1e-6 * std::max(1.0, std::abs(asked))) {
            char b[64];
            std::snprintf(b, sizeof b, "%g", kept);
            return Failure{std::string("--") + option + " " + o.value(option) +
                           ": the Traffic tab's field holds " + b +
                           " (its range and decimals); give a value it can hold"};
        }
    in = held;
    return std::nullopt;
}

bool isHeadlessGuiCommand(const std::vector<std::string>& args) {
    return !args.empty() && (args[0] == "export" || args[0] == "--screenshot");
}

int runHeadlessGuiCommand(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err) {
    const bool screenshot = args[0] == "--screenshot";
    const std::string command = screenshot ? "--screenshot" : "export";
    const std::string cmd = "kvledger " + command;
    auto fail = [&](const Failure& f) {
        err << cmd << ": " << printable(f.message) << "\n";
        return f.code;
    };
    auto parsed = parseCommand(
        command, std::vector<std::string>(args.begin() + (screenshot ? 0 : 1), args.end()));
    if (!parsed)
        return fail({parsed.error().message});
    const Invocation& o = *parsed;
    if (o.help) {
        out << helpText(command);
        return 0;
    }
    Target t;
    t.size = o.has("size") ? *parseSize(o.value("size")) : QSize();
    t.scale = o.has("scale") ? *parseScale(o.value("scale")) : kDefaultScale;
    if (auto f = checkTarget(o, screenshot, cmd, t))
        return fail(*f);
    if (auto f = checkOutPath(o, screenshot))
        return fail(*f);
    // Read what the options name before anything is drawn: one line per problem.
    std::optional<core::Scenario> reference;
    if (o.has("reference")) {
        auto r = widgets::loadScenarioFile(QString::fromStdString(o.value("reference")));
        if (!r)
            return fail({"--reference: " + r.error().message});
        reference = *r;
    }
    Written written;
    if (auto f = screenshot ? takeScreenshot(o, t.size, reference, written)
                            : writeExport(o, t, reference, written))
        return fail(*f);
    out << "wrote " << written.path.toStdString() << " ("
        << printable(written.summary.toStdString()) << ")\n";
    return 0;
}

} // namespace kvl::app
