// Issue 27: headless export renders from the document and the charts, with no window. This
// suite links kvl_widgets alone (not the app library that holds MainWindow), so everything it
// exports (every chart and table of the registry, the review report) is drawn by a ChartBook
// over a ScenarioDocument. It checks the book feeds each chart what the window's tabs would:
// the Traffic tab's fields as its spin boxes hold them, the Deployment tab's default plan, the
// probe's results and calibration, and a new view reaching charts made before it.
// tst_export compares the book's files with the window's, byte for byte.

#include "widgets/charts/chart_registry.h"
#include "widgets/charts/chart_widget.h"
#include "widgets/charts/ladder_model.h"
#include "widgets/deployment/deployment_panel.h"
#include "widgets/deployment/plan_model.h"
#include "widgets/export/chart_book.h"
#include "widgets/export/report.h"
#include "widgets/probe/probe_charts.h"
#include "widgets/probe/probe_results_model.h"
#include "widgets/state/scenario_document.h"
#include "widgets/traffic/traffic_fields.h"

#include "test_helpers.h"

#include "core/io/catalog.h"
#include "core/io/scenario_file.h"

#include <QApplication>
#include <QDoubleSpinBox>
#include <QFile>
#include <QImage>
#include <QMainWindow>
#include <QTemporaryDir>
#include <QTest>

using namespace kvl;

namespace {

using test::kProbeResultsFile;
using test::readFileBytes;

QStringList csvBody(const QByteArray& bytes) {
    QStringList lines = QString::fromUtf8(bytes).trimmed().split(QLatin1Char('\n'));
    while (!lines.isEmpty() && lines.front().startsWith(QLatin1Char('#')))
        lines.removeFirst();
    return lines;
}

// A small simulation per point: the suite checks the path, not the latency figures.
void useSmallTraffic(widgets::ChartBook& book) {
    widgets::TrafficInputs in = book.trafficInputs();
    in.requests = widgets::kTrafficMinRequests;
    in.ratePoints = 3;
    book.setTrafficInputs(in);
}

} // namespace

class TestChartBook : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void everyEntryExports_data();
    void everyEntryExports();
    void tablesHoldTheScenario();
    void trafficFieldsHoldAsTheTabDoes_data();
    void trafficFieldsHoldAsTheTabDoes();
    void trafficCountsAreBounded_data();
    void trafficCountsAreBounded();
    void trafficInputsFollowTheScenario_data();
    void trafficInputsFollowTheScenario();
    void planFieldsFollowTheScenario_data();
    void planFieldsFollowTheScenario();
    void chartsFollowTheDocument();
    void probeResults();
    void reviewReport();

private:
    QTemporaryDir m_dir;
    widgets::ScenarioDocument m_doc;
    std::unique_ptr<widgets::ChartBook> m_book;
};

void TestChartBook::initTestCase() {
    QVERIFY(m_dir.isValid());
    m_doc.setScenario(io::defaultScenario());
    m_book = std::make_unique<widgets::ChartBook>(&m_doc);
    QVERIFY(m_book->loadProbeResults(kProbeResultsFile).ok());
    useSmallTraffic(*m_book);
}

void TestChartBook::everyEntryExports_data() {
    QTest::addColumn<QString>("chart");
    QTest::addColumn<int>("format");
    for (const auto& spec : widgets::chartSpecs())
        for (const auto f : {widgets::ExportFormat::Png, widgets::ExportFormat::Pdf,
                             widgets::ExportFormat::Svg, widgets::ExportFormat::Csv})
            QTest::addRow("%s.%s", spec.name, qPrintable(widgets::formatSuffix(f)))
                << QString::fromLatin1(spec.name) << int(f);
}

