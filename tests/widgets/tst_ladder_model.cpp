// The lever-ladder table model: QAbstractItemModelTester on every update, exact values per
// step, the reference delta column and the CSV.

#include "widgets/charts/breakdown_chart.h"
#include "widgets/charts/cached_text_delegate.h"
#include "widgets/charts/ladder_model.h"

#include "core/engine.h"
#include "core/hybrid_note.h"
#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/kv_format.h"
#include "core/ledger.h"
#include "core/speed.h"

#include <QAbstractItemModelTester>
#include <QImage>
#include <QPainter>
#include <QSet>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTableView>
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
    void requestsYouCanRun_data();
    void requestsYouCanRun();
    void breakdownLayerMix_data();
    void breakdownLayerMix();
    void values_data();
    void values();
    void referenceDelta();
    void unitsAndCsv();
    void figureScope_data();
    void figureScope();
    void scopedColumns_data();
    void scopedColumns();
    void speedColumns_data();
    void speedColumns();
    void notInVllm_data();
    void notInVllm();
    void hybridExplained_data();
    void hybridExplained();
    void cachedCellsDrawAsStyled_data();
    void cachedCellsDrawAsStyled();
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
    // A second snapshot of the same shape updates in place, and announces exactly the cells
    // whose text changed (the view repaints those alone), then cellsUpdated once.
    QStringList before;
    for (int row = 0; row < model.rowCount(); ++row)
        for (int col = 0; col < model.columnCount(); ++col)
            before << model.data(model.index(row, col)).toString();
    QStringList headersBefore;
    for (int col = 0; col < model.columnCount(); ++col)
        headersBefore << model.headerData(col, Qt::Horizontal).toString();
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QSignalSpy headers(&model, &QAbstractItemModel::headerDataChanged);
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    QSignalSpy updated(&model, &widgets::LadderModel::cellsUpdated);
    core::Scenario s2 = s;
    s2.workload.context = 2 * s.workload.context;
    QCOMPARE(s.workload.context, 4096);
    model.setView(widgets::makeLedgerView(s2));
    QCOMPARE(reset.count(), 0);
    QCOMPARE(updated.count(), 1);
    QSet<int> announced; // row * columns + column
    for (const QList<QVariant>& args : changed) {
        const auto tl = args.at(0).toModelIndex();
        const auto br = args.at(1).toModelIndex();
        for (int row = tl.row(); row <= br.row(); ++row)
            for (int col = tl.column(); col <= br.column(); ++col)
                announced.insert(row * model.columnCount() + col);
    }
    QSet<int> differ;
    for (int row = 0; row < model.rowCount(); ++row)
        for (int col = 0; col < model.columnCount(); ++col) {
            const int i = row * model.columnCount() + col;
            if (model.data(model.index(row, col)).toString() != before.at(i))
                differ.insert(i);
        }
    QVERIFY(!differ.isEmpty()); // the requests at the new context at least
    QCOMPARE(announced, differ);
    QSet<int> headerDiffer, headerAnnounced;
    for (int col = 0; col < model.columnCount(); ++col)
        if (model.headerData(col, Qt::Horizontal).toString() != headersBefore.at(col))
            headerDiffer.insert(col);
    for (const QList<QVariant>& args : headers)
        for (int col = args.at(1).toInt(); col <= args.at(2).toInt(); ++col)
            headerAnnounced.insert(col);
    QCOMPARE(headerAnnounced, headerDiffer);
    QCOMPARE(model.headerData(widgets::LadderModel::RequestsColumn, Qt::Horizontal).toString(),
             QStringLiteral("Requests @8K\n(per replica)"));
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
    // The column names carry the scope (per GPU by default), as the headers do.
    QCOMPARE(lines[0], QStringLiteral("step,applied,kv_bytes_per_token_per_gpu,kv_bytes_per_"
                                      "request_per_gpu,requests_you_can_run_per_replica,memory_"
                                      "holds_requests_per_replica,vllm_max_concurrency,"
                                      "concurrency,decode_step_ms,tokens_per_s_per_user,vllm_kv_"
                                      "cache_dtype"));
    const auto ladder = core::computeLadder(s);
    for (int i = 0; i < 5; ++i) {
        const QStringList f = lines[i + 1].split(QLatin1Char(','));
        QCOMPARE(f.value(2).toLongLong(),
                 ladder[static_cast<std::size_t>(i)].result.kvBytesPerToken);
        QCOMPARE(f.value(4).toLongLong(),
                 ladder[static_cast<std::size_t>(i)].result.requestsYouCanRun);
        QCOMPARE(f.value(5).toLongLong(),
                 ladder[static_cast<std::size_t>(i)].result.maxRequestsAtContext);
    }
    QVERIFY(model.html().contains(QStringLiteral("<table")));
}

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

