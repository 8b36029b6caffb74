// Exports: every chart to PNG / PDF / SVG / CSV with valid headers and exact CSV rows, the
// ladder as an image too, the caption line every image carries and the '#' scenario lines every
// CSV starts with, PNG scale, the two-page review report, and the headless `export` /
// `--screenshot` commands. On a full
// disk every save and export fails with a message naming the file and leaves the previous
// file byte for byte as it was. Issue 32: the writer refuses what is not a regular file
// (symbolic links included) and leaves it as it was, keeps a replaced file's mode, gives the
// OS's reason on a read-only mount, and writes a PNG, PDF or SVG only under its own suffix.

#include "cli.h"
#include "full_disk.h"
#include "headless.h"
#include "main_window.h"
#include "special_files.h"
#include "test_helpers.h"
#include "theme.h"

#include "widgets/charts/chart_colors.h"
#include "widgets/charts/chart_registry.h"
#include "widgets/charts/chart_widget.h"
#include "widgets/export/atomic_write.h"
#include "widgets/export/chart_book.h"
#include "widgets/traffic/traffic_panel.h"

#include "widgets/charts/curve_chart.h"
#include "widgets/charts/ladder_model.h"
#include "widgets/state/status_text.h"

#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/ledger.h"

#include <QDate>
#include <QFile>
#include <QImage>
#include <QMainWindow>
#include <QPainter>
#include <QRegularExpression>
#include <QSet>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>

#ifdef Q_OS_UNIX
#include <sys/stat.h>
#endif

using namespace kvl;
using kvl::app::MainWindow;

