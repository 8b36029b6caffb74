#include "headless.h"

#include "cli.h"
#include "main_window.h"
#include "theme.h"

#include "widgets/charts/chart_registry.h"
#include "widgets/charts/chart_widget.h"
#include "widgets/charts/engines_view.h"
#include "widgets/charts/speed_panel.h"
#include "widgets/deployment/deployment_panel.h"
#include "widgets/export/atomic_write.h"
#include "widgets/probe/probe_charts.h"
#include "widgets/probe/probe_panel.h"
#include "widgets/scenario/scenario_panel.h"
#include "widgets/traffic/traffic_panel.h"

#include "core/io/files.h"
#include "core/units.h"

#include <QApplication>
#include <QBuffer>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QImage>
#include <QPixmap>
#include <QTabWidget>
#include <QWindow>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>

namespace kvl::app {

namespace {

// Lets queued replots and layouts run until every chart has drawn (or 5 s passed).
void settle(MainWindow& w) {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 5000) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        if (w.pendingReplots() == 0 &&
            (!w.isVisible() || (w.windowHandle() && w.windowHandle()->isExposed())))
            break;
    }
    QCoreApplication::processEvents();
}

// Why a headless command stopped: its message and exit code (2: the options; 1: the run).
struct Failure {
    std::string message;
    int code = 2;
};

// What the options ask to draw, checked before any window exists: the chart (export --chart),
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

// --probe-results into the Measured tab.
std::optional<Failure> loadProbeResults(MainWindow& w, const Invocation& o,
                                        const widgets::ChartSpec* chart) {
    QString why;
    if (!w.probePanel()->loadResults(QString::fromStdString(o.value("probe-results")), &why))
        return Failure{"--probe-results: " + why.toStdString()};
    // A file with nothing to draw wrote an empty chart and exited 0 (issue 32 item 9): a
    // chart of measurements is refused when no row gives it a point, saying why.
    const std::string name = chart ? chart->name : "";
    const widgets::ProbeChart* drawn =
        name == "speed"     ? static_cast<const widgets::ProbeChart*>(w.probePanel()->speedChart())
        : name == "quality" ? w.probePanel()->qualityChart()
                            : nullptr;
    if (drawn && !drawn->hasData()) {
        const probe::ProbeReport& report = w.probePanel()->report();
        const std::string reason = report.okRows() == 0 ? "every row failed"
                                   : name == "speed" ? "no row that ran has a positive attention_ms"
                                                     : "no row that ran has a finite rel_l2_error";
        return Failure{"--probe-results: " + o.value("probe-results") +
                       ": nothing to draw in the " +
                       widgets::chartTitle(*chart).toLower().toStdString() + ": " + reason};
    }
    return std::nullopt;
}

// The Traffic tab's workload and SLO (its charts, the report's Traffic page, --tab traffic),
// in simulate's options; the rate is the deployment's, as `simulate --rate` takes it, and
// the tab's is per replica.
std::optional<Failure> applyTrafficOptions(MainWindow& w, const Invocation& o) {
    if (!(o.has("rate") || o.has("prompt-tokens") || o.has("output-tokens") ||
          o.has("slo-ttft-ms") || o.has("slo-tpot-ms")))
        return std::nullopt;
    widgets::TrafficPanel* traffic = w.trafficPanel();
    widgets::TrafficInputs in = traffic->inputs();
    if (o.has("rate"))
        in.rate = std::stod(o.value("rate")) / std::max(1, w.scenario().hardware.dataParallel);
    if (o.has("prompt-tokens"))
        in.prompt = o.value("prompt-tokens");
    if (o.has("output-tokens"))
        in.output = o.value("output-tokens");
    if (o.has("slo-ttft-ms"))
        in.sloTtftMs = std::stod(o.value("slo-ttft-ms"));
    if (o.has("slo-tpot-ms"))
        in.sloTpotMs = std::stod(o.value("slo-tpot-ms"));
    traffic->setInputs(in);
    // The tab's fields hold what they can; a value one of them cannot hold is refused, not
    // changed.
    const widgets::TrafficInputs got = traffic->inputs();
    for (const auto& [option, asked, held] :
         {std::tuple{"rate", in.rate, got.rate},
          std::tuple{"slo-ttft-ms", in.sloTtftMs, got.sloTtftMs},
          std::tuple{"slo-tpot-ms", in.sloTpotMs, got.sloTpotMs}})
        if (o.has(option) && std::abs(asked - held) > 1e-6 * std::max(1.0, std::abs(asked))) {
            char b[64];
            std::snprintf(b, sizeof b, "%g", held);
            return Failure{std::string("--") + option + " " + o.value(option) +
                           ": the Traffic tab's field holds " + b +
                           " (its range and decimals); give a value it can hold"};
        }
    return std::nullopt;
}