void TestLadderModel::scopedColumns_data() {
    QTest::addColumn<int>("scope");
    QTest::addColumn<QString>("label");
    QTest::addColumn<QString>("requestLabel");
    QTest::addRow("per GPU") << int(widgets::FigureScope::PerGpu) << "per GPU"
                             << "per replica";
    QTest::addRow("per replica") << int(widgets::FigureScope::PerReplica) << "per replica"
                                 << "per replica";
    QTest::addRow("cluster") << int(widgets::FigureScope::Cluster) << "cluster"
                             << "cluster";
}

void TestLadderModel::scopedColumns() {
    // Llama-3-8B on TP 2 x PP 3 x DP 3: a GPU holds half the KV heads of at most 11 of the 32
    // layers (11, 11, 10), so the replica's KV is not the busiest GPU's times 6.
    QFETCH(int, scope);
    QFETCH(QString, label);
    QFETCH(QString, requestLabel);
    core::Scenario s = scenario(true, true, false, core::AttentionMode::Native);
    s.hardware.gpuCount = 2;
    s.hardware.pipelineParallel = 3;
    s.hardware.dataParallel = 3;
    auto view = widgets::makeLedgerView(s);
    view.scope = static_cast<widgets::FigureScope>(scope);
    widgets::LadderModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setView(view);
    const auto ladder = core::computeLadder(s);
    const auto sc = static_cast<widgets::FigureScope>(scope);
    const std::int64_t replicas = sc == widgets::FigureScope::Cluster ? 3 : 1;
    for (int row = 0; row < model.rowCount(); ++row) {
        const auto& r = ladder[static_cast<std::size_t>(row)].result;
        // No KV head is copied (8 over TP 2): the replica holds the model's KV once.
        QCOMPARE(r.kvBytesPerTokenPerReplica, r.kvBytesPerToken);
        QVERIFY(r.kvBytesPerTokenPerGpu * 6 > r.kvBytesPerTokenPerReplica);
        QCOMPARE(model
                     .data(model.index(row, widgets::LadderModel::BytesPerTokenColumn),
                           widgets::LadderModel::ExactValueRole)
                     .toLongLong(),
                 sc == widgets::FigureScope::PerGpu ? r.kvBytesPerTokenPerGpu
                                                    : r.kvBytesPerToken * replicas);
        QCOMPARE(model
                     .data(model.index(row, widgets::LadderModel::BytesPerRequestColumn),
                           widgets::LadderModel::ExactValueRole)
                     .toLongLong(),
                 sc == widgets::FigureScope::PerGpu ? r.kvBytesPerRequestPerGpu
                                                    : r.kvBytesPerRequest * replicas);
        QCOMPARE(model
                     .data(model.index(row, widgets::LadderModel::RequestsColumn),
                           widgets::LadderModel::ExactValueRole)
                     .toLongLong(),
                 r.requestsYouCanRun * replicas); // max_num_seqs (1,024) caps it here
    }
    // The busiest stage's 11 layers of 32, half the KV heads each.
    QCOMPARE(ladder[2].result.kvBytesPerTokenPerGpu * 2 * 32,
             ladder[2].result.kvBytesPerToken * 11);
    QVERIFY(model.headerData(widgets::LadderModel::BytesPerTokenColumn, Qt::Horizontal)
                .toString()
                .endsWith(QStringLiteral("(%1)").arg(label)));
    QVERIFY(model.headerData(widgets::LadderModel::BytesPerRequestColumn, Qt::Horizontal)
                .toString()
                .endsWith(QStringLiteral("(%1)").arg(label)));
    QVERIFY(model.headerData(widgets::LadderModel::RequestsColumn, Qt::Horizontal)
                .toString()
                .endsWith(QStringLiteral("(%1)").arg(requestLabel)));
    QString csvLabel = label.toLower();
    csvLabel.replace(QLatin1Char(' '), QLatin1Char('_'));
    QVERIFY(model.csv().startsWith(
        QStringLiteral("step,applied,kv_bytes_per_token_%1,").arg(csvLabel)));
}

