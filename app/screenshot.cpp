// `kvledger --screenshot FILE`: a picture of the window, so it builds the window (`export`
// renders from the document and the charts alone: headless.cpp).

#include "headless_p.h"
#include "main_window.h"
#include "theme.h"

#include "widgets/deployment/deployment_panel.h"
#include "widgets/export/atomic_write.h"
#include "widgets/probe/probe_panel.h"
#include "widgets/state/status_text.h"
#include "widgets/traffic/traffic_panel.h"

#include <QApplication>
#include <QBuffer>
#include <QElapsedTimer>
#include <QWindow>

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

// --probe-results into the Measured tab.
std::optional<Failure> loadProbeResults(MainWindow& w, const Invocation& o) {
    QString why;
    if (!w.probePanel()->loadResults(QString::fromStdString(o.value("probe-results")), &why))
        return Failure{"--probe-results: " + why.toStdString()};
    return std::nullopt;
}

// The options' traffic workload into the Traffic tab.
std::optional<Failure> applyTrafficOptions(MainWindow& w, const Invocation& o) {
    if (!hasTrafficOptions(o))
        return std::nullopt;
    widgets::TrafficInputs in = w.trafficPanel()->inputs();
    if (auto f = applyTrafficOptions(o, w.scenario().hardware.dataParallel, in))
        return f;
    w.trafficPanel()->setInputs(in);
    return std::nullopt;
}

// --tab and --theme.
void showTab(MainWindow& w, const Invocation& o) {
    const std::string tab = o.value("tab"); // "" (no --tab): the window's first tab, the ledger
    w.showTab(tab);
    if (tab == "deployment") {
        w.deploymentPanel()->planNow(); // the picture shows the plan, not "Planning…"
    } else if (tab == "traffic") {
        // The picture shows the simulation, not "Simulating…": it runs here, on this thread,
        // the same computation the tab's worker runs.
        w.trafficPanel()->computeNow();
    }
    if (o.has("theme")) {
        // The window's View > Theme, applied after the window exists: the charts re-colour on
        // PaletteChange as they do when the desktop theme switches.
        applyTheme(o.value("theme") == "dark" ? Theme::Dark : Theme::Light);
    }
}

} // namespace

std::optional<Failure> takeScreenshot(const Invocation& o, QSize size,
                                      const std::optional<core::Scenario>& reference,
                                      Written& written) {
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
        if (auto f = loadProbeResults(w, o))
            return f;
    if (auto f = applyTrafficOptions(w, o))
        return f;
    showTab(w, o);
    w.setAttribute(Qt::WA_DontShowOnScreen,
                   QGuiApplication::platformName() != QLatin1String("offscreen"));
    w.resize(size);
    w.show();
    settle(w);
    // The window does not shrink below what its panels need: a --size under that gave a larger
    // image than asked (200x150 -> 1173x606). Say so instead of writing it.
    if (w.size() != size)
        return Failure{"--size " + o.value("size") + ": the window needs at least " +
                       std::to_string(w.width()) + "x" + std::to_string(w.height()) +
                       " for its panels; ask for that or more"};
    written.path = QString::fromStdString(o.value("screenshot"));
    QBuffer png;
    png.open(QIODevice::WriteOnly);
    w.grab().save(&png, "PNG");
    const auto saved =
        widgets::writeFileAtomically(written.path, png.data(), widgets::FileKind::Png);
    if (!saved)
        return Failure{
            saved.error().message.empty() ? std::string("failed") : saved.error().message, 1};
    written.summary = w.summaryText();
    return std::nullopt;
}

} // namespace kvl::app