namespace {

using test::readFileBytes;
const QString& kProbeFile = test::kProbeResultsFile;

QByteArray readAll(const QString& path) {
    return readFileBytes(path);
}

int pdfPages(const QByteArray& pdf) {
    static const QRegularExpression page(QStringLiteral("/Type\\s*/Page[^s]"));
    return static_cast<int>(QString::fromLatin1(pdf).count(page));
}

// The '#' lines a CSV export starts with (the scenario), and the CSV after them.
QStringList csvCommentLines(const QByteArray& csv) {
    QStringList out;
    for (const QString& line : QString::fromUtf8(csv).split(QLatin1Char('\n'))) {
        if (!line.startsWith(QLatin1Char('#')))
            break;
        out << line;
    }
    return out;
}
QByteArray csvBody(const QByteArray& csv) {
    const int n = int(csvCommentLines(csv).size());
    QByteArray body = csv;
    for (int i = 0; i < n; ++i)
        body = body.mid(body.indexOf('\n') + 1);
    return body;
}

// The CSV rows of the "Current" series equal core's sweep, exactly; the scenario comes first,
// in '#' lines naming the model.
void verifyCurveCsv(const QByteArray& file, const core::Scenario& s, bool memory) {
    const QStringList comments = csvCommentLines(file);
    QVERIFY2(comments.size() >= 4, file.left(400).constData());
    QVERIFY(comments[0].startsWith(QStringLiteral("# ") + QString::fromStdString(s.model.name)));
    QVERIFY2(comments.join('\n').contains(
                 QStringLiteral("context %1")
                     .arg(QString::fromStdString(core::withThousands(s.workload.context)))),
             qPrintable(comments.join('\n')));
    const QByteArray csv = csvBody(file);
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
    void captionOnImages();
    void captionScopePerChart_data();
    void captionScopePerChart();
    void reviewReport();
    void headlessExport_data();
    void headlessExport();
    void headlessBadArguments_data();
    void headlessBadArguments();
    void headlessScreenshot();
    void everyRegistryChartExports();
    void verifyRejectsIncompleteFiles_data();
    void verifyRejectsIncompleteFiles();
    void fullDiskKeepsTheOriginal_data();
    void fullDiskKeepsTheOriginal();
    void headlessScale_data();
    void headlessScale();
    void headlessReferenceErrors_data();
    void headlessReferenceErrors();
    void unitsSameAsLedger();
    void writerRefusesSpecialFiles_data();
    void writerRefusesSpecialFiles();
    void writerKeepsTheMode_data();
    void writerKeepsTheMode();
    void writerOnReadOnlyMount();
    void writerChecksTheSuffix_data();
    void writerChecksTheSuffix();
    void svgRendersAndParses_data();
    void svgRendersAndParses();
    void defaultPngIsSlideSized();
    void ladderImageIsTight();
    void legendsListOnlyDrawnSeries_data();
    void legendsListOnlyDrawnSeries();
    void exportTheme_data();
    void exportTheme();
    void bookMatchesWindow_data();
    void bookMatchesWindow();
    void headlessMatchesWindow_data();
    void headlessMatchesWindow();
    void exportBuildsNoWindow_data();
    void exportBuildsNoWindow();

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
    for (const char* suffix : {"png", "pdf", "svg", "csv"})
        QTest::addRow("ladder %s", suffix)
            << QStringLiteral("ladder") << QString::fromLatin1(suffix);
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
        if (chart == QLatin1String("ladder")) // a table grows to its natural size, never elides
            QVERIFY(img.width() > 800 && img.height() >= 500);
        else
            QCOMPARE(img.size(), QSize(800, 500));
    } else if (suffix == QLatin1String("pdf")) {
        QVERIFY(bytes.startsWith("%PDF-"));
        QVERIFY(bytes.trimmed().endsWith("%%EOF"));
        QCOMPARE(pdfPages(bytes), 1);
    } else if (suffix == QLatin1String("svg")) {
        QVERIFY(bytes.startsWith("<?xml"));
        QVERIFY(bytes.contains("<svg"));
        QVERIFY(bytes.contains("</svg>"));
        if (chart == QLatin1String("ladder"))
            QVERIFY(bytes.contains(m_window->ladderModel()
                                       ->index(0, widgets::LadderModel::StepColumn)
                                       .data()
                                       .toString()
                                       .left(8)
                                       .toUtf8()));
        else
            QVERIFY(bytes.contains("<path") || bytes.contains("<polyline")); // vector
        QVERIFY(!bytes.contains("<image"));
        // The caption: the model, the GPUs and layout, the KV format, context and date.
        const QString caption = m_window->memoryChart()->caption();
        QVERIFY(caption.startsWith(QStringLiteral("Llama-3-8B · 1 x H100 SXM 80GB (TP 1) · KV ")));
        QVERIFY(caption.contains(QDate::currentDate().toString(Qt::ISODate)));
        QVERIFY2(bytes.contains(QStringLiteral("1 x H100 SXM 80GB (TP 1)").toUtf8()),
                 "no caption in the SVG");
    } else if (chart == QLatin1String("memory") || chart == QLatin1String("concurrency")) {
        verifyCurveCsv(bytes, m_window->scenario(), chart == QLatin1String("memory"));
        QVERIFY(bytes.contains("\"Pinned reference\","));
    } else if (chart == QLatin1String("breakdown")) {
        QVERIFY(csvCommentLines(bytes).size() >= 4);
        QVERIFY(csvBody(bytes).startsWith("row,segment,bytes_per_gpu\n"));
        const auto r = core::computeLedger(m_window->scenario());
        QVERIFY(bytes.contains(
            QStringLiteral("current,\"Weights\",%1\n").arg(r.weightsBytesPerGpu).toUtf8()));
        QVERIFY(bytes.contains(QByteArray(
            QByteArray(",") + QByteArray::number(qint64(r.kvBytesAtMaxRequests)) + "\n")));
    } else {
        const QStringList comments =
            widgets::csvComments(m_window->snapshot(), m_window->scope(),
                                 widgets::ChartScope::BytesRequests, QDate::currentDate());
        QCOMPARE(csvCommentLines(bytes), comments);
        QCOMPARE(QString::fromUtf8(csvBody(bytes)), m_window->ladderModel()->csv());
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
    // A CSV-only table refuses an image (the ladder draws one since issue 13: see below).
    QVERIFY(!m_window->exportChart(QStringLiteral("probe"), m_dir.filePath(QStringLiteral("x.png")),
                                   1.0, {}, &error));
    QVERIFY(error.contains(QStringLiteral(".csv")));
    // The ladder at its own size, 2x: at least 1800 pixels wide, every row drawn.
    const QString ladder = m_dir.filePath(QStringLiteral("ladder-2x.png"));
    QVERIFY2(m_window->exportChart(QStringLiteral("ladder"), ladder, 2.0, {}, &error),
             qPrintable(error));
    QImage table(ladder);
    QVERIFY(table.width() >= 1800);
    QVERIFY(table.height() > 2 * 7 * QFontMetrics(m_window->font()).height());
}

void TestExport::captionOnImages() {
    // A chart exported at kvledger export's default size and scale (960 x 540, 2x): 1920
    // pixels wide, with the caption line drawn in its bottom strip.
    const QString path = m_dir.filePath(QStringLiteral("captioned.png"));
    widgets::ChartWidget* chart = m_window->memoryChart();
    QVERIFY(!chart->caption().isEmpty());
    QVERIFY(m_window->exportChart(QStringLiteral("memory"), path, 2.0, app::kDefaultChartSize));
    const QImage with(path);
    QCOMPARE(with.size(), QSize(1920, 1080));
    const QString caption = chart->caption();
    chart->setCaption(QString());
    const QString bare = m_dir.filePath(QStringLiteral("bare.png"));
    QVERIFY(m_window->exportChart(QStringLiteral("memory"), bare, 2.0, app::kDefaultChartSize));
    chart->setCaption(caption);
    const QImage without(bare);
    // The bottom 24 px (12 at 1x) differ: the caption is there and nowhere in the bare one.
    auto inked = [](const QImage& img) {
        int n = 0;
        const QRgb bg = img.pixel(2, img.height() - 2);
        for (int y = img.height() - 24; y < img.height(); ++y)
            for (int x = 0; x < img.width(); ++x)
                n += img.pixel(x, y) != bg ? 1 : 0;
        return n;
    };
    QVERIFY2(inked(with) > 200, qPrintable(QString::number(inked(with))));
    QVERIFY(inked(with) > inked(without));
    QCOMPARE(caption, widgets::exportCaption(m_window->snapshot(), m_window->scope(),
                                             widgets::ChartScope::Selected, QDate::currentDate()));
}

void TestExport::captionScopePerChart_data() {
    QTest::addColumn<QString>("chart");
    QTest::addColumn<int>("selectedScope"); // widgets::FigureScope
    QTest::addColumn<QString>("scope");     // the caption's scope words for that chart
    using F = widgets::FigureScope;
    // Bytes follow the window's scope; requests are per replica unless the cluster is chosen;
    // the breakdown is one GPU, speed and the simulation one replica, the probe one layer.
    QTest::addRow("memory, per GPU") << "memory" << int(F::PerGpu) << "figures per GPU";
    QTest::addRow("memory, per replica") << "memory" << int(F::PerReplica) << "figures per replica";
    QTest::addRow("concurrency, per GPU")
        << "concurrency" << int(F::PerGpu) << "requests per replica";
    QTest::addRow("concurrency, cluster")
        << "concurrency" << int(F::Cluster) << "requests in the cluster";
    QTest::addRow("breakdown, per replica")
        << "breakdown" << int(F::PerReplica) << "memory per GPU";
    QTest::addRow("speed vs concurrency")
        << "speed-concurrency" << int(F::PerGpu) << "figures per replica";
    QTest::addRow("speed vs context") << "speed-context" << int(F::PerGpu) << "figures per replica";
    QTest::addRow("TTFT") << "traffic-ttft" << int(F::PerGpu) << "figures per replica";
    QTest::addRow("KV timeline") << "traffic-timeline" << int(F::PerGpu) << "figures per replica";
    QTest::addRow("GPUs needed") << "gpus-needed" << int(F::PerGpu) << "GPUs of the whole cluster";
    QTest::addRow("engines") << "engines" << int(F::PerGpu) << "requests per replica";
    QTest::addRow("probe quality") << "quality" << int(F::PerGpu)
                                   << "KV per token of the whole model, from one measured layer";
    QTest::addRow("probe speed") << "speed" << int(F::PerGpu) << "one layer, as measured";
    QTest::addRow("ladder, per GPU")
        << "ladder" << int(F::PerGpu) << "bytes per GPU, requests per replica";
    QTest::addRow("ladder, per replica") << "ladder" << int(F::PerReplica) << "figures per replica";
}

void TestExport::captionScopePerChart() {
    QFETCH(QString, chart);
    QFETCH(int, selectedScope);
    const auto selected = static_cast<widgets::FigureScope>(selectedScope);
    QFETCH(QString, scope);
    m_window->setScope(selected);
    QString caption;
    QStringList comments;
    if (chart == QLatin1String("ladder")) {
        // A table: its CSV export's first comment line is its caption.
        const QString path = m_dir.filePath(QStringLiteral("scoped-ladder.csv"));
        QVERIFY(m_window->exportChart(chart, path));
        comments = csvCommentLines(readAll(path));
        caption = comments.value(0).mid(2);
    } else {
        widgets::ChartWidget* c = m_window->chart(chart);
        QVERIFY(c);
        caption = c->caption();
        comments = c->csvComments();
    }
    m_window->setScope(widgets::FigureScope::PerGpu);
    QVERIFY2(caption.contains(QStringLiteral(" · %1 · ").arg(scope)), qPrintable(caption));
    // A chart of another scope never claims per-GPU figures.
    if (scope != QLatin1String("figures per GPU"))
        QVERIFY2(!caption.contains(QStringLiteral("figures per GPU")), qPrintable(caption));
    QCOMPARE(comments.value(0), QStringLiteral("# ") + caption);
}

void TestExport::reviewReport() {
    const QString path = m_dir.filePath(QStringLiteral("review.pdf"));
    QString error;
    QVERIFY2(m_window->exportReport(path, &error), qPrintable(error));
    const QByteArray pdf = readAll(path);
    QVERIFY(pdf.startsWith("%PDF-"));
    // Verdict, scenario and curves; breakdown, ladder and command; plan, Speed, assumptions;
    // the engines side by side; the traffic simulation.
    QCOMPARE(pdfPages(pdf), 5);
    // The charts keep the screen colours after printing in light colours.
    QTRY_COMPARE(m_window->pendingReplots(), 0);
}

void TestExport::headlessExport_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("out");
    QTest::addRow("memory csv, int8 on 2 GPUs")
        // Beyond the model's 8K: the ledger takes it when max_model_len is raised (issue 29).
        << QStringList{"--chart", "memory", "--model",   "llama-3-8b", "--kv-dtype",      "int8",
                       "--tp",    "2",      "--context", "65536",      "--max-model-len", "65536"}
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
        QCOMPARE(QImage(path).size(), app::kDefaultChartSize * 2);
    } else if (out.endsWith(QLatin1String(".svg"))) {
        QVERIFY(bytes.contains("<svg"));
    } else if (out.endsWith(QLatin1String(".pdf"))) {
        QCOMPARE(pdfPages(bytes), 5); // as reviewReport: then the engines and traffic pages
    } else {
        QVERIFY(csvCommentLines(bytes).size() >= 4);
        QVERIFY(csvBody(bytes).startsWith("step,applied,"));
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
    QTest::addRow("screenshot taking an option for its file")
        << QStringList{"--screenshot", "--size", "800x600"}
        << QStringLiteral("--screenshot: expected a file name, got the option '--size'");
    QTest::addRow("out taking an option for its file")
        << QStringList{"export", "--chart", "memory", "--out", "--units", "gb"}
        << QStringLiteral("--out: expected a file name");
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
    QVERIFY(QString::fromStdString(o.str()).contains(
        QStringLiteral("INT8 | paged 16 | shared prefix 2K x all requests")));
}

