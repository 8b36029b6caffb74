// Exports: every chart to PNG / PDF / SVG / CSV with valid headers and exact CSV rows, PNG scale,
// the two-page review report, and the headless `export` / `--screenshot` commands.

#include "cli.h"
#include "headless.h"
#include "main_window.h"

#include "widgets/curve_chart.h"
#include "widgets/ladder_model.h"

#include "core/io/scenario_file.h"
#include "core/ledger.h"

#include <QFile>
#include <QImage>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <memory>
#include <sstream>

using namespace kvl;
using kvl::app::MainWindow;

namespace {

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

int pdfPages(const QByteArray& pdf) {
    static const QRegularExpression page(QStringLiteral("/Type\\s*/Page[^s]"));
    return static_cast<int>(QString::fromLatin1(pdf).count(page));
}

// The CSV rows of the "Current" series equal core's sweep, exactly.
void verifyCurveCsv(const QByteArray& csv, const core::Scenario& s, bool memory) {
    const core::SweepResult sweep = core::computeSweep(s);
    const core::Curve& cur = sweep.curves.back();
    QVERIFY(cur.isCurrent);
    const QStringList lines = QString::fromUtf8(csv).trimmed().split(QLatin1Char('\n'));
    QVERIFY(lines.size() > 1);
    QCOMPARE(lines[0], memory ? QStringLiteral("series,context_tokens,kv_bytes_per_request_per_gpu,"
                                               "kv_bytes_per_request,kv_pool_bytes_per_gpu")
                              : QStringLiteral("series,context_tokens,max_requests"));
    std::size_t j = 0;
    for (const QString& line : lines.mid(1)) {
        if (!line.startsWith(QStringLiteral("\"Current\",")))
            continue;
        const QStringList f = line.split(QLatin1Char(','));
        QVERIFY(j < sweep.contexts.size());
        QCOMPARE(f.value(1).toLongLong(), sweep.contexts[j]);
        if (memory) {
            QCOMPARE(f.value(2).toLongLong(), static_cast<qint64>(cur.bytesPerRequestPerGpu[j]));
            QCOMPARE(f.value(3).toLongLong(), static_cast<qint64>(cur.bytesPerRequest[j]));
            QCOMPARE(f.value(4).toLongLong(), sweep.availableKvBytes);
        } else {
            QCOMPARE(f.value(2).toLongLong(), static_cast<qint64>(cur.maxRequests[j]));
        }
        ++j;
    }
    QCOMPARE(j, sweep.contexts.size());
    // Every row is a point: series count x contexts.
    QCOMPARE((lines.size() - 1) % static_cast<qsizetype>(sweep.contexts.size()), qsizetype(0));
}

} // namespace

class TestExport : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void chartFiles_data();
    void chartFiles();
    void pngScale();
    void reviewReport();
    void headlessExport_data();
    void headlessExport();
    void headlessBadArguments_data();
    void headlessBadArguments();
    void headlessScreenshot();

private:
    std::unique_ptr<MainWindow> m_window;
    QTemporaryDir m_dir;
};

void TestExport::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    MainWindow::Options o;
    o.useSettings = false;
    o.showDialogs = false;
    m_window = std::make_unique<MainWindow>(o);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    QTRY_COMPARE(m_window->pendingReplots(), 0);
    m_window->pinReference(); // exports carry the dashed reference too
    core::Scenario s = m_window->scenario();
    s.levers.quant.enabled = false;
    m_window->setScenario(s);
}

void TestExport::cleanupTestCase() {
    m_window.reset();
}

void TestExport::chartFiles_data() {
    QTest::addColumn<QString>("chart");
    QTest::addColumn<QString>("suffix");
    for (const char* chart : {"memory", "concurrency", "breakdown"})
        for (const char* suffix : {"png", "pdf", "svg", "csv"})
            QTest::addRow("%s %s", chart, suffix)
                << QString::fromLatin1(chart) << QString::fromLatin1(suffix);
    QTest::addRow("ladder csv") << QStringLiteral("ladder") << QStringLiteral("csv");
}