void TestLadderModel::speedColumns_data() {
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("concurrency"); // 0 = as many as each step fits
    QTest::addRow("32K, as many as fit") << qint64(32768) << qint64(0);
    QTest::addRow("8K x 32") << qint64(8192) << qint64(32);
    QTest::addRow("256, max_num_seqs caps") << qint64(256) << qint64(0);
}

void TestLadderModel::speedColumns() {
    QFETCH(qint64, context);
    QFETCH(qint64, concurrency);
    core::Scenario s = scenario(true, true, true, core::AttentionMode::Native);
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Fp8E4M3);
    s.workload.context = context;
    s.workload.concurrency = concurrency;
    widgets::LadderModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setView(widgets::makeLedgerView(s));
    QCOMPARE(model.columnCount(), int(widgets::LadderModel::DeltaColumn));
    const auto ladder = core::computeLadder(s);
    for (int row = 0; row < model.rowCount(); ++row) {
        const auto& st = ladder[static_cast<std::size_t>(row)];
        // Each step at the scenario's concurrency, else as many as it fits (max_num_seqs too).
        const std::int64_t fits =
            std::min(st.result.maxRequestsAtContext, core::effectiveMaxNumSeqs(st.scenario));
        const std::int64_t b = concurrency > 0 ? concurrency : fits;
        QCOMPARE(model.rowConcurrency(row), b);
        QVERIFY(b > 0);
        const core::DecodeStep d = core::decodeStep(st.scenario, b, context);
        QCOMPARE(model
                     .data(model.index(row, widgets::LadderModel::StepMsColumn),
                           widgets::LadderModel::ExactValueRole)
                     .toDouble(),
                 d.stepMs);
        QCOMPARE(model
                     .data(model.index(row, widgets::LadderModel::TokensPerUserColumn),
                           widgets::LadderModel::ExactValueRole)
                     .toDouble(),
                 1000.0 / d.stepMs);
        QCOMPARE(model.data(model.index(row, widgets::LadderModel::StepMsColumn)).toString(),
                 QStringLiteral("%1 @%2").arg(QString::number(d.stepMs, 'f', 1),
                                              QString::fromStdString(core::withThousands(b))));
        if (concurrency == 0 && context == 256 && row >= int(core::LadderStepId::Paging))
            QCOMPARE(b, qint64(1024)); // vLLM's default max_num_seqs on an H100
    }
    QVERIFY(model.csv()
                .split(QLatin1Char('\n'))
                .value(1)
                .contains(QString::number(ladder[0].result.maxRequestsAtContext)));
}

void TestLadderModel::notInVllm_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<bool>("inVllm");
    QTest::addRow("FP8") << int(core::KvDtype::Fp8E4M3) << true;
    QTest::addRow("INT8 per token-head") << int(core::KvDtype::Int8) << true;
    QTest::addRow("INT4 g128") << int(core::KvDtype::Int4) << false;
    QTest::addRow("INT2 KIVI") << int(core::KvDtype::Int2) << false;
}