void TestChartBook::everyEntryExports() {
    QFETCH(QString, chart);
    QFETCH(int, format);
    const auto f = static_cast<widgets::ExportFormat>(format);
    const widgets::ChartSpec* spec = widgets::findChartSpec(chart);
    const QString path =
        m_dir.filePath(QStringLiteral("book-%1.%2").arg(chart, widgets::formatSuffix(f)));
    QString error;
    const bool ok = m_book->exportChart(chart, path, 1.0, QSize(640, 400), &error);
    // Every format the registry lists, and only those (refused naming the ones it has).
    QCOMPARE(ok, spec->formats.testFlag(f));
    QCOMPARE(m_book->chart(chart) != nullptr, !spec->table);
    if (!ok) {
        QVERIFY2(error.contains(widgets::formatSuffixes(spec->formats)), qPrintable(error));
        QVERIFY(!QFile::exists(path));
        return;
    }
    const QByteArray bytes = readFileBytes(path);
    if (f == widgets::ExportFormat::Png) {
        const QImage image(path);
        // A chart at the size asked; the ladder at least that (it takes the size it needs).
        QVERIFY(spec->table ? image.width() >= 640 && image.height() >= 400
                            : image.size() == QSize(640, 400));
    } else if (f == widgets::ExportFormat::Pdf) {
        QVERIFY(bytes.startsWith("%PDF-"));
    } else if (f == widgets::ExportFormat::Svg) {
        QVERIFY(bytes.contains("<svg"));
    } else {
        // A header and at least one row of data; a chart's CSV names its scenario first.
        QVERIFY2(csvBody(bytes).size() >= 2, bytes.constData());
        QCOMPARE(bytes.startsWith("#"), !spec->table || chart == QLatin1String("ladder"));
    }
    // Nothing of this suite is a window.
    for (QWidget* w : QApplication::topLevelWidgets())
        QVERIFY(!qobject_cast<QMainWindow*>(w));
}

void TestChartBook::tablesHoldTheScenario() {
    const widgets::LedgerSnapshot& snap = m_doc.snapshot();
    // The ladder: one row per applied step of the scenario's ladder.
    const QString ladder = m_dir.filePath(QStringLiteral("ladder-rows.csv"));
    QVERIFY(m_book->exportChart(QStringLiteral("ladder"), ladder));
    int applied = 0;
    for (const auto& step : snap.ladder)
        applied += step.applied ? 1 : 0;
    QVERIFY(applied > 1);
    QCOMPARE(csvBody(readFileBytes(ladder)).size() - 1, qsizetype(snap.ladder.size()));
    // The plan: every catalog GPU tried, for the users the Deployment tab defaults to.
    auto plan = m_book->plan();
    QVERIFY(plan);
    QCOMPARE(plan->gpus.size(), io::builtinGpus().size());
    QCOMPARE(m_book->planModel()->rowCount(), int(io::builtinGpus().size()));
    QCOMPARE(plan->preferredGpu, snap.scenario.hardware.gpu.id);
    auto* gpus =
        static_cast<widgets::GpusNeededChart*>(m_book->chart(QStringLiteral("gpus-needed")));
    QCOMPARE(gpus->bars().size(), io::builtinGpus().size());
    // The simulation: one curve per applied ladder step, of the scenario's own requests.
    auto traffic = m_book->traffic();
    QVERIFY(traffic);
    QVERIFY2(traffic->error.empty(), traffic->error.c_str());
    QCOMPARE(traffic->steps.size(), std::size_t(applied));
    QCOMPARE(traffic->inputs.requests, std::int64_t{widgets::kTrafficMinRequests});
}

void TestChartBook::trafficFieldsHoldAsTheTabDoes_data() {
    QTest::addColumn<int>("field");
    QTest::addColumn<double>("value");
    const double values[] = {0, 1.0 / 3, 0.005, 0.125, 2.675, 99.95, 2000.5, 1e5 + 0.7, -3, 2e7};
    for (int field = 0; field < 5; ++field)
        for (double v : values)
            QTest::addRow("field %d, %g", field, v) << field << v;
}

void TestChartBook::trafficFieldsHoldAsTheTabDoes() {
    // What `kvledger export --rate` etc. are checked against is what the tab's spin box holds:
    // the same constants configure a real QDoubleSpinBox here.
    QFETCH(int, field);
    QFETCH(double, value);
    const widgets::TrafficField fields[] = {
        widgets::kTrafficRateField, widgets::kTrafficPrefixShareField,
        widgets::kTrafficSloTtftField, widgets::kTrafficSloTpotField,
        widgets::kTrafficAttainmentField};
    const widgets::TrafficField& f = fields[field];
    QDoubleSpinBox spin;
    spin.setRange(f.lo, f.hi);
    spin.setDecimals(f.decimals);
    spin.setValue(value);
    QCOMPARE(widgets::trafficFieldValue(f, value), spin.value());
}

