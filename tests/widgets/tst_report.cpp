// The review report: the verdict line from the planner (a missed target, a fit, no target),
// the scope-labelled scenario, the plan table, the Speed chart and the Assumptions section
// with its numbers.

#include "widgets/charts/breakdown_chart.h"
#include "widgets/charts/chart_factory.h"
#include "widgets/charts/curve_chart.h"
#include "widgets/charts/ladder_model.h"
#include "widgets/charts/speed_chart.h"
#include "widgets/deployment/plan_model.h"
#include "widgets/export/report.h"

#include "core/deployment.h"
#include "core/engine.h"
#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/ledger.h"
#include "core/planner.h"
#include "core/speed.h"

#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace kvl;

namespace {

core::Scenario scenario(const char* model, const char* gpu, int tp, std::int64_t context,
                        std::int64_t target) {
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel(model);
    s.hardware.gpu = *io::findGpu(gpu);
    s.hardware.gpuCount = tp;
    s.workload.context = context;
    s.workload.maxModelLen = 0;
    s.workload.targetRequests = target;
    s.levers.quant.enabled = false;
    s.levers.prefix.enabled = false;
    return s;
}

QString num(std::int64_t v) {
    return QString::fromStdString(core::withThousands(v));
}

} // namespace

class TestReport : public QObject {
    Q_OBJECT
private slots:
    void verdictMissedTarget();
    void verdictFits_data();
    void verdictFits();
    void verdictWithoutTarget();
    void scenarioFiguresPerGpu();
    void assumptions();
    void planTable();
    void reportHasEverySection();

private:
    QTemporaryDir m_dir;
};

void TestReport::verdictMissedTarget() {
    // The example: 50 users of Llama-3.1-70B at 32K on 4 x H100 (TP 4). Per GPU: the
    // weights are 70.55e9 x 2 B / 4 = 35.3 GB, 80 layers x 2 KV heads x 128 x 2 (K, V) x 2 B =
    // 80 KiB of KV per token, 2.5 GiB per request of 32K: a dozen or so fit in what is left of
    // 0.92 x 79.2 GiB after the reserves, and TP 4 x PP 3 (12 GPUs) holds the 50.
    const core::Scenario s = scenario("llama-3.1-70b", "h100-80gb", 4, 32768, 50);
    const auto view = widgets::makeLedgerView(s);
    const widgets::ReviewVerdict v = widgets::reviewVerdict(*view.snapshot);
    const core::Deployment cur =
        core::evaluateDeployment(s, s.hardware.gpu, core::layoutOf(s), 50, 32768);
    core::PlanRequest req;
    req.base = s;
    req.users = 50;
    req.context = 32768;
    req.gpus = {s.hardware.gpu};
    const core::PlanResult plan = core::planDeployments(req);
    QVERIFY(plan.gpus.front().fits);
    const core::Layout need = plan.gpus.front().layouts.front().layout;
    // The count is the ledger's for the scenario vLLM starts with --max-model-len 32768: a
    // request holds 80 layers x (8 KV heads / TP 4) x 128 x 2 (K, V) x 2 B x 32,768 tokens.
    core::Scenario started = s;
    started.workload.maxModelLen = 32768;
    const core::LedgerResult r = core::computeLedger(started);
    QCOMPARE(r.kvBytesPerRequestPerGpu, qint64(80) * 2 * 128 * 2 * 2 * 32768);
    QCOMPARE(cur.clusterRequests,
             std::min(r.maxRequestsAtContext, core::effectiveMaxNumSeqs(started)));
    QVERIFY(cur.clusterRequests < 50);
    QVERIFY(need.gpus() <= 12); // issue 10: a layout of 12 GPUs or fewer holds the 50
    QCOMPARE(v.current.clusterRequests, cur.clusterRequests);
    QCOMPARE(v.users, qint64(50));
    QVERIFY(v.usersAreTarget);
    QVERIFY(v.needed && v.needed->fits);
    QCOMPARE(v.needed->layouts.front().layout, need);
    const QString layout = QString::fromStdString(core::layoutLabel(need))
                               .replace(QStringLiteral(" x "), QStringLiteral(" × "));
    QCOMPARE(v.text, QStringLiteral("50 users at 32K on 4 × H100 SXM 80GB: does not fit, %1 fit; "
                                    "needs %2 × H100 SXM 80GB as %3")
                         .arg(num(cur.clusterRequests))
                         .arg(need.gpus())
                         .arg(layout));
}