void TestExport::everyRegistryChartExports() {
    // The registry names exactly the window's charts and tables: each ledger entry exports in
    // each of its formats (the measured ones are covered with probe results in tst_probe_panel).
    int exported = 0;
    for (const auto& spec : widgets::chartSpecs()) {
        const QString name = QLatin1String(spec.name);
        QCOMPARE(m_window->chart(name) != nullptr, !spec.table);
        if (spec.measured)
            continue;
        for (const auto f : {widgets::ExportFormat::Png, widgets::ExportFormat::Pdf,
                             widgets::ExportFormat::Svg, widgets::ExportFormat::Csv}) {
            const QString path = m_dir.filePath(
                QStringLiteral("registry-%1.%2").arg(name, widgets::formatSuffix(f)));
            QString error;
            const bool ok = m_window->exportChart(name, path, 1.0, QSize(640, 400), &error);
            QCOMPARE(ok, spec.formats.testFlag(f));
            if (!ok)
                QVERIFY2(error.contains(widgets::formatSuffixes(spec.formats)), qPrintable(error));
            exported += ok ? 1 : 0;
        }
    }
    // memory, concurrency, breakdown, speed-concurrency, speed-context, gpus-needed, the three
    // traffic charts, engines and the ladder in 4 formats; the plan as CSV.
    QCOMPARE(exported, 11 * 4 + 1);
}

void TestExport::verifyRejectsIncompleteFiles_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<bool>("ok");
    using widgets::FileKind;
    const QByteArray png = QByteArray("\x89PNG\r\n\x1a\n", 8) + QByteArray(40, 'x') +
                           QByteArray("\0\0\0\0IEND\xae\x42\x60\x82", 12);
    QTest::addRow("png") << int(FileKind::Png) << png << true;
    QTest::addRow("png without IEND") << int(FileKind::Png) << png.left(30) << false;
    QTest::addRow("png empty") << int(FileKind::Png) << QByteArray() << false;
    QTest::addRow("pdf") << int(FileKind::Pdf) << QByteArray("%PDF-1.4\n1 0 obj\n%%EOF\n") << true;
    QTest::addRow("pdf truncated")
        << int(FileKind::Pdf) << QByteArray("%PDF-1.4\n1 0 obj\n") << false;
    QTest::addRow("svg") << int(FileKind::Svg) << QByteArray("<?xml version=\"1.0\"?><svg></svg>\n")
                         << true;
    QTest::addRow("svg truncated")
        << int(FileKind::Svg) << QByteArray("<?xml version=\"1.0\"?><svg>") << false;
    QTest::addRow("svg not svg") << int(FileKind::Svg) << QByteArray("hello </svg>") << false;
    QTest::addRow("csv may be anything") << int(FileKind::Data) << QByteArray() << true;
}

void TestExport::verifyRejectsIncompleteFiles() {
    QFETCH(int, kind);
    QFETCH(QByteArray, bytes);
    QFETCH(bool, ok);
    const QString path = m_dir.filePath(QStringLiteral("verified.bin"));
    const auto st = widgets::verifyFileContent(bytes, widgets::FileKind(kind), path);
    QCOMPARE(st.ok(), ok);
    if (!ok)
        QVERIFY2(QString::fromStdString(st.error().message).contains(path),
                 st.error().message.c_str());
}

void TestExport::fullDiskKeepsTheOriginal_data() {
    QTest::addColumn<QString>("what");
    QTest::addColumn<QString>("file");
    QTest::addRow("scenario save") << QStringLiteral("save") << QStringLiteral("s.kvl.json");
    for (const char* suffix : {"csv", "png", "svg", "pdf"})
        QTest::addRow("memory %s", suffix)
            << QStringLiteral("memory") << QStringLiteral("memory.") + QLatin1String(suffix);
    QTest::addRow("ladder csv") << QStringLiteral("ladder") << QStringLiteral("ladder.csv");
    QTest::addRow("report pdf") << QStringLiteral("report") << QStringLiteral("review.pdf");
    QTest::addRow("screenshot") << QStringLiteral("screenshot") << QStringLiteral("shot.png");
    QTest::addRow("kvledger export csv") << QStringLiteral("headless") << QStringLiteral("t.csv");
    QTest::addRow("kvledger export report")
        << QStringLiteral("headless-report") << QStringLiteral("r.pdf");
}