void TestExport::chartFiles() {
    QFETCH(QString, chart);
    QFETCH(QString, suffix);
    const QString path = m_dir.filePath(chart + QLatin1Char('.') + suffix);
    QString error;
    QVERIFY2(m_window->exportChart(chart, path, 1.0, QSize(800, 500), &error), qPrintable(error));
    const QByteArray bytes = readAll(path);
    QVERIFY(bytes.size() > 100);
    if (suffix == QLatin1String("png")) {
        QVERIFY(bytes.startsWith("\x89PNG\r\n\x1a\n"));
        QImage img;
        QVERIFY(img.loadFromData(bytes, "PNG"));
        QCOMPARE(img.size(), QSize(800, 500));
    } else if (suffix == QLatin1String("pdf")) {
        QVERIFY(bytes.startsWith("%PDF-"));
        QVERIFY(bytes.trimmed().endsWith("%%EOF"));
        QCOMPARE(pdfPages(bytes), 1);
    } else if (suffix == QLatin1String("svg")) {
        QVERIFY(bytes.startsWith("<?xml"));
        QVERIFY(bytes.contains("<svg"));
        QVERIFY(bytes.contains("</svg>"));
        QVERIFY(bytes.contains("<path") || bytes.contains("<polyline")); // vector, not an image
        QVERIFY(!bytes.contains("<image"));
    } else if (chart == QLatin1String("memory") || chart == QLatin1String("concurrency")) {
        verifyCurveCsv(bytes, m_window->scenario(), chart == QLatin1String("memory"));
        QVERIFY(bytes.contains("\"Pinned reference\","));
    } else if (chart == QLatin1String("breakdown")) {
        QVERIFY(bytes.startsWith("row,segment,bytes_per_gpu\n"));
        const auto r = core::computeLedger(m_window->scenario());
        QVERIFY(bytes.contains(
            QStringLiteral("current,\"Weights\",%1\n").arg(r.weightsBytesPerGpu).toUtf8()));
        QVERIFY(bytes.contains(QByteArray(
            QByteArray(",") + QByteArray::number(qint64(r.kvBytesAtMaxRequests)) + "\n")));
    } else {
        QCOMPARE(QString::fromUtf8(bytes), m_window->ladderModel()->csv());
    }
}

void TestExport::pngScale() {
    const QString path = m_dir.filePath(QStringLiteral("scaled.png"));
    QVERIFY(m_window->exportChart(QStringLiteral("memory"), path, 2.0, QSize(640, 400)));
    QImage img(path);
    QCOMPARE(img.size(), QSize(1280, 800));
    QString error;
    QVERIFY(!m_window->exportChart(QStringLiteral("memory"),
                                   m_dir.filePath(QStringLiteral("x.bmp")), 1.0, {}, &error));
    QVERIFY(error.contains(QStringLiteral("bmp")));
    QVERIFY(!m_window->exportChart(QStringLiteral("ladder"),
                                   m_dir.filePath(QStringLiteral("x.png")), 1.0, {}, &error));
}

void TestExport::reviewReport() {
    const QString path = m_dir.filePath(QStringLiteral("review.pdf"));
    QString error;
    QVERIFY2(m_window->exportReport(path, &error), qPrintable(error));
    const QByteArray pdf = readAll(path);
    QVERIFY(pdf.startsWith("%PDF-"));
    QCOMPARE(pdfPages(pdf), 2);
    // The charts keep the screen colours after printing in light colours.
    QTRY_COMPARE(m_window->pendingReplots(), 0);
}

void TestExport::headlessExport_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("out");
    QTest::addRow("memory csv, int8 on 2 GPUs")
        << QStringList{"--chart", "memory", "--model", "llama-3-8b", "--kv-dtype",
                       "int8",    "--tp",   "2",       "--context",  "65536"}
        << QStringLiteral("memory.csv");
    QTest::addRow("concurrency csv, no paging")
        << QStringList{"--chart", "concurrency", "--no-paging", "--max-model-len", "16384"}
        << QStringLiteral("conc.csv");
    QTest::addRow("memory svg") << QStringList{"--chart", "memory", "--kv-dtype", "fp8"}
                                << QStringLiteral("m.svg");
    QTest::addRow("breakdown png")
        << QStringList{"--chart", "breakdown", "--scale", "2"} << QStringLiteral("b.png");
    QTest::addRow("ladder csv") << QStringList{"--chart", "ladder", "--prefix-tokens", "4096"}
                                << QStringLiteral("l.csv");
    QTest::addRow("report") << QStringList{"--kv-dtype", "int4"} << QStringLiteral("report.pdf");
}

