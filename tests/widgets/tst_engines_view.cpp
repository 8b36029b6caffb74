// Issue 31 in the window: the engine selector drives the document (the status line is that
// engine's own figure), the KV formats an engine lacks are greyed from core's list, the Engines
// tab's cells are each engine's own answer per ladder step, the scenario file carries the
// engine, and the engines chart exports headlessly at the size asked.

#include "tests/widgets/test_helpers.h"

#include "app/main_window.h"
#include "widgets/charts/breakdown_chart.h"
#include "widgets/charts/chart_factory.h"
#include "widgets/charts/curve_chart.h"
#include "widgets/charts/engines_view.h"
#include "widgets/charts/ladder_model.h"
#include "widgets/export/report.h"
#include "widgets/scenario/scenario_panel.h"

#include "core/engines.h"
#include "core/io/catalog.h"
#include "core/io/scenario_file.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QImage>
#include <QLabel>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using namespace kvl;

namespace {

// Llama-3.1-8B on one H100 at 32K, no prefix, vLLM: the first README row.
core::Scenario llama8bAt32k() {
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel("llama-3.1-8b");
    s.hardware.gpu = *io::findGpu("h100-80gb");
    s.workload.context = 32768;
    s.levers.prefix.enabled = false;
    return s;
}

template <class T> T* child(QWidget* w, const char* name) {
    return w->findChild<T*>(QLatin1String(name));
}

} // namespace

class TestEnginesView : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup();
    void selectorDrivesTheDocument_data();
    void selectorDrivesTheDocument();
    void greyedFormatsAreCores_data();
    void greyedFormatsAreCores();
    void llamacppTypesFollowTheLever();
    void sideBySideCells_data();
    void sideBySideCells();
    void scenarioFileCarriesTheEngine();
    void unknownEngineInAFile();
    void reportHasTheEnginesPage();
    void exportEnginesChart_data();
    void exportEnginesChart();

private:
    std::unique_ptr<app::MainWindow> m_window;
};

void TestEnginesView::init() {
    app::MainWindow::Options o;
    o.useSettings = false;
    o.showDialogs = false;
    m_window = std::make_unique<app::MainWindow>(o);
    m_window->setScenario(llama8bAt32k());
}

void TestEnginesView::cleanup() {
    m_window.reset();
}

void TestEnginesView::selectorDrivesTheDocument_data() {
    QTest::addColumn<int>("engine");
    QTest::addColumn<QString>("name");
    QTest::addColumn<qint64>("requests"); // `kvledger ledger --engine E --model llama-3.1-8b
                                          //  --context 32K --prefix-tokens 0`
    QTest::addColumn<QString>("command");
    QTest::addRow("sglang") << int(core::Engine::Sglang) << "SGLang" << qint64(12)
                            << "python -m sglang.launch_server";
    QTest::addRow("trtllm") << int(core::Engine::Trtllm) << "TensorRT-LLM" << qint64(13)
                            << "trtllm-serve";
    QTest::addRow("llamacpp") << int(core::Engine::Llamacpp) << "llama.cpp" << qint64(1)
                              << "llama-server";
}