void TestExport::fullDiskKeepsTheOriginal() {
    QFETCH(QString, what);
    QFETCH(QString, file);
    test::FullDisk disk;
    if (!disk.ok())
        QSKIP(qPrintable(disk.whyNot()));
    const QString path = disk.filePath(file);
    const QByteArray original("The file as it was before the save; it must survive byte for "
                              "byte.\n");
    QVERIFY(disk.put(file, original));
    QVERIFY(disk.fill());
    bool ok = true;
    QString message;
    if (what == QLatin1String("save")) {
        QSignalSpy errors(m_window.get(), &MainWindow::errorRaised);
        ok = m_window->saveScenarioFile(path);
        QCOMPARE(errors.count(), 1);
        message = errors.at(0).at(1).toString();
        QVERIFY(m_window->currentFile() != QFileInfo(path).absoluteFilePath());
    } else if (what == QLatin1String("report")) {
        ok = m_window->exportReport(path, &message);
    } else if (what.startsWith(QLatin1String("headless")) || what == QLatin1String("screenshot")) {
        std::vector<std::string> argv;
        if (what == QLatin1String("screenshot"))
            argv = {"--screenshot", path.toStdString()};
        else if (what == QLatin1String("headless"))
            argv = {"export", "--chart", "memory", "--out", path.toStdString()};
        else
            argv = {"export", "--report", path.toStdString()};
        std::ostringstream o, e;
        const int rc = app::runHeadlessGuiCommand(argv, o, e);
        QCOMPARE(rc, 1);
        QVERIFY2(o.str().empty(), o.str().c_str()); // no "wrote"
        message = QString::fromStdString(e.str());
        QCOMPARE(message.count(QLatin1Char('\n')), 1); // one line
        ok = false;
    } else {
        ok = m_window->exportChart(what, path, 1.0, QSize(800, 500), &message);
    }
    QVERIFY(!ok);
    QCOMPARE(readAll(path), original);
    QVERIFY2(message.contains(QDir::toNativeSeparators(path)), qPrintable(message));
    QVERIFY2(message.contains(QString::fromLocal8Bit(std::strerror(ENOSPC))), qPrintable(message));
    // No temporary file left behind either.
    QStringList expected{file, QStringLiteral("filler")};
    expected.sort();
    QCOMPARE(disk.files(), expected);
}

void TestExport::headlessScale_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    const QStringList png{"export", "--chart", "memory", "--out", "x.png"};
    QTest::addRow("nan") << (png + QStringList{"--scale", "nan"}) << QStringLiteral("--scale");
    QTest::addRow("inf") << (png + QStringList{"--scale", "inf"}) << QStringLiteral("--scale");
    QTest::addRow("zero") << (png + QStringList{"--scale", "0"}) << QStringLiteral("--scale");
    QTest::addRow("negative") << (png + QStringList{"--scale", "-2"}) << QStringLiteral("--scale");
    QTest::addRow("25.6 GB image") << (png + QStringList{"--scale", "8", "--size", "10000x10000"})
                                   << QStringLiteral("6400 megapixels");
    QTest::addRow("just over 100 MP") << (png + QStringList{"--scale", "2", "--size", "5001x5000"})
                                      << QStringLiteral("megapixels");
    QTest::addRow("bad size") << (png + QStringList{"--size", "10x10"}) << QStringLiteral("--size");
    // Issue 32 item 11: a screenshot smaller than the window can be, or of a context its
    // Context box cannot show, is refused instead of written at another size or number.
    const QStringList shot{"--screenshot", "x.png"};
    QTest::addRow("screenshot 200x150")
        << (shot + QStringList{"--size", "200x150"})
        << QStringLiteral("--size 200x150: the window needs at least ");
    QTest::addRow("screenshot at 1e9 tokens")
        << (shot + QStringList{"--context", "1000000000", "--max-model-len", "1000000000"})
        << QStringLiteral("--context 1,000,000,000: the window shows contexts up to 16,777,216");
}

void TestExport::headlessScale() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    std::vector<std::string> argv;
    for (const QString& a : args)
        argv.push_back(a.toStdString());
    std::ostringstream o, e;
    QCOMPARE(app::runHeadlessGuiCommand(argv, o, e), 2);
    const QString err = QString::fromStdString(e.str());
    QVERIFY2(err.contains(message), qPrintable(err));
    QCOMPARE(err.count(QLatin1Char('\n')), 1);
    QVERIFY(!QFileInfo::exists(QStringLiteral("x.png")));
}

void TestExport::headlessReferenceErrors_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("message");
    QTest::addRow("missing") << QStringLiteral("missing") << QStringLiteral("no such file");
    QTest::addRow("not json") << QStringLiteral("garbage") << QStringLiteral("line 1");
    QTest::addRow("fifo") << QStringLiteral("fifo") << QStringLiteral("not a regular file");
    QTest::addRow("directory") << QStringLiteral("dir") << QStringLiteral("directory");
}

