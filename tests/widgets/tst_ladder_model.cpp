// The lever-ladder table model: QAbstractItemModelTester on every update, exact values per
// step, the reference delta column and the CSV.

#include "widgets/ladder_model.h"

#include "core/io/scenario_file.h"
#include "core/kv_format.h"
#include "core/ledger.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

using namespace kvl;

namespace {
core::Scenario scenario(bool quant, bool paging, bool prefix, core::AttentionMode mode) {
    core::Scenario s = io::defaultScenario();
    s.workload.maxModelLen = 32768;
    s.levers.quant.enabled = quant;
    s.levers.paging.enabled = paging;
    s.levers.prefix.enabled = prefix;
    s.levers.prefix.sharedTokens = 2048;
    s.levers.attention.enabled = mode != core::AttentionMode::Native;
    s.levers.attention.mode = mode;
    s.levers.attention.gqaKvHeads = 4;
    return s;
}
} // namespace

class TestLadderModel : public QObject {
    Q_OBJECT
private slots:
    void values_data();
    void values();
    void referenceDelta();
    void unitsAndCsv();
    void figureScope_data();
    void figureScope();
};

void TestLadderModel::values_data() {
    QTest::addColumn<bool>("quant");
    QTest::addColumn<bool>("paging");
    QTest::addColumn<bool>("prefix");
    QTest::addColumn<int>("mode");
    QTest::addRow("vllm defaults") << false << true << false << int(core::AttentionMode::Native);
    QTest::addRow("int8 + prefix") << true << true << true << int(core::AttentionMode::Native);
    QTest::addRow("mqa, unpaged") << false << false << false << int(core::AttentionMode::Mqa);
    QTest::addRow("gqa-4 all levers") << true << true << true << int(core::AttentionMode::Gqa);
}

void TestLadderModel::values() {
    QFETCH(bool, quant);
    QFETCH(bool, paging);
    QFETCH(bool, prefix);
    QFETCH(int, mode);
    widgets::LadderModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    const core::Scenario s =
        scenario(quant, paging, prefix, static_cast<core::AttentionMode>(mode));
    model.setView(widgets::makeLedgerView(s));
    const auto ladder = core::computeLadder(s);
    QCOMPARE(model.rowCount(), static_cast<int>(ladder.size()));
    QCOMPARE(model.columnCount(), int(widgets::LadderModel::DeltaColumn));
    for (int row = 0; row < model.rowCount(); ++row) {
        const auto& st = ladder[static_cast<std::size_t>(row)];
        QCOMPARE(model.data(model.index(row, widgets::LadderModel::StepColumn)).toString(),
                 QString::fromStdString(st.label));
        QCOMPARE(model
                     .data(model.index(row, widgets::LadderModel::BytesPerTokenColumn),
                           widgets::LadderModel::ExactValueRole)
                     .toLongLong(),
                 st.result.kvBytesPerToken);
        QCOMPARE(model
                     .data(model.index(row, widgets::LadderModel::BytesPerRequestColumn),
                           widgets::LadderModel::ExactValueRole)
                     .toLongLong(),
                 st.result.kvBytesPerRequest);
        QCOMPARE(model
                     .data(model.index(row, widgets::LadderModel::RequestsColumn),
                           widgets::LadderModel::ExactValueRole)
                     .toLongLong(),
                 st.result.maxRequestsAtContext);
        QCOMPARE(model.data(model.index(row, 0), widgets::LadderModel::AppliedRole).toBool(),
                 st.applied);
        QCOMPARE(model.data(model.index(row, widgets::LadderModel::BytesPerTokenColumn)).toString(),
                 QString::fromStdString(
                     core::formatBytes(st.result.kvBytesPerToken, core::UnitSystem::Binary, 2)));
    }
    // The baseline is MHA FP16 contiguous: 512 KiB per token for Llama-3-8B (vLLM: 2 x 32 layers x
    // 32 heads x 128 x 2 bytes).
    QCOMPARE(model
                 .data(model.index(0, widgets::LadderModel::BytesPerTokenColumn),
                       widgets::LadderModel::ExactValueRole)
                 .toLongLong(),
             qint64(524288));
    // A second snapshot of the same shape updates in place.
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    core::Scenario s2 = s;
    s2.workload.context = 4096;
    model.setView(widgets::makeLedgerView(s2));
    QCOMPARE(changed.count(), 1);
    QCOMPARE(reset.count(), 0);
    QCOMPARE(model.headerData(widgets::LadderModel::RequestsColumn, Qt::Horizontal).toString(),
             QStringLiteral("Requests @4K"));
}

