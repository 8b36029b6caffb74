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
#include "tst_ladder_model.moc"