void TestReport::verdictFits_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("gpu");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("users");
    QTest::addColumn<QString>("where");
    QTest::addRow("8b on one H100")
        << "llama-3.1-8b"
        << "h100-80gb" << 1 << 1 << qint64(8192) << qint64(10) << "1 × H100 SXM 80GB";
    QTest::addRow("70b on TP 4 x PP 3") << "llama-3.1-70b"
                                        << "h100-80gb" << 4 << 3 << qint64(32768) << qint64(50)
                                        << "12 × H100 SXM 80GB as TP 4 × PP 3";
}

void TestReport::verdictFits() {
    QFETCH(QString, model);
    QFETCH(QString, gpu);
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(qint64, context);
    QFETCH(qint64, users);
    QFETCH(QString, where);
    core::Scenario s =
        scenario(model.toLatin1().constData(), gpu.toLatin1().constData(), tp, context, users);
    s.hardware.pipelineParallel = pp;
    const auto view = widgets::makeLedgerView(s);
    const widgets::ReviewVerdict v = widgets::reviewVerdict(*view.snapshot);
    const core::Deployment cur =
        core::evaluateDeployment(s, s.hardware.gpu, core::layoutOf(s), users, context);
    QVERIFY2(cur.fits, cur.reason.c_str());
    QVERIFY(!v.needed);
    QCOMPARE(v.text, QStringLiteral("%1 users at %2 on %3: fits, %4 fit")
                         .arg(num(users), QString::fromStdString(core::formatTokens(context)),
                              where, num(cur.clusterRequests)));
}

void TestReport::verdictWithoutTarget() {
    core::Scenario s = scenario("llama-3.1-8b", "h100-80gb", 1, 4096, 0);
    const auto view = widgets::makeLedgerView(s);
    const auto cur = core::evaluateDeployment(s, s.hardware.gpu, core::layoutOf(s), 1, 4096);
    QCOMPARE(widgets::reviewVerdict(*view.snapshot).text,
             QStringLiteral("%1 requests of 4K tokens fit on 1 × H100 SXM 80GB (no target set)")
                 .arg(num(cur.clusterRequests)));
    // The scenario's concurrency stands in for a target.
    s.workload.concurrency = 16;
    const auto view2 = widgets::makeLedgerView(s);
    const widgets::ReviewVerdict v = widgets::reviewVerdict(*view2.snapshot);
    QCOMPARE(v.users, qint64(16));
    QVERIFY(!v.usersAreTarget);
    QVERIFY(v.text.startsWith(QStringLiteral("16 users at 4K on 1 × H100 SXM 80GB: fits, ")));
}

void TestReport::scenarioFiguresPerGpu() {
    // On TP 4 the per-GPU KV per token x context is the per-GPU KV per request (32K is whole
    // blocks of 16): the report says so instead of mixing totals and per-GPU figures.
    const core::Scenario s = scenario("llama-3.1-70b", "h100-80gb", 4, 32768, 0);
    const auto view = widgets::makeLedgerView(s);
    const auto& r = view.snapshot->ledger;
    QCOMPARE(r.kvBytesPerTokenPerGpu, qint64(80 * 2 * 2 * 128 * 2)); // 8 KV heads / TP 4
    QCOMPARE(r.kvBytesPerRequestPerGpu, r.kvBytesPerTokenPerGpu * 32768);
    const QString html = widgets::scenarioHtml(*view.snapshot, core::UnitSystem::Binary);
    QVERIFY(html.contains(QStringLiteral("KV per token (per GPU)")));
    QVERIFY(html.contains(QStringLiteral("KV per request (per GPU)")));
    QVERIFY(html.contains(num(r.kvBytesPerTokenPerGpu) + QStringLiteral(" B")));
    QVERIFY(html.contains(num(r.kvBytesPerRequestPerGpu) + QStringLiteral(" B) = KV per token "
                                                                          "(per GPU) × 32,768 "
                                                                          "tokens")));
    QVERIFY(html.contains(QStringLiteral("4 × H100 SXM 80GB as TP 4 × PP 1 × DP 1")));
    QVERIFY(html.contains(QStringLiteral("%1 per replica").arg(num(r.maxRequestsAtContext))));
    // The lines the scenario's vLLM prints, exactly, and the CUDA-graph reserve it profiles.
    QVERIFY(!r.vllmLogLines.empty());
    QVERIFY(html.contains(
        QStringLiteral("vLLM %1 logs (per GPU)").arg(QString::fromStdString(r.vllmVersion))));
    for (const auto& line : r.vllmLogLines)
        QVERIFY2(html.contains(QString::fromStdString(line)), line.c_str());
    QVERIFY(r.cudaGraphBytes > 0);
    QVERIFY(html.contains(QStringLiteral("CUDA graphs (per GPU)")));
}