void TestLadderModel::notInVllm() {
    QFETCH(int, dtype);
    QFETCH(bool, inVllm);
    core::Scenario s = scenario(true, true, true, core::AttentionMode::Native);
    s.levers.quant.format = core::KvFormat::defaultFor(static_cast<core::KvDtype>(dtype));
    widgets::LadderModel model;
    model.setView(widgets::makeLedgerView(s));
    const auto ladder = core::computeLadder(s);
    for (int row = 0; row < model.rowCount(); ++row) {
        const auto& st = ladder[static_cast<std::size_t>(row)];
        // The baseline and +GQA steps are 16-bit (vLLM "auto"); from +quantization on, the
        // format of the lever.
        const bool quantized = row >= int(core::LadderStepId::Quantization);
        const bool expected = quantized ? inVllm : true;
        QCOMPARE(core::vllmCacheDtype(st.scenario).has_value(), expected);
        QCOMPARE(model.rowInVllm(row), expected);
        const QString text =
            model.data(model.index(row, widgets::LadderModel::StepColumn)).toString();
        QCOMPARE(text.endsWith(QStringLiteral(" · not in vLLM")), !expected);
        QCOMPARE(text.startsWith(QString::fromStdString(st.label)), true);
    }
}

void TestLadderModel::breakdownLayerMix_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("expected");
    // Llama-3-8B, BF16, paged 16: one group of its 32 full layers; a block is 16 tokens x
    // 2 x 8 KV heads x 128 x 2 bytes x 32 layers = 2 MiB.
    QTest::addRow("Llama-3-8B") << "llama-3-8b"
                                << "32 layers: 32 full · 1 KV cache group: full_attention ×32 · "
                                   "block 16 tokens, 2 MiB";
    // Gemma-3-12B: 48 layers, every sixth full (sliding_window_pattern 6): 40 sliding, 8 full.
    // vLLM's grouping: group size = the smallest per-type count, 8; the 40 sliding layers make
    // five groups of 8 (kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size).
    // A block: 8 layers x 16 tokens x 2 x 8 KV heads x 256 x 2 bytes = 1 MiB.
    QTest::addRow("Gemma-3-12B")
        << "gemma-3-12b"
        << "48 layers: 8 full, 40 sliding · 6 KV cache groups: 5 × sliding_window ×8 (window "
           "1,024), full_attention ×8 · block 16 tokens, 1 MiB";
}

void TestLadderModel::breakdownLayerMix() {
    QFETCH(QString, model);
    QFETCH(QString, expected);
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel(model.toStdString());
    const auto view = widgets::makeLedgerView(s);
    const QString text = widgets::layerMixText(view.snapshot->ledger, core::UnitSystem::Binary);
    QCOMPARE(text, expected);
    widgets::BreakdownChart chart;
    chart.setView(view);
    QVERIFY(chart.verdict().endsWith(QLatin1Char('\n') + expected));
}

void TestLadderModel::requestsYouCanRun_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<qint64>("context");
    QTest::addColumn<int>("maxNumSeqs"); // 0: vLLM's default
    QTest::addColumn<QString>("why");    // in the current step's tooltip
    // Issue 29 item 1: vLLM refuses Gemma-3-27B at 128K on one H100 (its check wants 17.98 GiB
    // of KV, 11.11 GiB are left) though the memory holds one request by the ledger's count: the
    // ladder says 0, as the headline does, and the tooltip gives the 1.
    QTest::addRow("refused") << "gemma-3-27b" << qint64(131072) << 0
                             << "0: vLLM refuses to start. Of this context, memory holds 1";
    // Item 2: --max-num-seqs 16 runs 16 Llama-3-8B requests of 8K while the memory holds 56
    // (the smaller batch leaves a smaller reserve: 56.35 GiB for KV, 52.36 at the default).
    QTest::addRow("max_num_seqs caps")
        << "llama-3-8b" << qint64(8192) << 16 << "16: max_num_seqs caps it; memory holds 56";
    QTest::addRow("memory holds fewer")
        << "llama-3-8b" << qint64(8192) << 0 << "52 requests run at once; memory holds 52";
}