void TestExport::headlessExport() {
    QFETCH(QStringList, args);
    QFETCH(QString, out);
    const QString path = m_dir.filePath(QStringLiteral("headless-") + out);
    std::vector<std::string> argv{"export"};
    std::vector<std::string> scenarioArgs;
    const bool report = out == QLatin1String("report.pdf");
    for (int i = 0; i < args.size(); ++i) {
        argv.push_back(args[i].toStdString());
        if (args[i] == QLatin1String("--chart") || args[i] == QLatin1String("--scale"))
            argv.push_back(args[++i].toStdString());
        else
            scenarioArgs.push_back(args[i].toStdString());
    }
    argv.push_back(report ? "--report" : "--out");
    argv.push_back(path.toStdString());
    std::ostringstream o, e;
    const int rc = app::runHeadlessGuiCommand(argv, o, e);
    QVERIFY2(rc == 0, e.str().c_str());
    QVERIFY(o.str().find("wrote ") == 0);
    const QByteArray bytes = readAll(path);
    if (out.endsWith(QLatin1String(".csv")) && !out.startsWith(QLatin1Char('l'))) {
        auto parsed = app::parseCommand("ledger", scenarioArgs);
        QVERIFY(parsed.ok());
        verifyCurveCsv(bytes, parsed->scenario, out.startsWith(QLatin1String("memory")));
    } else if (out.endsWith(QLatin1String(".png"))) {
        QCOMPARE(QImage(path).size(), QSize(1800, 1040));
    } else if (out.endsWith(QLatin1String(".svg"))) {
        QVERIFY(bytes.contains("<svg"));
    } else if (out.endsWith(QLatin1String(".pdf"))) {
        QCOMPARE(pdfPages(bytes), 2);
    } else {
        QVERIFY(bytes.startsWith("step,applied,"));
    }
}

void TestExport::headlessBadArguments_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::addRow("no target") << QStringList{"export"} << QStringLiteral("either --chart");
    QTest::addRow("unknown chart")
        << QStringList{"export", "--chart", "pie", "--out", "x.png"} << QStringLiteral("pie");
    QTest::addRow("chart without out")
        << QStringList{"export", "--chart", "memory"} << QStringLiteral("--out");
    QTest::addRow("bad scale") << QStringList{"export", "--chart", "memory", "--out",
                                              "x.png",  "--scale", "big"}
                               << QStringLiteral("--scale");
    QTest::addRow("unknown option") << QStringList{"export", "--report", "r.pdf", "--frobnicate"}
                                    << QStringLiteral("frobnicate");
    QTest::addRow("bad model") << QStringList{"export", "--report", "r.pdf", "--model",
                                              "no-such-model"}
                               << QStringLiteral("no-such-model");
    QTest::addRow("screenshot without file")
        << QStringList{"--screenshot"} << QStringLiteral("--screenshot");
}

void TestExport::headlessBadArguments() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    std::vector<std::string> argv;
    for (const QString& a : args)
        argv.push_back(a.toStdString());
    std::ostringstream o, e;
    QCOMPARE(app::runHeadlessGuiCommand(argv, o, e), 2);
    QVERIFY2(QString::fromStdString(e.str()).contains(message), e.str().c_str());
}

void TestExport::headlessScreenshot() {
    const QString path = m_dir.filePath(QStringLiteral("shot.png"));
    std::ostringstream o, e;
    const int rc =
        app::runHeadlessGuiCommand({"--screenshot", path.toStdString(), "--size", "1200x800",
                                    "--kv-dtype", "int8", "--prefix-tokens", "2048"},
                                   o, e);
    QVERIFY2(rc == 0, e.str().c_str());
    QImage img(path);
    QCOMPARE(img.size(), QSize(1200, 800));
    QVERIFY(
        QString::fromStdString(o.str()).contains(QStringLiteral("INT8 | paged 16 | prefix 2K")));
}

QTEST_MAIN(TestExport)
#include "tst_export.moc"