void TestReport::assumptions() {
    const core::Scenario s = scenario("llama-3.1-8b", "h100-80gb", 1, 256, 0);
    const auto view = widgets::makeLedgerView(s);
    const auto& r = view.snapshot->ledger;
    QVERIFY(r.reservesEstimated);
    const QString html = widgets::assumptionsHtml(*view.snapshot, widgets::defaultCalibration(),
                                                  core::UnitSystem::Binary);
    const core::Reserves e = core::estimateReserves(s, core::layoutOf(s));
    QCOMPARE(r.activationBytes, e.activation);
    // Reserves, estimated, with their numbers.
    QVERIFY(html.contains(QStringLiteral("estimated")));
    QVERIFY(html.contains(QStringLiteral("(%1 B)").arg(num(e.activation))));
    QVERIFY(html.contains(
        QString::fromStdString(core::formatBytes(e.nonTorch, core::UnitSystem::Binary, 2))));
    QVERIFY(html.contains(
        QString::fromStdString(core::formatBytes(e.cudaGraphs, core::UnitSystem::Binary, 2))));
    // The speed model's efficiencies and their sources.
    QVERIFY(html.contains(QStringLiteral("η_mem 0.80")));
    QVERIFY(html.contains(QStringLiteral("η_flops 0.60")));
    QVERIFY(html.contains(QStringLiteral("3,350 GB/s")));
    QVERIFY(html.contains(QStringLiteral("datasheet defaults, no probe results loaded")));
    // max_num_seqs: 1024 on an H100; 256-token requests fit by the thousand, so it caps.
    QVERIFY(r.maxRequestsAtContext > 1024);
    QVERIFY(html.contains(QStringLiteral("max_num_seqs 1,024 (vLLM&#39;s default for this GPU) "
                                         "caps each replica at 1,024")) ||
            html.contains(QStringLiteral("max_num_seqs 1,024 (vLLM's default for this GPU) caps "
                                         "each replica at 1,024")));
    // The quality caveats cite the papers and vLLM's docs.
    for (const char* t : {"FP8", "INT4", "+0.2-0.3 perplexity", "INT2", "arXiv 2402.02750",
                          "arXiv 2401.18079", "vLLM docs"})
        QVERIFY2(html.contains(QLatin1String(t)), t);
    // A longer context: it does not cap.
    const auto view2 = widgets::makeLedgerView(scenario("llama-3.1-8b", "h100-80gb", 1, 32768, 0));
    QVERIFY(widgets::assumptionsHtml(*view2.snapshot, widgets::defaultCalibration(),
                                     core::UnitSystem::Binary)
                .contains(QStringLiteral("does not cap")));
}

void TestReport::planTable() {
    const core::Scenario s = scenario("llama-3.1-70b", "h100-80gb", 4, 32768, 50);
    const auto view = widgets::makeLedgerView(s);
    const widgets::ReviewVerdict v = widgets::reviewVerdict(*view.snapshot);
    core::PlanRequest req;
    req.base = s;
    req.users = 50;
    req.context = 32768;
    req.gpus = {*io::findGpu("h200"), *io::findGpu("l4"), s.hardware.gpu};
    req.maxGpus = 8; // eight L4s hold no 70B with 50 users at 32K
    const core::PlanResult others = core::planDeployments(req);
    const QString html =
        widgets::planTableHtml(*view.snapshot, v, &others, core::UnitSystem::Binary);
    QVERIFY(html.contains(QStringLiteral("H100 SXM 80GB (current layout)")));
    const core::Layout best = v.needed->layouts.front().layout;
    QVERIFY(html.contains(
        QStringLiteral("<b>TP %1 × PP %2 × DP %3</b>").arg(best.tp).arg(best.pp).arg(best.dp)));
    QVERIFY(html.contains(QStringLiteral("H200 141GB")));
    QVERIFY(html.contains(QStringLiteral("L4 24GB")));
    QVERIFY(html.contains(QStringLiteral("does not fit")));
    // H100 is listed once as the current kind, not again among the others.
    QCOMPARE(html.count(QStringLiteral(">H100 SXM 80GB<")),
             int(std::min<std::size_t>(4, v.needed->layouts.size())));
}