void TestLadderModel::requestsYouCanRun() {
    QFETCH(QString, model);
    QFETCH(qint64, context);
    QFETCH(int, maxNumSeqs);
    QFETCH(QString, why);
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel(model.toStdString());
    s.hardware.gpu = *io::findGpu("h100-80gb");
    s.workload.context = context;
    s.engine.maxNumSeqs = maxNumSeqs;
    widgets::LadderModel m;
    m.setView(widgets::makeLedgerView(s));
    const auto ladder = core::computeLadder(s);
    QCOMPARE(m.rowCount(), int(ladder.size()));
    const core::LedgerResult head = core::computeLedger(s);
    for (int row = 0; row < m.rowCount(); ++row) {
        const core::LedgerResult& r = ladder[std::size_t(row)].result;
        const QModelIndex cell = m.index(row, widgets::LadderModel::RequestsColumn);
        QCOMPARE(cell.data(widgets::LadderModel::ExactValueRole).toLongLong(), r.requestsYouCanRun);
        QVERIFY(r.requestsYouCanRun <= r.maxRequestsAtContext);
    }
    // The current step is the headline's figure, and its tooltip says why it is what it is.
    const QModelIndex current = m.index(m.rowCount() - 1, widgets::LadderModel::RequestsColumn);
    QCOMPARE(current.data(widgets::LadderModel::ExactValueRole).toLongLong(),
             head.requestsYouCanRun);
    const QString tip = current.data(Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(why), qPrintable(tip));
}

// The ladder's CachedTextDelegate draws a cell as QStyledItemDelegate does: the same text in
// the same place (within a pixel: QStaticText and QTextLayout round the baseline apart) and
// colour, and lays each text out once, however often the cell repaints.
namespace {
// One cell painted by `delegate` on an image of the view's base colour.
QImage paintCell(const QTableView& view, const QStyledItemDelegate& delegate,
                 const QModelIndex& index, QSize size, bool selected) {
    QImage img(size, QImage::Format_ARGB32_Premultiplied);
    img.fill(view.palette().color(QPalette::Base));
    QStyleOptionViewItem opt;
    opt.initFrom(&view);
    opt.widget = &view;
    opt.rect = QRect(QPoint(0, 0), size);
    opt.state |= QStyle::State_Enabled | QStyle::State_Active;
    if (selected)
        opt.state |= QStyle::State_Selected;
    QPainter p(&img);
    delegate.paint(&p, opt, index);
    return img;
}
// The pixels that differ from `blank` (the cell without its text) by more than a faint
// anti-aliasing edge: the text's ink, as a bounding box, and the colour at its darkest (or
// lightest, on a selection) pixel.
QRect inkBox(const QImage& img, const QImage& blank) {
    QRect box;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) {
            const QColor a = img.pixelColor(x, y), b = blank.pixelColor(x, y);
            if (std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) +
                    std::abs(a.blue() - b.blue()) >
                120)
                box |= QRect(x, y, 1, 1);
        }
    return box;
}
} // namespace

void TestLadderModel::cachedCellsDrawAsStyled_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("alignment");
    QTest::addColumn<bool>("bold");
    QTest::addColumn<bool>("selected");
    QTest::addColumn<bool>("greyed");
    QTest::addColumn<int>("width");
    const int left = Qt::AlignLeft | Qt::AlignVCenter;
    const int right = Qt::AlignRight | Qt::AlignVCenter;
    QTest::addRow("step, left") << "+GQA-8 (native)" << left << false << false << false << 240;
    QTest::addRow("figure, right") << "512 MiB" << right << false << false << false << 160;
    QTest::addRow("current row, bold") << "26.8 @104" << right << true << false << false << 160;
    QTest::addRow("selected") << "4.00x less" << right << false << true << false << 160;
    QTest::addRow("step not applied, greyed")
        << "+quantization (off)" << left << false << false << true << 240;
    QTest::addRow("too wide: elided")
        << "Baseline: MHA-32 BF16 contiguous" << left << false << false << false << 90;
}