void TestExport::headlessReferenceErrors() {
    QFETCH(QString, kind);
    QFETCH(QString, message);
    QTemporaryDir dir;
    QString ref = dir.filePath(QStringLiteral("ref.kvl.json"));
    if (kind == QLatin1String("garbage")) {
        QFile f(ref);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{ garbage");
    } else if (kind == QLatin1String("fifo")) {
#ifdef Q_OS_UNIX
        QCOMPARE(::mkfifo(QFile::encodeName(ref).constData(), 0600), 0);
#else
        QSKIP("FIFOs are POSIX");
#endif
    } else if (kind == QLatin1String("dir")) {
        ref = dir.path();
    }
    const QString out = dir.filePath(QStringLiteral("t.csv"));
    std::ostringstream o, e;
    const int rc = app::runHeadlessGuiCommand({"export", "--chart", "memory", "--out",
                                               out.toStdString(), "--reference", ref.toStdString()},
                                              o, e);
    QCOMPARE(rc, 2);
    const QString err = QString::fromStdString(e.str());
    QVERIFY2(err.startsWith(QStringLiteral("kvledger export: --reference: ")), qPrintable(err));
    QVERIFY2(err.contains(QDir::toNativeSeparators(ref)), qPrintable(err));
    QVERIFY2(err.contains(message), qPrintable(err));
    QCOMPARE(err.count(QLatin1Char('\n')), 1); // one line
    QVERIFY(!QFileInfo::exists(out));
}

void TestExport::unitsSameAsLedger() {
    // --units takes the same values for export as for ledger (tst_cli checks ledger).
    for (const char* units : {"gib", "GiB", "gb", "GB"}) {
        const QString out =
            m_dir.filePath(QStringLiteral("units-%1.csv").arg(QLatin1String(units)));
        std::ostringstream o, e;
        QCOMPARE(app::runHeadlessGuiCommand(
                     {"export", "--chart", "ladder", "--out", out.toStdString(), "--units", units},
                     o, e),
                 0);
    }
    std::ostringstream o, e;
    QCOMPARE(app::runHeadlessGuiCommand(
                 {"export", "--chart", "ladder", "--out", "u.csv", "--units", "TB"}, o, e),
             2);
    QCOMPARE(QString::fromStdString(e.str()),
             QStringLiteral("kvledger export: --units: expected gib or gb, got 'TB'\n"));
}

namespace {
const QByteArray kPng = QByteArray("\x89PNG\r\n\x1a\n", 8) + QByteArray(40, 'x') +
                        QByteArray("\0\0\0\0IEND\xae\x42\x60\x82", 12);
const QByteArray kPdf("%PDF-1.4\n1 0 obj\n%%EOF\n");
const QByteArray kSvg("<?xml version=\"1.0\"?><svg></svg>\n");
} // namespace

void TestExport::writerRefusesSpecialFiles_data() {
    QTest::addColumn<QString>("what");
    QTest::addColumn<QString>("kind");
    for (const QString& what : QStringList{"writer", "save", "chart", "report"})
        for (const QString& kind : test::specialKinds())
            QTest::addRow("%s over %s", qPrintable(what), qPrintable(kind)) << what << kind;
}

void TestExport::writerRefusesSpecialFiles() {
    // The window's own saves and exports, which take the same writer: a device node, FIFO,
    // socket, directory or link is refused with one line naming it, and left as it was.
    QFETCH(QString, what);
    QFETCH(QString, kind);
    QTemporaryDir dir;
    const QString path = dir.filePath(what == QLatin1String("save") ? QStringLiteral("s.kvl.json")
                                      : what == QLatin1String("report") ? QStringLiteral("r.pdf")
                                                                        : QStringLiteral("c.png"));
    if (const QString why = test::makeSpecial(kind, path); !why.isEmpty()) {
        if (kind.contains(QLatin1String("device")) && ::geteuid() != 0)
            QSKIP(qPrintable(why));
        QFAIL(qPrintable(why));
    }
    const QString before = test::describe(path);
    QString message;
    if (what == QLatin1String("writer")) {
        const auto st = widgets::writeFileAtomically(path, kPng, widgets::FileKind::Png);
        QVERIFY(!st.ok());
        message = QString::fromStdString(st.error().message);
    } else if (what == QLatin1String("save")) {
        QSignalSpy errors(m_window.get(), &MainWindow::errorRaised);
        QVERIFY(!m_window->saveScenarioFile(path));
        QCOMPARE(errors.count(), 1);
        message = errors.at(0).at(1).toString();
    } else if (what == QLatin1String("report")) {
        QVERIFY(!m_window->exportReport(path, &message));
    } else {
        QVERIFY(
            !m_window->exportChart(QStringLiteral("memory"), path, 1.0, QSize(800, 500), &message));
    }
    QCOMPARE(message,
             QStringLiteral("Could not write %1: %2").arg(path, test::specialReason(kind, path)));
    QCOMPARE(test::describe(path), before);
}

void TestExport::writerKeepsTheMode_data() {
    QTest::addColumn<int>("mode");
    for (const int mode : {0444, 0600, 0640, 0755})
        QTest::addRow("%o", mode) << mode;
}

void TestExport::writerKeepsTheMode() {
    // A replaced file keeps its permission bits (a 0444 file came out 0644); a user may not
    // write a 0444 file at all, and hears the OS's reason.
    QFETCH(int, mode);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("m.csv"));
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.write("old\n") == 4);
    }
    const QByteArray p = QFile::encodeName(path);
    QCOMPARE(::chmod(p.constData(), mode_t(mode)), 0);
    const auto st = widgets::writeFileAtomically(path, "new\n");
    struct stat after {};
    QCOMPARE(::stat(p.constData(), &after), 0);
    QCOMPARE(int(after.st_mode & 07777), mode);
    if (::geteuid() == 0 || (mode & 0200)) {
        QVERIFY2(st.ok(), st.ok() ? "" : st.error().message.c_str());
        QCOMPARE(readAll(path), QByteArray("new\n"));
    } else {
        QVERIFY(!st.ok());
        QCOMPARE(QString::fromStdString(st.error().message),
                 QStringLiteral("Could not write %1: %2")
                     .arg(path, QString::fromLocal8Bit(std::strerror(EACCES))));
        QCOMPARE(readAll(path), QByteArray("old\n"));
    }
}

void TestExport::writerOnReadOnlyMount() {
    // "Could not write F: Read-only file system" (it said "not writable"), from the writer and
    // from the window's save and export.
    test::FullDisk disk;
    if (!disk.ok())
        QSKIP(qPrintable(disk.whyNot()));
    const QByteArray original("{}\n");
    for (const char* name : {"s.kvl.json", "m.png"})
        QVERIFY(disk.put(QLatin1String(name), original));
    QVERIFY(disk.makeReadOnly());
    const QString erofs = QString::fromLocal8Bit(std::strerror(EROFS));
    const QString save = disk.filePath(QStringLiteral("s.kvl.json"));
    const QString png = disk.filePath(QStringLiteral("m.png"));
    QSignalSpy errors(m_window.get(), &MainWindow::errorRaised);
    QVERIFY(!m_window->saveScenarioFile(save));
    QCOMPARE(errors.count(), 1);
    QCOMPARE(errors.at(0).at(1).toString(),
             QStringLiteral("Could not write %1: %2").arg(save, erofs));
    QString message;
    QVERIFY(!m_window->exportChart(QStringLiteral("memory"), png, 1.0, QSize(800, 500), &message));
    QCOMPARE(message, QStringLiteral("Could not write %1: %2").arg(png, erofs));
    QCOMPARE(readAll(save), original);
    QCOMPARE(readAll(png), original);
}