void TestEnginesView::selectorDrivesTheDocument() {
    QFETCH(int, engine);
    QFETCH(QString, name);
    QFETCH(qint64, requests);
    QFETCH(QString, command);
    app::MainWindow* w = m_window.get();
    QVERIFY(test::selectComboData(child<QComboBox>(w, "engineCombo"), engine));
    QCOMPARE(w->document()->scenario().engine.kind, core::Engine(engine));
    QVERIFY(w->snapshot().engine.has_value());
    // The headline is core's figure for that engine, and the number the CLI prints.
    const core::EngineResult e = core::computeEngine(w->scenario());
    QCOMPARE(w->snapshot().engine->requestsAtContext, e.requestsAtContext);
    QCOMPARE(e.requestsAtContext, requests);
    const QString summary = w->summaryText();
    QVERIFY2(summary.contains(name) &&
                 summary.contains(QStringLiteral("| %1 request").arg(requests)),
             qPrintable(summary));
    QVERIFY2(w->vllmCommandText().startsWith(command), qPrintable(w->vllmCommandText()));
    QCOMPARE(w->vllmCommandText(), QString::fromStdString(e.command));
    // The banner says the curves are vLLM's, not this engine's.
    QVERIFY2(w->warningText().contains(QStringLiteral("vLLM's accounting")),
             qPrintable(w->warningText()));
    // Only that engine's flags show; vLLM's version selector hides.
    QCOMPARE(child<QWidget>(w, "sglangOptions")->isVisibleTo(w->panel()),
             engine == int(core::Engine::Sglang));
    QCOMPARE(child<QWidget>(w, "trtllmOptions")->isVisibleTo(w->panel()),
             engine == int(core::Engine::Trtllm));
    QCOMPARE(child<QWidget>(w, "llamacppOptions")->isVisibleTo(w->panel()),
             engine == int(core::Engine::Llamacpp));
    QVERIFY(!child<QWidget>(w, "vllmVersionCombo")->isVisibleTo(w->panel()));
    // Back to vLLM: its own line and command again.
    QVERIFY(test::selectComboData(child<QComboBox>(w, "engineCombo"), int(core::Engine::Vllm)));
    QVERIFY(!w->snapshot().engine.has_value());
    QVERIFY(w->vllmCommandText().startsWith(QStringLiteral("vllm serve")));
    QVERIFY(child<QWidget>(w, "vllmVersionCombo")->isVisibleTo(w->panel()));
}

void TestEnginesView::greyedFormatsAreCores_data() {
    QTest::addColumn<int>("engine");
    for (core::Engine e : core::allEngines())
        QTest::addRow("%s", core::engineName(e).data()) << int(e);
}

void TestEnginesView::greyedFormatsAreCores() {
    QFETCH(int, engine);
    const auto kind = core::Engine(engine);
    app::MainWindow* w = m_window.get();
    QVERIFY(test::selectComboData(child<QComboBox>(w, "engineCombo"), engine));
    auto* combo = child<QComboBox>(w, "kvDtypeCombo");
    auto* model = qobject_cast<QStandardItemModel*>(combo->model());
    QVERIFY(model);
    QCOMPARE(combo->count(), int(core::allDtypes().size()));
    int greyed = 0;
    for (int i = 0; i < combo->count(); ++i) {
        const auto d = core::KvDtype(combo->itemData(i).toInt());
        const bool offered = core::engineOffersKvDtype(kind, d);
        // vLLM keeps the formats it lacks as what-ifs; the others grey them.
        QCOMPARE(model->item(i)->isEnabled(), kind == core::Engine::Vllm || offered);
        if (!offered && kind != core::Engine::Vllm) {
            ++greyed;
            const QString tip = model->item(i)->toolTip();
            QVERIFY2(tip.contains(QString::fromUtf8(core::engineDisplayName(kind).data())) &&
                         tip.contains(QString::fromUtf8(core::dtypeName(d).data())),
                     qPrintable(tip));
        }
    }
    QCOMPARE(greyed, kind == core::Engine::Vllm
                         ? 0
                         : int(core::allDtypes().size() - core::offeredKvDtypes(kind).size()));
}

void TestEnginesView::llamacppTypesFollowTheLever() {
    app::MainWindow* w = m_window.get();
    QVERIFY(test::selectComboData(child<QComboBox>(w, "engineCombo"), int(core::Engine::Llamacpp)));
    test::setGroupChecked(child<QGroupBox>(w, "quantGroup"), true);
    QVERIFY(test::selectComboData(child<QComboBox>(w, "kvDtypeCombo"), int(core::KvDtype::Int8)));
    QCOMPARE(w->scenario().engine.llamacpp.typeK, core::GgmlKvType::Q8_0);
    QCOMPARE(w->scenario().engine.llamacpp.typeV, core::GgmlKvType::Q8_0);
    QCOMPARE(child<QComboBox>(w, "llamacppTypeKCombo")->currentData().toInt(),
             int(core::GgmlKvType::Q8_0));
    QVERIFY(!child<QComboBox>(w, "llamacppTypeKCombo")->isEnabled());
    QVERIFY(w->vllmCommandText().contains(QStringLiteral("-ctk q8_0")));
    // 32 layers x (K + V) x 8 heads x 128 values in q8_0 (34 bytes per 32).
    QCOMPARE(w->snapshot().engine->kvBytesPerTokenPerGpu, qint64(69632));
}

void TestEnginesView::sideBySideCells_data() {
    QTest::addColumn<bool>("int8");
    QTest::addRow("16-bit") << false;
    QTest::addRow("INT8 lever") << true;
}