void TestLadderModel::cachedCellsDrawAsStyled() {
    QFETCH(QString, text);
    QFETCH(int, alignment);
    QFETCH(bool, bold);
    QFETCH(bool, selected);
    QFETCH(bool, greyed);
    QFETCH(int, width);
    QStandardItemModel model(2, 1);
    QTableView view;
    view.setModel(&model);
    view.setWordWrap(false);
    view.setTextElideMode(Qt::ElideRight);
    auto* item = new QStandardItem(text);
    item->setTextAlignment(Qt::Alignment(alignment));
    if (bold) {
        QFont f = view.font();
        f.setBold(true);
        item->setFont(f);
    }
    if (greyed)
        item->setForeground(view.palette().color(QPalette::Disabled, QPalette::Text));
    model.setItem(0, 0, item);
    model.setItem(1, 0, new QStandardItem(QString()));
    const QSize size(width, view.fontMetrics().height() + 8);
    widgets::CachedTextDelegate delegate;
    QStyledItemDelegate styled;
    const QModelIndex cell = model.index(0, 0);
    const QImage blank = paintCell(view, styled, model.index(1, 0), size, selected);
    const QImage ours = paintCell(view, delegate, cell, size, selected);
    const QImage theirs = paintCell(view, styled, cell, size, selected);
    const QRect a = inkBox(ours, blank), b = inkBox(theirs, blank);
    QVERIFY2(!b.isEmpty(), "the styled delegate drew no text");
    QVERIFY2(std::abs(a.left() - b.left()) <= 1 && std::abs(a.right() - b.right()) <= 1 &&
                 std::abs(a.top() - b.top()) <= 1 && std::abs(a.bottom() - b.bottom()) <= 1,
             qPrintable(QStringLiteral("ink at %1,%2 %3x%4; QStyledItemDelegate's at %5,%6 %7x%8")
                            .arg(a.x())
                            .arg(a.y())
                            .arg(a.width())
                            .arg(a.height())
                            .arg(b.x())
                            .arg(b.y())
                            .arg(b.width())
                            .arg(b.height())));
    // The text's colour: the pixel farthest from the background is the same in both.
    auto extreme = [&](const QImage& img, const QRect& box) {
        QColor best;
        int most = -1;
        for (int y = box.top(); y <= box.bottom(); ++y)
            for (int x = box.left(); x <= box.right(); ++x) {
                const QColor c = img.pixelColor(x, y), bg = blank.pixelColor(x, y);
                const int d = std::abs(c.red() - bg.red()) + std::abs(c.green() - bg.green()) +
                              std::abs(c.blue() - bg.blue());
                if (d > most) {
                    most = d;
                    best = c;
                }
            }
        return best;
    };
    const QColor ca = extreme(ours, a), cb = extreme(theirs, b);
    QVERIFY2(std::abs(ca.red() - cb.red()) + std::abs(ca.green() - cb.green()) +
                     std::abs(ca.blue() - cb.blue()) <=
                 24,
             qPrintable(ca.name() + " vs " + cb.name()));
    // Laid out once: a second paint of the same cell reuses it (a text too wide for its cell
    // is measured once too, then elided by QStyledItemDelegate).
    paintCell(view, delegate, cell, size, selected);
    QCOMPARE(delegate.layouts(), 1);
    QCOMPARE(delegate.cachedTexts(), 1);
}

QTEST_MAIN(TestLadderModel)
#include "tst_ladder_model.moc"