void TestExport::writerChecksTheSuffix_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("refusal"); // empty: written
    using widgets::FileKind;
    QTest::addRow("pdf as .png") << int(FileKind::Pdf) << kPdf << QStringLiteral("r.png")
                                 << QStringLiteral("a PDF document is named *.pdf");
    QTest::addRow("pdf without suffix") << int(FileKind::Pdf) << kPdf << QStringLiteral("review")
                                        << QStringLiteral("a PDF document is named *.pdf");
    QTest::addRow("png as .txt") << int(FileKind::Png) << kPng << QStringLiteral("x.txt")
                                 << QStringLiteral("a PNG image is named *.png");
    QTest::addRow("svg as .png") << int(FileKind::Svg) << kSvg << QStringLiteral("c.png")
                                 << QStringLiteral("an SVG image is named *.svg");
    QTest::addRow("pdf as .PDF") << int(FileKind::Pdf) << kPdf << QStringLiteral("R.PDF")
                                 << QString();
    QTest::addRow("png as .png") << int(FileKind::Png) << kPng << QStringLiteral("x.png")
                                 << QString();
    QTest::addRow("data under any name")
        << int(FileKind::Data) << QByteArray("a,b\n") << QStringLiteral("t.txt") << QString();
}

void TestExport::writerChecksTheSuffix() {
    QFETCH(int, kind);
    QFETCH(QByteArray, bytes);
    QFETCH(QString, name);
    QFETCH(QString, refusal);
    QTemporaryDir dir;
    const QString path = dir.filePath(name);
    const auto st = widgets::writeFileAtomically(path, bytes, widgets::FileKind(kind));
    if (refusal.isEmpty()) {
        QVERIFY2(st.ok(), st.ok() ? "" : st.error().message.c_str());
        QCOMPARE(readAll(path), bytes);
        return;
    }
    QVERIFY(!st.ok());
    QCOMPARE(QString::fromStdString(st.error().message),
             QStringLiteral("Could not write %1: %2").arg(path, refusal));
    QVERIFY(!QFileInfo::exists(path));
}

QTEST_MAIN(TestExport)
#include "tst_export.moc"

namespace {

// Runs kvledger export with `args` (after "export"); the exit code.
int headless(const QStringList& args, std::string* err = nullptr) {
    std::vector<std::string> argv{"export"};
    for (const QString& a : args)
        argv.push_back(a.toStdString());
    std::ostringstream o, e;
    const int rc = app::runHeadlessGuiCommand(argv, o, e);
    if (err)
        *err = e.str();
    return rc;
}

// Rows of `img` with no pixel other than the background (the corner's colour).
std::vector<bool> blankRows(const QImage& img) {
    const QRgb bg = img.pixel(1, 1);
    std::vector<bool> blank(static_cast<std::size_t>(img.height()), true);
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width() && blank[static_cast<std::size_t>(y)]; ++x)
            blank[static_cast<std::size_t>(y)] = img.pixel(x, y) == bg;
    return blank;
}

} // namespace

void TestExport::svgRendersAndParses_data() {
    QTest::addColumn<QString>("chart");
    for (const char* c : {"memory", "concurrency", "breakdown", "speed-concurrency", "ladder"})
        QTest::addRow("%s", c) << QString::fromLatin1(c);
}

void TestExport::svgRendersAndParses() {
    // An exported SVG is well-formed XML with the size a viewer needs, and a real renderer (Qt
    // SVG's, as rsvg-convert and ImageMagick read the same SVG Tiny subset) draws it: not blank.
    QFETCH(QString, chart);
    const QString path = m_dir.filePath(QStringLiteral("render-%1.svg").arg(chart));
    QString error;
    QVERIFY2(m_window->exportChart(chart, path, 1.0, QSize(800, 450), &error), qPrintable(error));
    const QByteArray bytes = readAll(path);
    QXmlStreamReader xml(bytes);
    bool sawRoot = false;
    QSizeF declared;
    QRectF viewBox;
    while (!xml.atEnd()) {
        xml.readNext();
        if (xml.isStartElement() && !sawRoot) {
            sawRoot = true;
            QCOMPARE(xml.name().toString(), QStringLiteral("svg"));
            const auto a = xml.attributes();
            QVERIFY(a.hasAttribute(QStringLiteral("width")));
            QVERIFY(a.hasAttribute(QStringLiteral("height")));
            QVERIFY(a.hasAttribute(QStringLiteral("viewBox")));
            const QStringList vb = a.value(QStringLiteral("viewBox")).toString().split(' ');
            QCOMPARE(vb.size(), 4);
            viewBox =
                QRectF(vb[0].toDouble(), vb[1].toDouble(), vb[2].toDouble(), vb[3].toDouble());
            // The size in mm is the viewBox at 96 dpi (CSS pixels): a renderer draws it at the
            // size exported, not 4/3 of it.
            const QString width = a.value(QStringLiteral("width")).toString();
            QVERIFY2(width.endsWith(QStringLiteral("mm")), qPrintable(width));
            declared = QSizeF(width.chopped(2).toDouble(),
                              a.value(QStringLiteral("height")).toString().chopped(2).toDouble());
            QVERIFY2(std::abs(declared.width() / 25.4 * 96 - viewBox.width()) < 1.5,
                     qPrintable(width));
            QVERIFY(std::abs(declared.height() / 25.4 * 96 - viewBox.height()) < 1.5);
        }
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QVERIFY(sawRoot);
    QVERIFY(viewBox.width() >= 800 && viewBox.height() >= 450);
    QSvgRenderer renderer(bytes);
    QVERIFY(renderer.isValid());
    QCOMPARE(renderer.viewBoxF(), viewBox);
    QImage img(viewBox.size().toSize(), QImage::Format_ARGB32);
    img.fill(Qt::transparent);
    {
        QPainter p(&img);
        renderer.render(&p);
    }
    // Drawn: most of the image is painted (the background), and text and lines in more than
    // a couple of colours.
    int painted = 0;
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 2)
        for (int x = 0; x < img.width(); x += 2) {
            const QRgb c = img.pixel(x, y);
            painted += qAlpha(c) > 0 ? 1 : 0;
            if (colours.size() < 64)
                colours.insert(c);
        }
    QVERIFY2(painted > img.width() * img.height() / 4 * 9 / 10,
             qPrintable(QString::number(painted)));
    QVERIFY2(colours.size() > 8, qPrintable(QString::number(colours.size())));
}

void TestExport::defaultPngIsSlideSized() {
    // Without --size or --scale: 960 x 540 at 2x, a 1920 x 1080 PNG.
    const QString path = m_dir.filePath(QStringLiteral("default-size.png"));
    std::string err;
    QCOMPARE(headless({"--chart", "memory", "--out", path}, &err), 0);
    const QImage img(path);
    QCOMPARE(img.size(), app::kDefaultChartSize * app::kDefaultScale);
    QVERIFY(img.width() >= 1600);
    QCOMPARE(app::kDefaultScale, 2.0);
}