void TestLadderModel::referenceDelta() {
    widgets::LadderModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const core::Scenario ref = scenario(false, true, false, core::AttentionMode::Native);
    const core::Scenario cur = scenario(true, true, true, core::AttentionMode::Native);
    model.setView(widgets::makeLedgerView(cur));
    auto view = widgets::makeLedgerView(cur, core::UnitSystem::Binary, &ref);
    model.setView(view);
    QCOMPARE(model.columnCount(), widgets::LadderModel::DeltaColumn + 1);
    const auto a = core::computeLadder(cur);
    const auto b = core::computeLadder(ref);
    for (int row = 0; row < model.rowCount(); ++row) {
        const qint64 d = a[static_cast<std::size_t>(row)].result.maxRequestsAtContext -
                         b[static_cast<std::size_t>(row)].result.maxRequestsAtContext;
        QCOMPARE(model
                     .data(model.index(row, widgets::LadderModel::DeltaColumn),
                           widgets::LadderModel::ExactValueRole)
                     .toLongLong(),
                 d);
    }
    QVERIFY(model.data(model.index(4, widgets::LadderModel::DeltaColumn))
                .toString()
                .startsWith(QLatin1Char('+')));
    view.reference = nullptr;
    model.setView(view);
    QCOMPARE(model.columnCount(), int(widgets::LadderModel::DeltaColumn));
}

void TestLadderModel::unitsAndCsv() {
    widgets::LadderModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const core::Scenario s = scenario(true, true, true, core::AttentionMode::Native);
    model.setView(widgets::makeLedgerView(s, core::UnitSystem::Decimal));
    QVERIFY(model.data(model.index(0, widgets::LadderModel::BytesPerTokenColumn))
                .toString()
                .endsWith(QStringLiteral(" KB")));
    const QStringList lines = model.csv().trimmed().split(QLatin1Char('\n'));
    QCOMPARE(lines.size(), 6);
    QCOMPARE(lines[0], QStringLiteral("step,applied,kv_bytes_per_token,kv_bytes_per_request,max_"
                                      "requests,vllm_max_concurrency"));
    const auto ladder = core::computeLadder(s);
    for (int i = 0; i < 5; ++i) {
        const QStringList f = lines[i + 1].split(QLatin1Char(','));
        QCOMPARE(f.value(2).toLongLong(),
                 ladder[static_cast<std::size_t>(i)].result.kvBytesPerToken);
        QCOMPARE(f.value(4).toLongLong(),
                 ladder[static_cast<std::size_t>(i)].result.maxRequestsAtContext);
    }
    QVERIFY(model.html().contains(QStringLiteral("<table")));
}

QTEST_MAIN(TestLadderModel)
void TestLadderModel::figureScope_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("dp");
    QTest::addColumn<int>("scope");
    QTest::addColumn<qint64>("bytes");
    QTest::addColumn<qint64>("requests");
    QTest::addColumn<QString>("label");
    // 1000 bytes per GPU and 7 requests per replica, scaled to each scope.
    QTest::addRow("per GPU, TP4") << 4 << 1 << 1 << 0 << qint64(1000) << qint64(7) << "per GPU";
    QTest::addRow("replica TP4xPP2")
        << 4 << 2 << 3 << 1 << qint64(8000) << qint64(7) << "per replica";
    QTest::addRow("cluster TP4xPP2xDP3")
        << 4 << 2 << 3 << 2 << qint64(24000) << qint64(21) << "cluster";
    QTest::addRow("cluster of one GPU")
        << 1 << 1 << 1 << 2 << qint64(1000) << qint64(7) << "cluster";
}

void TestLadderModel::figureScope() {
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(int, dp);
    QFETCH(int, scope);
    QFETCH(qint64, bytes);
    QFETCH(qint64, requests);
    QFETCH(QString, label);
    core::Scenario s;
    s.hardware.gpuCount = tp;
    s.hardware.pipelineParallel = pp;
    s.hardware.dataParallel = dp;
    const auto sc = static_cast<widgets::FigureScope>(scope);
    QCOMPARE(widgets::scopeBytes(1000, s, sc), bytes);
    QCOMPARE(widgets::scopeRequests(7, s, sc), requests);
    QCOMPARE(widgets::scopeLabel(sc), label);
    // Saturates instead of wrapping.
    if (sc == widgets::FigureScope::Cluster && tp * pp * dp > 1)
        QCOMPARE(widgets::scopeBytes(std::numeric_limits<std::int64_t>::max() / 2, s, sc),
                 std::numeric_limits<std::int64_t>::max());
}

#include "tst_ladder_model.moc"
