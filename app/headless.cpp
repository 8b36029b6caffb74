#include "headless.h"

#include "main_window.h"

#include "widgets/curve_chart.h"
#include "widgets/probe_panel.h"

#include "core/io/scenario_args.h"
#include "core/io/scenario_file.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QPalette>
#include <QPixmap>
#include <QWindow>

#include <optional>

namespace kvl::app {

namespace {

const char* kExportUsage = R"(usage:
  kvledger export --chart memory|concurrency|breakdown|quality|speed|ladder|probe
                  --out FILE.png|.pdf|.svg|.csv [--scale F] [--size WxH] [--units gib|gb]
                  [--reference FILE.kvl.json] [--probe-results FILE.json] [scenario options]
  kvledger export --report FILE.pdf [--units gib|gb] [--reference FILE.kvl.json]
                  [--probe-results FILE.json] [scenario options]
  kvledger --screenshot FILE.png [--size WxH] [--units gib|gb] [--reference FILE.kvl.json]
                  [--probe-results FILE.json] [--tab ledger|measured] [--theme light|dark]
                  [scenario options]

The ladder and the probe results table export to CSV only. --scale multiplies PNG pixels (2 for
high-DPI slides). --reference pins a saved scenario as the dashed reference.
--probe-results loads `kvprobe bench --json` / `kvprobe run --json` output: measured points on
the memory and concurrency charts, the quality and speed charts, the results table, and a
measured page in the report. quality, speed and probe need it.

)";

struct Options {
    QString chart, out, report, screenshot, reference, probeResults;
    bool measuredTab = false;
    bool dark = false;
    double scale = 1.0;
    QSize size;
    core::UnitSystem units = core::UnitSystem::Binary;
    bool help = false;
};

bool parseSize(const std::string& s, QSize& out) {
    const auto x = s.find('x');
    if (x == std::string::npos)
        return false;
    bool ok1 = false, ok2 = false;
    const int w = QString::fromStdString(s.substr(0, x)).toInt(&ok1);
    const int h = QString::fromStdString(s.substr(x + 1)).toInt(&ok2);
    if (!ok1 || !ok2 || w < 200 || h < 150 || w > 10000 || h > 10000)
        return false;
    out = QSize(w, h);
    return true;
}

// Splits our options from the scenario options; returns an error message or empty.
std::string takeOptions(const std::vector<std::string>& args, Options& o,
                        std::vector<std::string>& rest) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](std::string& v) -> bool {
            if (i + 1 >= args.size())
                return false;
            v = args[++i];
            return true;
        };
        std::string v;
        if (a == "--help" || a == "-h") {
            o.help = true;
        } else if (a == "--chart" || a == "--out" || a == "--report" || a == "--screenshot" ||
                   a == "--scale" || a == "--size" || a == "--units" || a == "--reference" ||
                   a == "--theme" || a == "--probe-results" || a == "--tab") {
            if (!value(v))
                return a + " needs a value";
            const QString q = QString::fromStdString(v);
            if (a == "--chart")
                o.chart = q;
            else if (a == "--out")
                o.out = q;
            else if (a == "--report")
                o.report = q;
            else if (a == "--screenshot")
                o.screenshot = q;
            else if (a == "--reference")
                o.reference = q;
            else if (a == "--probe-results")
                o.probeResults = q;
            else if (a == "--tab") {
                if (v != "ledger" && v != "measured")
                    return "--tab must be ledger or measured, not '" + v + "'";
                o.measuredTab = v == "measured";
            } else if (a == "--theme") {
                if (v != "light" && v != "dark")
                    return "--theme must be light or dark, not '" + v + "'";
                o.dark = v == "dark";
            } else if (a == "--scale") {
                bool ok = false;
                o.scale = q.toDouble(&ok);
                if (!ok || o.scale < 0.25 || o.scale > 8)
                    return "--scale must be a number from 0.25 to 8, not '" + v + "'";
            } else if (a == "--size") {
                if (!parseSize(v, o.size))
                    return "--size must be WIDTHxHEIGHT (e.g. 1600x1000), not '" + v + "'";
            } else if (a == "--units") {
                if (v == "gib" || v == "GiB")
                    o.units = core::UnitSystem::Binary;
                else if (v == "gb" || v == "GB")
                    o.units = core::UnitSystem::Decimal;
                else
                    return "--units must be gib or gb, not '" + v + "'";
            }
        } else {
            rest.push_back(a);
        }
    }
    return {};
}

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

} // namespace

bool isHeadlessGuiCommand(const std::vector<std::string>& args) {
    return !args.empty() && (args[0] == "export" || args[0] == "--screenshot");
}