void TestEnginesView::sideBySideCells() {
    QFETCH(bool, int8);
    app::MainWindow* w = m_window.get();
    core::Scenario s = llama8bAt32k();
    if (int8) {
        s.levers.quant.enabled = true;
        s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int8);
    }
    w->setScenario(s);
    w->tabs()->setCurrentWidget(w->enginesPanel());
    const widgets::EnginesModel* m = w->enginesPanel()->model();
    QCOMPARE(m->rowCount(), 5);
    const auto engines = core::allEngines();
    QCOMPARE(m->columnCount(), 1 + int(engines.size()));
    const auto ladder = core::computeLadder(w->scenario());
    for (int r = 0; r < m->rowCount(); ++r) {
        const core::Scenario step = ladder[std::size_t(r)].scenario;
        for (std::size_t e = 0; e < engines.size(); ++e) {
            const QModelIndex i = m->index(r, widgets::EnginesModel::FirstEngineColumn + int(e));
            const qint64 cell = m->data(i, widgets::EnginesModel::ExactValueRole).toLongLong();
            if (engines[e] == core::Engine::Vllm) {
                QCOMPARE(cell, core::computeLedger(step).requestsYouCanRun);
                continue;
            }
            const core::EngineResult want = core::computeEngineAs(step, engines[e]);
            QCOMPARE(m->data(i, widgets::EnginesModel::OfferedRole).toBool(), want.formatOffered);
            if (!want.formatOffered) {
                QCOMPARE(cell, qint64(-1));
                QCOMPARE(m->data(i).toString(), QStringLiteral("not offered"));
            } else {
                QCOMPARE(cell, want.error.empty() ? want.requestsAtContext : 0);
            }
        }
    }
    // The scenario's own row, as `kvledger ledger --engine E` prints it: vLLM, SGLang,
    // TensorRT-LLM, llama.cpp (-np 1: one sequence); SGLang has no INT8 cache.
    auto last = [&](int e) {
        return m
            ->data(m->index(4, widgets::EnginesModel::FirstEngineColumn + e),
                   widgets::EnginesModel::ExactValueRole)
            .toLongLong();
    };
    if (!int8) {
        QCOMPARE(last(0), qint64(13));
        QCOMPARE(last(1), qint64(12));
        QCOMPARE(last(2), qint64(13));
    } else {
        QCOMPARE(last(1), qint64(-1));
    }
    QCOMPARE(last(3), qint64(1));
    // The chart draws a "not offered" mark for each such cell, never a bar of 0.
    int notOffered = 0;
    for (int r = 0; r < m->rowCount(); ++r)
        for (int c = 1; c < m->columnCount(); ++c)
            notOffered +=
                m->data(m->index(r, c), widgets::EnginesModel::ExactValueRole).toLongLong() < 0;
    QVERIFY(w->enginesPanel()->chart()->notOfferedMarks() >= notOffered);
    QCOMPARE(notOffered > 0, int8);
}

void TestEnginesView::scenarioFileCarriesTheEngine() {
    app::MainWindow* w = m_window.get();
    core::Scenario s = llama8bAt32k();
    s.engine.kind = core::Engine::Trtllm;
    s.engine.trtllm.tokensPerBlock = 64;
    s.engine.trtllm.freeGpuMemoryFraction = 0.85;
    s.engine.sglang.maxTotalTokens = 100000;
    s.engine.llamacpp.nParallel = 4;
    s.engine.llamacpp.kvUnified = true;
    w->setScenario(s);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("e.kvl.json"));
    QVERIFY2(w->saveScenarioFile(path), qPrintable(w->lastError()));
    const auto back = app::MainWindow::loadScenarioFile(path);
    QVERIFY(back);
    QVERIFY(back.value().engine == w->scenario().engine);
    QCOMPARE(back.value().engine.kind, core::Engine::Trtllm);
    // Opened, the panel shows it.
    w->setScenario(llama8bAt32k());
    QVERIFY(w->openScenarioFile(path));
    QCOMPARE(child<QComboBox>(w, "engineCombo")->currentData().toInt(), int(core::Engine::Trtllm));
    QCOMPARE(child<QSpinBox>(w, "trtllmTokensPerBlockSpin")->value(), 64);
    QCOMPARE(w->snapshot().engine->engine, core::Engine::Trtllm);
}

