#include "cli.h"
#include "headless.h"
#include "main_window.h"
#include "raster_fills.h"

#include <QApplication>
#include <QFileInfo>

#include <cstdlib>
#include <iostream>

namespace {

// Headless commands promise one line per error. Qt's own warnings (the offscreen platform's
// "This plugin does not support propagateSizeHints()", a font or a paint engine complaining
// before our message) are not news to a script: they are dropped; critical and fatal ones
// still reach stderr.
void headlessMessages(QtMsgType type, const QMessageLogContext&, const QString& msg) {
    if (type == QtCriticalMsg || type == QtFatalMsg)
        std::cerr << msg.toStdString() << "\n";
}

// Where Qt would have to open a window, a Linux/BSD session needs an X11 or Wayland display,
// unless a platform plugin is chosen (QT_QPA_PLATFORM, or Qt's -platform option).
bool hasDisplay(const std::vector<std::string>& args) {
#if defined(Q_OS_UNIX) && !defined(Q_OS_DARWIN) && !defined(Q_OS_ANDROID)
    if (!qEnvironmentVariableIsEmpty("DISPLAY") ||
        !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
        !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        return true;
    for (const auto& a : args)
        if (a == "-platform" || a == "--platform" || a.rfind("-platform=", 0) == 0)
            return true;
    return false;
#else
    (void)args;
    return true;
#endif
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    // The display-free commands first: ledger, plan, simulate, models, gpus, --help, --version.
    bool handled = false;
    const int rc = kvl::app::runLedgerCli(args, std::cout, std::cerr, handled);
    if (handled)
        return rc;

    const bool headless = kvl::app::isHeadlessGuiCommand(args);
    if (headless) {
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
        qInstallMessageHandler(headlessMessages);
    } else {
        // A lone word that is neither a command nor a file is most likely a mistyped command:
        // say so even without a display.
        if (args.size() == 1 && !args[0].empty() && args[0][0] != '-' &&
            !QFileInfo::exists(QString::fromStdString(args[0]))) {
            std::cerr << "kvledger: '" << kvl::app::printable(args[0])
                      << "' is neither a command nor a file (see kvledger --help)\n";
            return 2;
        }
        if (!hasDisplay(args)) {
            std::cerr << "kvledger: no display (DISPLAY and WAYLAND_DISPLAY are unset): run "
                         "QT_QPA_PLATFORM=offscreen kvledger, or a headless command (ledger, plan, "
                         "simulate, export, models, gpus, --screenshot; see kvledger --help)\n";
            return 2;
        }
    }
    kvl::app::keepRasterFillsSerial(); // before QApplication: see raster_fills.cpp
    // QApplication takes its own options out of argv (-style S, -platform P, -reverse, ...);
    // what is left is ours, parsed below. Nothing of ours is lost after a Qt option.
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("kvledger"));
    QCoreApplication::setApplicationName(QStringLiteral("KV Ledger"));
    QCoreApplication::setApplicationVersion(QStringLiteral(KVL_VERSION));
    QGuiApplication::setDesktopFileName(QStringLiteral("kvledger"));

    if (headless)
        return kvl::app::runHeadlessGuiCommand(args, std::cout, std::cerr);

    auto parsed = kvl::app::parseWindowArguments(QCoreApplication::arguments());
    if (!parsed) {
        std::cerr << "kvledger: " << kvl::app::printable(parsed.error().message) << "\n";
        return 2;
    }
    std::optional<kvl::core::Scenario> opened;
    QString file;
    if (!parsed->positional.empty()) {
        file = QString::fromStdString(parsed->positional.front());
        auto loaded = kvl::app::MainWindow::loadScenarioFile(file);
        if (!loaded) {
            std::cerr << "kvledger: " << kvl::app::printable(loaded.error().message) << "\n";
            return 2;
        }
        opened = *loaded;
    }
    kvl::app::MainWindow window;
    window.show();
    if (opened)
        window.showScenarioFile(file, *opened);
    return app.exec();
}