int runHeadlessGuiCommand(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err) {
    const bool screenshot = args[0] == "--screenshot";
    const std::string cmd = screenshot ? "kvledger --screenshot" : "kvledger export";
    Options o;
    std::vector<std::string> scenarioArgs;
    std::vector<std::string> all(args.begin() + (screenshot ? 0 : 1), args.end());
    if (const std::string e = takeOptions(all, o, scenarioArgs); !e.empty()) {
        err << cmd << ": " << e << "\n";
        return 2;
    }
    if (o.help) {
        out << kExportUsage << io::scenarioOptionsHelp();
        return 0;
    }
    auto parsed = io::parseScenarioArgs(scenarioArgs, io::defaultScenario());
    if (!parsed) {
        err << cmd << ": " << parsed.error().message << "\n";
        return 2;
    }
    const auto& pa = parsed.value();
    if (!pa.rest.empty()) {
        err << cmd << ": unknown option '" << pa.rest.front() << "' (see " << cmd << " --help)\n";
        return 2;
    }
    if (auto problem = pa.scenario.validate()) {
        err << cmd << ": " << *problem << "\n";
        return 2;
    }
    if (screenshot) {
        if (o.screenshot.isEmpty()) {
            err << cmd << ": needs an output file: kvledger --screenshot FILE.png\n";
            return 2;
        }
    } else if (o.report.isEmpty() == o.chart.isEmpty()) {
        err << cmd << ": give either --chart NAME --out FILE or --report FILE.pdf\n"
            << kExportUsage;
        return 2;
    } else if (!o.chart.isEmpty() && o.out.isEmpty()) {
        err << cmd << ": --chart needs --out FILE.png|.pdf|.svg|.csv\n";
        return 2;
    } else if (!o.chart.isEmpty() &&
               !QStringList{QStringLiteral("memory"), QStringLiteral("concurrency"),
                            QStringLiteral("breakdown"), QStringLiteral("quality"),
                            QStringLiteral("speed"), QStringLiteral("ladder"),
                            QStringLiteral("probe")}
                    .contains(o.chart)) {
        err << cmd
            << ": --chart must be memory, concurrency, breakdown, quality, speed, ladder or "
               "probe, not '"
            << o.chart.toStdString() << "'\n";
        return 2;
    } else if ((o.chart == QLatin1String("quality") || o.chart == QLatin1String("speed") ||
                o.chart == QLatin1String("probe")) &&
               o.probeResults.isEmpty()) {
        err << cmd << ": --chart " << o.chart.toStdString()
            << " shows measurements: add --probe-results FILE.json\n";
        return 2;
    }

    MainWindow::Options wo;
    wo.useSettings = false;
    wo.showDialogs = false;
    MainWindow w(wo);
    std::string lastError;
    QObject::connect(&w, &MainWindow::errorRaised,
                     [&](const QString&, const QString& m) { lastError = m.toStdString(); });
    w.setUnits(o.units);
    if (!o.reference.isEmpty()) {
        if (!w.openScenarioFile(o.reference)) {
            err << cmd << ": --reference: " << lastError << "\n";
            return 2;
        }
        w.pinReference();
    }
    w.setScenario(pa.scenario);
    if (!o.probeResults.isEmpty()) {
        if (!w.openProbeResults(o.probeResults)) {
            err << cmd << ": --probe-results: " << w.probePanel()->message().toStdString() << "\n";
            return 2;
        }
    }
    if (o.measuredTab)
        w.showMeasuredTab();
    if (o.dark) {
        // A dark Fusion palette, applied after the window exists: the charts re-colour on
        // PaletteChange as they do when the desktop theme switches.
        QApplication::setStyle(QStringLiteral("Fusion"));
        QPalette p;
        const QColor window(45, 45, 48), base(30, 30, 32), text(222, 222, 222), dim(128, 128, 128);
        p.setColor(QPalette::Window, window);
        p.setColor(QPalette::WindowText, text);
        p.setColor(QPalette::Base, base);
        p.setColor(QPalette::AlternateBase, window);
        p.setColor(QPalette::ToolTipBase, base);
        p.setColor(QPalette::ToolTipText, text);
        p.setColor(QPalette::Text, text);
        p.setColor(QPalette::Button, QColor(58, 58, 62));
        p.setColor(QPalette::ButtonText, text);
        p.setColor(QPalette::Highlight, QColor(42, 130, 218));
        p.setColor(QPalette::HighlightedText, Qt::white);
        p.setColor(QPalette::PlaceholderText, dim);
        for (auto role : {QPalette::Text, QPalette::WindowText, QPalette::ButtonText})
            p.setColor(QPalette::Disabled, role, dim);
        QApplication::setPalette(p);
    }
    w.setAttribute(Qt::WA_DontShowOnScreen,
                   QGuiApplication::platformName() != QLatin1String("offscreen"));
    w.resize(o.size.isValid() && screenshot ? o.size : QSize(1600, 1000));
    w.show();
    settle(w);

    QString error;
    bool ok = false;
    QString written;
    if (screenshot) {
        const QPixmap pix = w.grab();
        ok = !pix.isNull() && pix.save(o.screenshot);
        written = o.screenshot;
        if (!ok)
            error = QStringLiteral("could not write %1").arg(o.screenshot);
    } else if (!o.report.isEmpty()) {
        ok = w.exportReport(o.report, &error);
        written = o.report;
    } else {
        ok = w.exportChart(o.chart, o.out, o.scale, o.size.isValid() ? o.size : QSize(900, 520),
                           &error);
        written = o.out;
    }
    if (!ok) {
        err << cmd << ": " << (error.isEmpty() ? std::string("failed") : error.toStdString())
            << "\n";
        return 1;
    }
    out << "wrote " << written.toStdString() << " (" << w.summaryText().toStdString() << ")\n";
    return 0;
}

} // namespace kvl::app