void TestLadderModel::hybridExplained_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("gpu");
    QTest::addColumn<qint64>("context");
    QTest::addColumn<bool>("fp8");
    QTest::addColumn<bool>("hybrid");
    QTest::addColumn<bool>("pagingLowers");
    // Issue 29 item 3: "+paging" takes Gemma-3-27B FP8 at 128K from 2.14x to 1.24x, and
    // gpt-oss-120b on an H200 from 13.66x to 12.14x; a dense model has nothing to explain.
    QTest::addRow("gemma-3-27b fp8 128K") << "gemma-3-27b"
                                          << "h100-80gb" << qint64(131072) << true << true << true;
    QTest::addRow("gpt-oss-120b h200") << "gpt-oss-120b"
                                       << "h200" << qint64(131072) << false << true << true;
    QTest::addRow("llama-3-8b (dense)") << "llama-3-8b"
                                        << "h100-80gb" << qint64(8192) << false << false << false;
}

void TestLadderModel::hybridExplained() {
    QFETCH(QString, model);
    QFETCH(QString, gpu);
    QFETCH(qint64, context);
    QFETCH(bool, fp8);
    QFETCH(bool, hybrid);
    QFETCH(bool, pagingLowers);
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel(model.toStdString());
    s.hardware.gpu = *io::findGpu(gpu.toStdString());
    s.workload.context = context;
    s.workload.maxModelLen = context;
    s.levers.quant.enabled = fp8;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Fp8E4M3);
    const core::LedgerResult r = core::computeLedger(s);
    QVERIFY2(r.error.empty(), r.error.c_str());
    const auto ladder = core::computeLadder(s);
    const auto notes = core::hybridLadderNotes(s, r, ladder);
    QCOMPARE(!notes.empty(), hybrid);
    // Where paging lowers vLLM's concurrency, the last note says why, with both figures.
    const auto& paging = ladder[static_cast<std::size_t>(core::LadderStepId::Paging)];
    const auto& before = ladder[static_cast<std::size_t>(core::LadderStepId::Paging) - 1];
    if (hybrid) // (a dense model's paging may round a little off too; nothing to explain)
        QCOMPARE(paging.result.maxConcurrency < before.result.maxConcurrency, pagingLowers);
    widgets::LadderModel m;
    m.setView(widgets::makeLedgerView(s));
    const int pagingRow = int(core::LadderStepId::Paging);
    const QString stepTip =
        m.data(m.index(pagingRow, widgets::LadderModel::StepColumn), Qt::ToolTipRole).toString();
    const QString bytesTip =
        m.data(m.index(pagingRow, widgets::LadderModel::BytesPerRequestColumn), Qt::ToolTipRole)
            .toString();
    QCOMPARE(stepTip.contains(QStringLiteral("sliding window")), hybrid);
    QCOMPARE(bytesTip.contains(QStringLiteral("is not what a request holds")), hybrid);
    QCOMPARE(stepTip.contains(QStringLiteral("SlidingWindowSpec.max_memory_usage_bytes")), hybrid);
    QCOMPARE(stepTip.contains(QStringLiteral("lowers vLLM's maximum concurrency")), pagingLowers);
    if (!hybrid)
        return;
    // The figures in the text are the ledger's: KV per token x context and the per-request
    // bytes (per GPU), which differ because the windowed layers hold less than the context.
    const QString first = QString::fromStdString(notes.front());
    QVERIFY(r.kvBytesPerTokenPerGpu * r.contextTokens > r.kvBytesPerRequestPerGpu);
    QVERIFY2(first.contains(QString::fromStdString(
                 core::formatBytes(r.kvBytesPerRequestPerGpu, core::UnitSystem::Binary))),
             qPrintable(first));
    if (pagingLowers) {
        const QString why = QString::fromStdString(notes.back());
        QVERIFY2(why.contains(QString::number(before.result.maxConcurrency, 'f', 2) + "x to " +
                              QString::number(paging.result.maxConcurrency, 'f', 2) + "x"),
                 qPrintable(why));
    }
}