// The integer fields (shared prefix, requests, seed) are bounded in 64 bits: a count past int's
// range is held at the field's maximum, not wrapped into the range by a narrowing cast
// (2^32 + 5 tokens was held as 5).
void TestChartBook::trafficCountsAreBounded_data() {
    QTest::addColumn<qint64>("given");
    QTest::addColumn<qint64>("prefixTokens");
    QTest::addColumn<qint64>("requests");
    QTest::addColumn<quint64>("seed");
    QTest::addRow("in range") << qint64{4096} << qint64{4096} << qint64{4096} << quint64{4096};
    QTest::addRow("below") << qint64{-7} << qint64{0} << qint64{widgets::kTrafficMinRequests}
                           << quint64{1};
    QTest::addRow("past the fields")
        << qint64{(1 << 30) + 1} << qint64{widgets::kTrafficMaxPrefixTokens}
        << qint64{widgets::kTrafficMaxRequests} << quint64{widgets::kTrafficMaxSeed};
    QTest::addRow("2^32 + 5 (wraps to 5 as an int)")
        << (qint64{1} << 32) + 5 << qint64{widgets::kTrafficMaxPrefixTokens}
        << qint64{widgets::kTrafficMaxRequests} << quint64{widgets::kTrafficMaxSeed};
}

void TestChartBook::trafficCountsAreBounded() {
    QFETCH(qint64, given);
    QFETCH(qint64, prefixTokens);
    QFETCH(qint64, requests);
    QFETCH(quint64, seed);
    widgets::TrafficInputs in;
    in.prefixTokens = given;
    in.requests = given;
    in.seed = given < 0 ? 0 : static_cast<std::uint64_t>(given);
    const widgets::TrafficInputs held = widgets::heldTrafficInputs(in);
    QCOMPARE(qint64{held.prefixTokens}, prefixTokens);
    QCOMPARE(qint64{held.requests}, requests);
    QCOMPARE(quint64{held.seed}, seed);
}

void TestChartBook::trafficInputsFollowTheScenario_data() {
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("prefix"); // 0: the lever off
    QTest::addColumn<QString>("prompt");
    QTest::addColumn<qint64>("prefixTokens");
    QTest::addColumn<double>("share");
    QTest::addRow("4K, no prefix") << qint64{4096} << qint64{0} << "3840" << qint64{0} << 0.0;
    QTest::addRow("32K, 2K prefix")
        << qint64{32768} << qint64{2048} << "32512" << qint64{2048} << 1.0;
    QTest::addRow("shorter than the output") << qint64{100} << qint64{0} << "1" << qint64{0} << 0.0;
    QTest::addRow("prefix beyond the field")
        << qint64{4 << 20} << qint64{2 << 20} << "4194048" << qint64{1 << 20} << 1.0;
}

void TestChartBook::trafficInputsFollowTheScenario() {
    QFETCH(qint64, context);
    QFETCH(qint64, prefix);
    QFETCH(QString, prompt);
    QFETCH(qint64, prefixTokens);
    QFETCH(double, share);
    core::Scenario s = io::defaultScenario();
    s.workload.context = context;
    s.workload.maxModelLen = std::max<std::int64_t>(s.workload.maxModelLen, context);
    s.levers.prefix.enabled = prefix > 0;
    s.levers.prefix.sharedTokens = prefix;
    widgets::ScenarioDocument doc;
    doc.setScenario(s);
    widgets::ChartBook book(&doc);
    const widgets::TrafficInputs in = book.trafficInputs();
    QCOMPARE(QString::fromStdString(in.prompt), prompt);
    QCOMPARE(in.output, std::string("256"));
    QCOMPARE(in.prefixTokens, prefixTokens);
    QCOMPARE(in.prefixShare, share);
}

void TestChartBook::planFieldsFollowTheScenario_data() {
    QTest::addColumn<qint64>("target");
    QTest::addColumn<qint64>("concurrency");
    QTest::addColumn<qint64>("users"); // -1: what fits at the context
    QTest::addRow("the target") << qint64{50} << qint64{7} << qint64{50};
    QTest::addRow("else the concurrency") << qint64{0} << qint64{7} << qint64{7};
    QTest::addRow("else what fits") << qint64{0} << qint64{0} << qint64{-1};
    QTest::addRow("within the field") << qint64{5'000'000} << qint64{0} << qint64{1'000'000};
}