// --tab and --theme.
void showTab(MainWindow& w, const Invocation& o) {
    if (o.value("tab") == "measured")
        w.showMeasuredTab();
    else if (o.value("tab") == "speed")
        w.tabs()->setCurrentWidget(w.speedPanel());
    else if (o.value("tab") == "engines")
        w.tabs()->setCurrentWidget(w.enginesPanel());
    else if (o.value("tab") == "deployment") {
        w.tabs()->setCurrentWidget(w.deploymentPanel());
        w.deploymentPanel()->planNow(); // the picture shows the plan, not "Planning…"
    } else if (o.value("tab") == "traffic") {
        w.tabs()->setCurrentWidget(w.trafficPanel());
        // The picture shows the simulation, not "Simulating…": it runs here, on this thread,
        // the same computation the tab's worker runs.
        w.trafficPanel()->computeNow();
    }
    if (o.has("theme")) {
        // The window's View > Theme, applied after the window exists: the charts re-colour on
        // PaletteChange as they do when the desktop theme switches, and export in those colours.
        applyTheme(o.value("theme") == "dark" ? Theme::Dark : Theme::Light);
    }
}

// The screenshot, the report or the chart into its file, at `written`.
std::optional<Failure> writeOutput(MainWindow& w, const Invocation& o, bool screenshot,
                                   const Target& t, QString& written) {
    QString error;
    bool ok = false;
    if (screenshot) {
        written = QString::fromStdString(o.value("screenshot"));
        QBuffer png;
        png.open(QIODevice::WriteOnly);
        w.grab().save(&png, "PNG");
        const auto saved =
            widgets::writeFileAtomically(written, png.data(), widgets::FileKind::Png);
        ok = saved.ok();
        if (!ok)
            error = QString::fromStdString(saved.error().message);
    } else if (o.has("report")) {
        written = QString::fromStdString(o.value("report"));
        ok = w.exportReport(written, &error);
    } else {
        written = QString::fromStdString(o.value("out"));
        ok = w.exportChart(QLatin1String(t.chart->name), written, t.scale, t.size, &error);
    }
    if (!ok)
        return Failure{error.isEmpty() ? std::string("failed") : error.toStdString(), 1};
    return std::nullopt;
}

} // namespace

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
    // Read what the options name before any window exists: one line per problem.
    std::optional<core::Scenario> reference;
    if (o.has("reference")) {
        auto r = MainWindow::loadScenarioFile(QString::fromStdString(o.value("reference")));
        if (!r)
            return fail({"--reference: " + r.error().message});
        reference = *r;
    }

    MainWindow::Options wo;
    wo.useSettings = false;
    wo.showDialogs = false;
    MainWindow w(wo);
    w.setUnits(o.units);
    if (reference) {
        w.setScenario(*reference);
        w.pinReference();
    }
    w.setScenario(o.scenario);
    if (o.has("probe-results"))
        if (auto f = loadProbeResults(w, o, t.chart))
            return fail(*f);
    if (auto f = applyTrafficOptions(w, o))
        return fail(*f);
    showTab(w, o);
    w.setAttribute(Qt::WA_DontShowOnScreen,
                   QGuiApplication::platformName() != QLatin1String("offscreen"));
    w.resize(screenshot ? t.size : kDefaultWindowSize);
    w.show();
    settle(w);
    // The window does not shrink below what its panels need: a --size under that gave a larger
    // image than asked (200x150 -> 1173x606). Say so instead of writing it.
    if (screenshot && w.size() != t.size)
        return fail({"--size " + o.value("size") + ": the window needs at least " +
                     std::to_string(w.width()) + "x" + std::to_string(w.height()) +
                     " for its panels; ask for that or more"});
    QString written;
    if (auto f = writeOutput(w, o, screenshot, t, written))
        return fail(*f);
    out << "wrote " << written.toStdString() << " (" << printable(w.summaryText().toStdString())
        << ")\n";
    return 0;
}

} // namespace kvl::app