void TestReport::reportHasEverySection() {
    const core::Scenario s = scenario("llama-3.1-70b", "h100-80gb", 4, 32768, 50);
    const auto view = widgets::makeLedgerView(s);
    auto make = [](const char* name) {
        return std::unique_ptr<widgets::ChartWidget>(
            widgets::createChart(*widgets::findChartSpec(QString::fromLatin1(name))));
    };
    auto memory = make("memory");
    auto concurrency = make("concurrency");
    auto breakdown = make("breakdown");
    auto speed = make("speed-concurrency");
    static_cast<widgets::CurveChart*>(memory.get())->setView(view);
    static_cast<widgets::CurveChart*>(concurrency.get())->setView(view);
    static_cast<widgets::BreakdownChart*>(breakdown.get())->setView(view);
    auto* speedChart = static_cast<widgets::PredictedSpeedChart*>(speed.get());
    speedChart->setView(view);
    widgets::LadderModel ladder;
    ladder.setView(view);
    widgets::ReportInputs in;
    in.snapshot = view.snapshot.get();
    in.memoryChart = memory.get();
    in.concurrencyChart = concurrency.get();
    in.breakdownChart = breakdown.get();
    in.ladder = &ladder;
    in.predictedSpeedChart = speedChart;
    const QString path = m_dir.filePath(QStringLiteral("review.pdf"));
    widgets::ReportOutline outline;
    QString error;
    QVERIFY2(widgets::writeReviewReport(path, in, &error, &outline), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().startsWith("%PDF-"));
    QString where;
    for (int i = 0; i < outline.sections.size(); ++i)
        where += outline.sections[i] + QLatin1Char('@') + QString::number(outline.sectionPages[i]) +
                 QLatin1Char(' ');
    QVERIFY2(outline.pages == 3, qPrintable(where));
    QCOMPARE(outline.sectionPages, QList<int>({1, 1, 2, 2, 3, 3, 3}));
    QCOMPARE(outline.sections, QStringList({"Verdict", "Scenario", "Lever ladder", "vLLM command",
                                            "Deployment plan", "Speed", "Assumptions"}));
    QCOMPARE(outline.charts, QStringList({"memoryChart", "concurrencyChart", "breakdownChart",
                                          "speed-concurrencyChart"}));
    // It opens with the verdict; the plan table lists other GPU kinds; the speed data follow
    // the chart.
    const QString verdict = widgets::reviewVerdict(*view.snapshot).text;
    QVERIFY(outline.text.indexOf(verdict) >= 0);
    QVERIFY(outline.text.indexOf(verdict) < outline.text.indexOf(QStringLiteral("Scenario")));
    // The other kinds, best first as the planner ranks every catalog GPU: the best of them is
    // listed (which one depends on the catalog, so it is asked, not named).
    core::PlanRequest req;
    req.base = s;
    req.users = 50;
    req.context = 32768;
    req.gpus = io::builtinGpus();
    const core::PlanResult all = core::planDeployments(req);
    const core::GpuPlan* bestOther = nullptr;
    for (const core::GpuPlan* g : all.bestFirst())
        if (g->gpu.id != s.hardware.gpu.id) {
            bestOther = g;
            break;
        }
    QVERIFY(bestOther != nullptr);
    QVERIFY2(outline.text.contains(QString::fromStdString(bestOther->gpu.name)),
             bestOther->gpu.name.c_str());
    QVERIFY(outline.text.contains(QStringLiteral("tokens/s per user")));
    QVERIFY(outline.text.contains(QStringLiteral("ms / step")));
    QVERIFY(outline.text.contains(QStringLiteral("η_mem 0.80")));
}

QTEST_MAIN(TestReport)
#include "tst_report.moc"
