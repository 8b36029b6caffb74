#include "cli.h"
#include "headless.h"
#include "main_window.h"

#include <QApplication>
#include <QFileInfo>

#include <cstdlib>
#include <iostream>

namespace {
// Headless runs on the offscreen platform, which warns about every window feature it lacks
// ("This plugin does not support propagateSizeHints()"): noise, not news, for a script.
QtMessageHandler g_defaultHandler = nullptr;
void quietOffscreen(QtMsgType type, const QMessageLogContext& context, const QString& msg) {
    if (type == QtWarningMsg && (msg.startsWith(QLatin1String("This plugin does not support")) ||
                                 msg.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR"))))
        return;
    if (g_defaultHandler)
        g_defaultHandler(type, context, msg);
    else
        std::cerr << msg.toStdString() << "\n";
}
} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    // The display-free commands first: ledger, models, gpus (and --help).
    bool handled = false;
    const int rc = kvl::app::runLedgerCli(args, std::cout, std::cerr, handled);
    if (handled)
        return rc;

    const bool headless = kvl::app::isHeadlessGuiCommand(args);
    if (headless && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    if (headless)
        g_defaultHandler = qInstallMessageHandler(quietOffscreen);

    // `kvledger [Qt options] [FILE.kvl.json]`; checked before QApplication so that a mistake
    // gets a message even without a display. Single-dash options are Qt's (-style, -platform).
    QString file;
    if (!headless) {
        for (std::size_t i = 0; i < args.size(); ++i) {
            const QString a = QString::fromStdString(args[i]);
            if (a.startsWith(QLatin1Char('-')) && !a.startsWith(QLatin1String("--"))) {
                ++i; // a Qt option and, possibly, its value
                continue;
            }
            if (!a.startsWith(QLatin1Char('-')) && file.isEmpty() && QFileInfo(a).isFile()) {
                file = a;
                continue;
            }
            std::cerr << "kvledger: unknown command or file '" << args[i]
                      << "' (see kvledger --help)\n";
            return 2;
        }
    }
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("kvledger"));
    QCoreApplication::setApplicationName(QStringLiteral("KV Ledger"));
    QCoreApplication::setApplicationVersion(QStringLiteral(KVL_VERSION));
    QGuiApplication::setDesktopFileName(QStringLiteral("kvledger"));

    if (headless)
        return kvl::app::runHeadlessGuiCommand(args, std::cout, std::cerr);

    kvl::app::MainWindow window;
    window.show();
    if (!file.isEmpty())
        window.openScenarioFile(file);
    return app.exec();
}