void TestExport::ladderImageIsTight() {
    // The ladder's image is its table and a bar chart of requests per step, with no empty band:
    // it was the table in the top third of a 946 x 520 image.
    const QString path = m_dir.filePath(QStringLiteral("ladder-tight.png"));
    std::string err;
    QCOMPARE(headless({"--chart", "ladder", "--out", path}, &err), 0);
    const QImage img(path);
    QVERIFY(img.width() >= 1600);
    const std::vector<bool> blank = blankRows(img);
    int run = 0, longest = 0;
    for (bool b : blank) {
        run = b ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    QVERIFY2(longest < img.height() / 10,
             qPrintable(QStringLiteral("%1 blank rows of %2").arg(longest).arg(img.height())));
    // The bars: each applied step's colour appears in the lower half, the table's is above.
    const widgets::ChartColors c = widgets::ChartColors::light();
    int barPixels = 0;
    for (int y = img.height() / 2; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x)
            barPixels += QColor(img.pixel(x, y)) == c.steps[1] ? 1 : 0;
    QVERIFY2(barPixels > 500, qPrintable(QString::number(barPixels)));
    // A larger --size gives the bars the room, not an empty band.
    const QString big = m_dir.filePath(QStringLiteral("ladder-big.png"));
    QCOMPARE(headless({"--chart", "ladder", "--out", big, "--size", "1200x900", "--scale", "1"}),
             0);
    const QImage large(big);
    QCOMPARE(large.size(), QSize(std::max(1200, img.width() / 2), 900));
    run = longest = 0;
    for (bool b : blankRows(large)) {
        run = b ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    QVERIFY2(longest < large.height() / 10, qPrintable(QString::number(longest)));
}

void TestExport::legendsListOnlyDrawnSeries_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("tp");
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("prefix");
    // A 2K prefix that leaves per-request memory alone: "+paging 16" under the current line.
    QTest::addRow("llama-3-8b, prefix 2K") << "llama-3-8b" << 1 << qint64(8192) << qint64(2048);
    // A baseline (MHA, contiguous at max_model_len) that holds no request at any context.
    QTest::addRow("llama-3.1-70b TP 4 at 128K")
        << "llama-3.1-70b" << 4 << qint64(131072) << qint64(0);
}

void TestExport::legendsListOnlyDrawnSeries() {
    QFETCH(QString, model);
    QFETCH(int, tp);
    QFETCH(qint64, context);
    QFETCH(qint64, prefix);
    core::Scenario s = m_window->scenario();
    const core::Scenario saved = s;
    s.model = *io::findModel(model.toStdString());
    s.hardware.gpuCount = tp;
    s.workload.context = context;
    s.workload.maxModelLen = context;
    s.levers.prefix.enabled = prefix > 0;
    s.levers.prefix.sharedTokens = prefix > 0 ? prefix : s.levers.prefix.sharedTokens;
    s.levers.prefix.sharingRequests = 0;
    m_window->setScenario(s);
    QTRY_COMPARE(m_window->pendingReplots(), 0);
    QVERIFY(m_window->snapshot().ledger.error.empty());
    bool tested = false;
    for (widgets::ChartWidget* chart : {m_window->memoryChart(), m_window->concurrencyChart()}) {
        // Every series has a point, and none is drawn exactly under a later one (the pinned
        // reference, dashed, is drawn over the lines and may match).
        for (int i = 0; i < chart->seriesCount(); ++i) {
            if (chart->seriesDashed(i))
                continue;
            const QVector<double> vi = chart->seriesValues(i);
            QVERIFY2(!vi.isEmpty(), qPrintable(chart->seriesName(i) + " has nothing to draw"));
            for (int j = i + 1; j < chart->seriesCount(); ++j)
                if (!chart->seriesDashed(j))
                    QVERIFY2(
                        vi != chart->seriesValues(j) ||
                            chart->seriesKeys(i) != chart->seriesKeys(j),
                        qPrintable(chart->seriesName(i) + " lies under " + chart->seriesName(j)));
        }
        tested = tested || chart->seriesCount() >= 2;
    }
    QVERIFY(tested);
    // The sweep itself has the hidden steps: the legend leaves out what the ledger computed.
    const core::SweepResult sweep = core::computeSweep(s);
    int applied = 0;
    for (const auto& c : sweep.curves)
        applied += !c.isCurrent && c.applied ? 1 : 0;
    QVERIFY(applied >= 3);
    m_window->setScenario(saved);
    QTRY_COMPARE(m_window->pendingReplots(), 0);
}

void TestExport::exportTheme_data() {
    QTest::addColumn<QString>("theme");
    QTest::addColumn<QString>("chart");
    QTest::addColumn<bool>("dark");
    QTest::addRow("memory, dark") << "dark"
                                  << "memory" << true;
    QTest::addRow("memory, light") << "light"
                                   << "memory" << false;
    QTest::addRow("ladder, dark") << "dark"
                                  << "ladder" << true;
}

void TestExport::exportTheme() {
    // kvledger export --theme: the chart's and the table's background in the theme's colours.
    QFETCH(QString, theme);
    QFETCH(QString, chart);
    QFETCH(bool, dark);
    const QString path = m_dir.filePath(QStringLiteral("theme-%1-%2.png").arg(chart, theme));
    std::string err;
    const int rc =
        headless({"--chart", chart, "--out", path, "--theme", theme, "--scale", "1"}, &err);
    app::applyTheme(app::Theme::System); // the other tests' window as it was
    QVERIFY2(rc == 0, err.c_str());
    const QImage img(path);
    QVERIFY(!img.isNull());
    const QColor bg(img.pixel(2, 2));
    QVERIFY2(dark ? bg.lightnessF() < 0.3 : bg.lightnessF() > 0.8, qPrintable(bg.name()));
}

// Issue 27, one export path: a ChartBook over the window's own document writes what the
// window writes, for every chart and table of the registry the ledger draws (CSV byte for
// byte, images at the same size).
void TestExport::bookMatchesWindow_data() {
    QTest::addColumn<QString>("chart");
    QTest::addColumn<QString>("suffix");
    for (const auto& spec : widgets::chartSpecs()) {
        if (spec.measured)
            continue; // with probe results: headlessMatchesWindow
        QTest::addRow("%s.csv", spec.name) << QString::fromLatin1(spec.name) << "csv";
        if (spec.formats.testFlag(widgets::ExportFormat::Png))
            QTest::addRow("%s.png", spec.name) << QString::fromLatin1(spec.name) << "png";
    }
}

void TestExport::bookMatchesWindow() {
    QFETCH(QString, chart);
    QFETCH(QString, suffix);
    const QString fromWindow = m_dir.filePath(QStringLiteral("window-%1.%2").arg(chart, suffix));
    const QString fromBook = m_dir.filePath(QStringLiteral("book-%1.%2").arg(chart, suffix));
    const QSize size = widgets::findChartSpec(chart)->table ? QSize() : QSize(700, 420);
    QString error;
    QVERIFY2(m_window->exportChart(chart, fromWindow, 1.0, size, &error), qPrintable(error));
    widgets::ChartBook book(m_window->document());
    QVERIFY2(book.exportChart(chart, fromBook, 1.0, size, &error), qPrintable(error));
    if (suffix == QLatin1String("csv")) {
        QCOMPARE(readAll(fromBook), readAll(fromWindow));
        QVERIFY(csvBody(readAll(fromBook)).count('\n') >= 2);
    } else {
        QCOMPARE(QImage(fromBook).size(), QImage(fromWindow).size());
    }
}

// `kvledger export` (a document and a book) and a window showing the same scenario write the
// same CSV.
void TestExport::headlessMatchesWindow_data() {
    QTest::addColumn<QString>("chart");
    QTest::addColumn<QStringList>("args");
    QTest::addRow("memory, int8, TP 2")
        << "memory" << QStringList{"--kv-dtype", "int8", "--tp", "2", "--units", "gb"};
    QTest::addRow("ladder, shared prefix") << "ladder" << QStringList{"--prefix-tokens", "4096"};
    QTest::addRow("plan, 16K") << "plan"
                               << QStringList{"--context", "16384", "--max-model-len", "16384"};
    QTest::addRow("gpus needed") << "gpus-needed"
                                 << QStringList{"--context", "32768", "--max-model-len", "32768"};
    QTest::addRow("engines") << "engines" << QStringList{"--kv-dtype", "fp8"};
    QTest::addRow("llama.cpp, int8")
        << "memory" << QStringList{"--engine", "llamacpp", "--kv-dtype", "int8"};
    QTest::addRow("llama.cpp engines, int8")
        << "engines" << QStringList{"--engine", "llamacpp", "--kv-dtype", "int8"};
    QTest::addRow("speed vs context") << "speed-context" << QStringList{"--tp", "2"};
    QTest::addRow("traffic ttft, an SLO")
        << "traffic-ttft" << QStringList{"--slo-ttft-ms", "1500", "--output-tokens", "128"};
    QTest::addRow("measured speed") << "speed" << QStringList{"--probe-results", kProbeFile};
    QTest::addRow("probe table") << "probe" << QStringList{"--probe-results", kProbeFile};
}

void TestExport::headlessMatchesWindow() {
    QFETCH(QString, chart);
    QFETCH(QStringList, args);
    const QString headlessCsv = m_dir.filePath(QStringLiteral("same-headless-%1.csv").arg(chart));
    const QString windowCsv = m_dir.filePath(QStringLiteral("same-window-%1.csv").arg(chart));
    std::string err;
    QVERIFY2(headless(QStringList{"--chart", chart, "--out", headlessCsv} + args, &err) == 0,
             err.c_str());
    // The same options, through the window.
    std::vector<std::string> scenarioArgs;
    for (const QString& a : args)
        scenarioArgs.push_back(a.toStdString());
    auto parsed = app::parseCommand("export", scenarioArgs);
    QVERIFY2(parsed.ok(), parsed ? "" : parsed.error().message.c_str());
    MainWindow::Options o;
    o.useSettings = false;
    o.showDialogs = false;
    MainWindow w(o);
    w.setUnits(parsed->units);
    w.setScenario(parsed->scenario);
    if (parsed->has("probe-results"))
        QVERIFY(w.openProbeResults(kProbeFile));
    if (parsed->has("slo-ttft-ms")) {
        widgets::TrafficInputs in = w.trafficPanel()->inputs();
        in.sloTtftMs = std::stod(parsed->value("slo-ttft-ms"));
        in.output = parsed->value("output-tokens");
        w.trafficPanel()->setInputs(in);
    }
    QString error;
    QVERIFY2(w.exportChart(chart, windowCsv, 1.0, {}, &error), qPrintable(error));
    QCOMPARE(readAll(headlessCsv), readAll(windowCsv));
}

// `kvledger export` builds no window: no QMainWindow but this suite's own takes an event
// while it runs (the old path built and showed a whole MainWindow). --screenshot, a picture of
// the window, is the control: it must be seen.
void TestExport::exportBuildsNoWindow_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<bool>("window");
    QTest::addRow("a chart") << QStringList{"export", "--chart", "memory", "--out", "nw.csv"}
                             << false;
    QTest::addRow("a simulated chart")
        << QStringList{"export", "--chart", "traffic-timeline", "--out", "nw.png"} << false;
    QTest::addRow("the report") << QStringList{"export", "--report", "nw.pdf"} << false;
    QTest::addRow("screenshot (control)")
        << QStringList{"--screenshot", "nw-shot.png", "--size", "1600x1000"} << true;
}