void TestChartBook::planFieldsFollowTheScenario() {
    QFETCH(qint64, target);
    QFETCH(qint64, concurrency);
    QFETCH(qint64, users);
    core::Scenario s = io::defaultScenario();
    s.workload.targetRequests = target;
    s.workload.concurrency = concurrency;
    const widgets::LedgerSnapshot snap = widgets::computeSnapshot(s);
    const widgets::PlanFields f = widgets::defaultPlanFields(snap);
    QCOMPARE(f.users, users < 0 ? snap.ledger.maxRequestsAtContext : users);
    QCOMPARE(f.context, s.workload.context);
    const core::PlanRequest req = widgets::planRequestFor(s, f);
    QCOMPARE(req.users, f.users);
    QCOMPARE(req.gpus.size(), io::builtinGpus().size());
    QCOMPARE(req.preferredGpu, s.hardware.gpu.id);
    QCOMPARE(req.maxGpus, core::kMaxPlanGpus);
}

void TestChartBook::chartsFollowTheDocument() {
    widgets::ScenarioDocument doc;
    doc.setScenario(io::defaultScenario());
    widgets::ChartBook book(&doc);
    const QString a = m_dir.filePath(QStringLiteral("follow-a.csv"));
    const QString b = m_dir.filePath(QStringLiteral("follow-b.csv"));
    const QString c = m_dir.filePath(QStringLiteral("follow-c.csv"));
    QVERIFY(book.exportChart(QStringLiteral("memory"), a));
    core::Scenario s = doc.scenario();
    s.levers.quant.enabled = true;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int4);
    doc.setScenario(s);
    QVERIFY(book.exportChart(QStringLiteral("memory"), b));
    // A chart made before the change takes the new view: as a book made after it.
    widgets::ChartBook fresh(&doc);
    QVERIFY(fresh.exportChart(QStringLiteral("memory"), c));
    QVERIFY(readFileBytes(a) != readFileBytes(b));
    QCOMPARE(readFileBytes(b), readFileBytes(c));
}

void TestChartBook::probeResults() {
    widgets::ScenarioDocument doc;
    doc.setScenario(io::defaultScenario());
    widgets::ChartBook book(&doc);
    QVERIFY(!book.hasProbeResults());
    QCOMPARE(book.calibration().status, widgets::defaultCalibration().status);
    const QString missing = m_dir.filePath(QStringLiteral("no-such-results.json"));
    const Status bad = book.loadProbeResults(missing);
    QVERIFY(!bad);
    QVERIFY2(QString::fromStdString(bad.error().message).contains(QStringLiteral("no-such")),
             bad.error().message.c_str());
    QVERIFY(book.loadProbeResults(kProbeResultsFile).ok());
    QVERIFY(book.hasProbeResults());
    // The window's calibration of the same results (a CPU's: the status says why not a GPU's).
    const widgets::SpeedCalibration c =
        widgets::calibrationFromReport(book.probeReport(), io::builtinGpus());
    QCOMPARE(book.calibration().status, c.status);
    QVERIFY(c.status != widgets::defaultCalibration().status);
    QCOMPARE(book.probeModel()->rowCount(), int(book.probeReport().rows.size()));
    for (const char* name : {"quality", "speed"})
        QVERIFY(static_cast<widgets::ProbeChart*>(book.chart(QLatin1String(name)))->hasData());
}

void TestChartBook::reviewReport() {
    const QString path = m_dir.filePath(QStringLiteral("book-report.pdf"));
    QString error;
    widgets::ReportOutline outline;
    QVERIFY2(widgets::writeReviewReport(path, m_book->reportInputs(), &error, &outline),
             qPrintable(error));
    // The verdict, ladder, plan and Speed; engines side by side; traffic; measured results.
    QCOMPARE(outline.pages, 6);
    for (const char* chart : {"memoryChart", "speed-concurrencyChart", "enginesChart",
                              "traffic-ttftChart", "qualityChart", "speedChart"})
        QVERIFY2(outline.charts.contains(QLatin1String(chart)),
                 qPrintable(outline.charts.join(u',')));
    QVERIFY(readFileBytes(path).startsWith("%PDF-"));
}

QTEST_MAIN(TestChartBook)
#include "tst_chart_book.moc"