void TestEnginesView::unknownEngineInAFile() {
    core::Scenario s = llama8bAt32k();
    s.engine.kind = core::Engine::Sglang;
    std::string json = io::scenarioToJson(s);
    const auto at = json.find("\"sglang\",");
    QVERIFY(at != std::string::npos);
    json.replace(at, 9, "\"mlc\",");
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("bad.kvl.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(json));
    f.close();
    const auto r = app::MainWindow::loadScenarioFile(path);
    QVERIFY(!r);
    const QString msg = QString::fromStdString(r.error().message);
    QVERIFY2(msg.contains(QStringLiteral("bad.kvl.json")) &&
                 msg.contains(QStringLiteral("engine.name")) &&
                 msg.contains(QStringLiteral("mlc")) && !msg.contains(QLatin1Char('\n')),
             qPrintable(msg));
}

void TestEnginesView::reportHasTheEnginesPage() {
    // An INT8 scenario on SGLang: the report's page "Engines side by side" draws the engines
    // chart and its table marks SGLang's INT8 cells "not offered"; the command section is
    // SGLang's.
    core::Scenario s = llama8bAt32k();
    s.engine.kind = core::Engine::Sglang;
    s.levers.quant.enabled = true;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int8);
    const widgets::LedgerView view = widgets::makeLedgerView(s);
    auto make = [](const char* name) {
        return std::unique_ptr<widgets::ChartWidget>(
            widgets::createChart(*widgets::findChartSpec(QString::fromLatin1(name))));
    };
    auto memory = make("memory");
    auto concurrency = make("concurrency");
    auto breakdown = make("breakdown");
    auto engines = make("engines");
    static_cast<widgets::CurveChart*>(memory.get())->setView(view);
    static_cast<widgets::CurveChart*>(concurrency.get())->setView(view);
    static_cast<widgets::BreakdownChart*>(breakdown.get())->setView(view);
    auto* chart = static_cast<widgets::EnginesChart*>(engines.get());
    chart->setView(view);
    widgets::EnginesModel model;
    model.setComparison(chart->comparison());
    widgets::LadderModel ladder;
    ladder.setView(view);
    widgets::ReportInputs in;
    in.snapshot = view.snapshot.get();
    in.memoryChart = memory.get();
    in.concurrencyChart = concurrency.get();
    in.breakdownChart = breakdown.get();
    in.ladder = &ladder;
    in.enginesChart = chart;
    in.engines = &model;
    QTemporaryDir dir;
    widgets::ReportOutline outline;
    QString error;
    QVERIFY2(
        widgets::writeReviewReport(dir.filePath(QStringLiteral("r.pdf")), in, &error, &outline),
        qPrintable(error));
    QVERIFY2(outline.sections.contains(QStringLiteral("Engines side by side")),
             qPrintable(outline.sections.join(QLatin1Char(','))));
    QVERIFY(outline.sections.contains(QStringLiteral("SGLang command")));
    QVERIFY(outline.charts.contains(QStringLiteral("enginesChart")));
    QVERIFY(outline.text.contains(QStringLiteral("not offered")));
    // SGLang cannot launch an INT8 cache: the command section says why instead of a command.
    QVERIFY(outline.text.contains(QStringLiteral("SGLang has no int8 KV cache")));
}

void TestEnginesView::exportEnginesChart_data() {
    QTest::addColumn<QSize>("size");
    QTest::addRow("800x500") << QSize(800, 500);
    QTest::addRow("1366x768") << QSize(1366, 768);
}

void TestEnginesView::exportEnginesChart() {
    QFETCH(QSize, size);
    app::MainWindow* w = m_window.get();
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("engines.png"));
    QString error;
    // Never shown: the export computes the comparison itself.
    QVERIFY2(w->exportChart(QStringLiteral("engines"), path, 1.0, size, &error), qPrintable(error));
    const QImage img(path);
    QCOMPARE(img.size(), size);
    const QString csv = w->enginesPanel()->chart()->csv();
    QVERIFY(csv.startsWith(QStringLiteral("step,engine,offered")));
    QCOMPARE(csv.count(QLatin1Char('\n')), 1 + 5 * 4);
}

QTEST_MAIN(TestEnginesView)
#include "tst_engines_view.moc"