namespace {
// Every QMainWindow but `own` that takes an event while installed on the application.
struct WindowSpy : QObject {
    QObject* own = nullptr;
    QSet<QObject*> seen;
    bool eventFilter(QObject* obj, QEvent* event) override {
        if (obj != own && qobject_cast<QMainWindow*>(obj))
            seen.insert(obj);
        return QObject::eventFilter(obj, event);
    }
};
} // namespace

void TestExport::exportBuildsNoWindow() {
    QFETCH(QStringList, args);
    QFETCH(bool, window);
    std::vector<std::string> argv;
    for (const QString& a : args) {
        const bool file = a.startsWith(QLatin1String("nw"));
        argv.push_back(file ? m_dir.filePath(a).toStdString() : a.toStdString());
    }
    WindowSpy spy;
    spy.own = m_window.get();
    qApp->installEventFilter(&spy);
    std::ostringstream o, e;
    const int rc = app::runHeadlessGuiCommand(argv, o, e);
    qApp->removeEventFilter(&spy);
    QVERIFY2(rc == 0, e.str().c_str());
    QCOMPARE(!spy.seen.isEmpty(), window);
    for (QWidget* w : QApplication::topLevelWidgets())
        QVERIFY(w == m_window.get() || !qobject_cast<QMainWindow*>(w));
}
