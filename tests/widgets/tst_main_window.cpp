// The explorer window driven through its real controls: every lever changes the plotted series
// exactly as core predicts; status line, vLLM command, save/open, bad files, reference, hover.

#include "cli.h"
#include "full_disk.h"
#include "main_window.h"
#include "test_helpers.h"

#include "widgets/breakdown_chart.h"
#include "widgets/chart_widget.h"
#include "widgets/curve_chart.h"
#include "widgets/ladder_model.h"
#include "widgets/model_picker.h"
#include "widgets/scenario_panel.h"
#include "widgets/token_spin_box.h"

#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/kv_format.h"
#include "core/ledger.h"
#include "core/units.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>

#ifdef Q_OS_UNIX
#include <sys/stat.h>
#endif

using namespace kvl;
using kvl::app::MainWindow;

namespace {

std::string json(const core::Scenario& s) {
    return io::scenarioToJson(s);
}

template <class T> T* child(QWidget* w, const char* name) {
    T* c = w->findChild<T*>(QLatin1String(name));
    if (!c)
        qFatal("no child %s", name);
    return c;
}

// Compares every plotted series of a curve chart with core's sweep of `s`.
void verifyPlotted(const widgets::CurveChart* chart, const core::Scenario& s) {
    const core::SweepResult sweep = core::computeSweep(s);
    int matched = 0;
    for (int i = 0; i < chart->seriesCount(); ++i) {
        const QString name = chart->seriesName(i);
        if (name == widgets::CurveChart::referenceSeriesName())
            continue;
        const core::Curve* curve = nullptr;
        for (const auto& c : sweep.curves) {
            if ((name == widgets::CurveChart::currentSeriesName() && c.isCurrent) ||
                (!c.isCurrent && QString::fromStdString(c.label) == name))
                curve = &c;
        }
        QVERIFY2(curve, qPrintable(QStringLiteral("no core curve for series ") + name));
        const QVector<double> keys = chart->seriesKeys(i);
        const QVector<double> values = chart->seriesValues(i);
        int k = 0;
        for (std::size_t j = 0; j < sweep.contexts.size(); ++j) {
            const double expected = chart->kind() == widgets::CurveKind::Memory
                                        ? curve->bytesPerRequestPerGpu[j]
                                        : curve->maxRequests[j];
            if (chart->kind() == widgets::CurveKind::Concurrency && expected <= 0)
                continue; // not drawn on the log axis
            QVERIFY2(k < keys.size(), qPrintable(name));
            QCOMPARE(keys[k], double(sweep.contexts[j]));
            QCOMPARE(values[k], expected);
            ++k;
        }
        QCOMPARE(k, keys.size());
        ++matched;
    }
    QVERIFY(matched >= 2); // at least the baseline and the current scenario
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init();
    void cleanup();

    void leverChangesSeries_data();
    void leverChangesSeries();
    void statusLine_data();
    void statusLine();
    void vllmCommand_data();
    void vllmCommand();
    void copyVllmCommandAction();
    void scenarioRoundTrip();
    void badScenarioFile_data();
    void badScenarioFile();
    void pinnedReference();
    void hoverTooltip();
    void importConfig();
    void unitsToggle();
    void modelSearch();
    void settingsRememberLastScenario();
    void invalidInputKeepsLastScenario();
    void breakdownTooltip();
    void tokenParsing_data();
    void tokenParsing();
    void editedIsTheViewsState();
    void granularityRuleSharedWithCli_data();
    void granularityRuleSharedWithCli();
    void viewsTakeOneSignal();
    void chartsReplottedWaitsForEveryChart();
    void openSpecialFiles_data();
    void openSpecialFiles();
    void saveOnFullDisk();

private:
    std::unique_ptr<MainWindow> m_window;
    QTemporaryDir m_dir;
};

void TestMainWindow::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
}

void TestMainWindow::init() {
    MainWindow::Options o;
    o.useSettings = false;
    o.showDialogs = false;
    m_window = std::make_unique<MainWindow>(o);
    m_window->resize(1400, 900);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    QTRY_COMPARE(m_window->pendingReplots(), 0);
}

void TestMainWindow::cleanup() {
    m_window.reset();
}

using Action = std::function<void(QWidget* w)>;
using Expect = std::function<void(core::Scenario& s)>;
Q_DECLARE_METATYPE(Action)
Q_DECLARE_METATYPE(Expect)

void TestMainWindow::leverChangesSeries_data() {
    QTest::addColumn<Action>("action");
    QTest::addColumn<Expect>("expect");
    QTest::addColumn<bool>("curvesChange");
    using test::selectComboData;
    using test::setGroupChecked;
    using test::typeInto;
    auto group = [](const char* n) { return [n](QWidget* w) { return child<QGroupBox>(w, n); }; };

    QTest::addRow("attention MHA") << Action([=](QWidget* w) {
        setGroupChecked(group("attentionGroup")(w), true);
        QVERIFY(selectComboData(child<QComboBox>(w, "attentionModeCombo"),
                                int(core::AttentionMode::Mha)));
    }) << Expect([](core::Scenario& s) {
        s.levers.attention.enabled = true;
        s.levers.attention.mode = core::AttentionMode::Mha;
    }) << true;
    QTest::addRow("attention GQA-4") << Action([=](QWidget* w) {
        setGroupChecked(group("attentionGroup")(w), true);
        QVERIFY(selectComboData(child<QComboBox>(w, "attentionModeCombo"),
                                int(core::AttentionMode::Gqa)));
        QVERIFY(selectComboData(child<QComboBox>(w, "gqaGroupsCombo"), 4));
    }) << Expect([](core::Scenario& s) {
        s.levers.attention.enabled = true;
        s.levers.attention.mode = core::AttentionMode::Gqa;
        s.levers.attention.gqaKvHeads = 4;
    }) << true;
    QTest::addRow("attention MQA") << Action([=](QWidget* w) {
        setGroupChecked(group("attentionGroup")(w), true);
        QVERIFY(selectComboData(child<QComboBox>(w, "attentionModeCombo"),
                                int(core::AttentionMode::Mqa)));
    }) << Expect([](core::Scenario& s) {
        s.levers.attention.enabled = true;
        s.levers.attention.mode = core::AttentionMode::Mqa;
    }) << true;
    // Turning quantization on gives FP8, the format vLLM runs (--kv-cache-dtype fp8).
    QTest::addRow("quantization on: fp8") << Action([=](QWidget* w) {
        setGroupChecked(group("quantGroup")(w), true);
    }) << Expect([](core::Scenario& s) {
        s.levers.quant.enabled = true;
        s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Fp8E4M3);
    }) << true;
    QTest::addRow("kv int8") << Action([=](QWidget* w) {
        setGroupChecked(group("quantGroup")(w), true);
        QVERIFY(selectComboData(child<QComboBox>(w, "kvDtypeCombo"), int(core::KvDtype::Int8)));
    }) << Expect([](core::Scenario& s) {
        s.levers.quant.enabled = true;
        s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int8);
    }) << true;
    QTest::addRow("kv int4 group 64") << Action([=](QWidget* w) {
        setGroupChecked(group("quantGroup")(w), true);
        QVERIFY(selectComboData(child<QComboBox>(w, "kvDtypeCombo"), int(core::KvDtype::Int4)));
        typeInto(child<QSpinBox>(w, "groupSizeSpin"), QStringLiteral("64"));
    }) << Expect([](core::Scenario& s) {
        s.levers.quant.enabled = true;
        s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int4);
        s.levers.quant.format.groupSize = 64;
    }) << true;
    QTest::addRow("paging off") << Action([=](QWidget* w) {
        setGroupChecked(group("pagingGroup")(w), false);
    }) << Expect([](core::Scenario& s) { s.levers.paging.enabled = false; })
                                << true;
    QTest::addRow("block size 128") << Action([=](QWidget* w) {
        QVERIFY(selectComboData(child<QComboBox>(w, "blockSizeCombo"), 128));
    }) << Expect([](core::Scenario& s) { s.levers.paging.blockSize = 128; })
                                    << true;
    QTest::addRow("prefix off") << Action([=](QWidget* w) {
        setGroupChecked(group("prefixGroup")(w), false);
    }) << Expect([](core::Scenario& s) { s.levers.prefix.enabled = false; })
                                << true;
    QTest::addRow("prefix 8K shared by 4") << Action([=](QWidget* w) {
        typeInto(child<QSpinBox>(w, "prefixTokensSpin"), QStringLiteral("8K"));
        typeInto(child<QSpinBox>(w, "prefixRequestsSpin"), QStringLiteral("4"));
    }) << Expect([](core::Scenario& s) {
        s.levers.prefix.sharedTokens = 8192;
        s.levers.prefix.sharingRequests = 4;
    }) << true;
    QTest::addRow("context slider two octaves up") << Action([=](QWidget* w) {
        auto* slider = child<QSlider>(w, "contextSlider");
        slider->setFocus();
        QTest::keyClick(slider, Qt::Key_PageUp);
        QTest::keyClick(slider, Qt::Key_PageUp);
    }) << Expect([](core::Scenario& s) { s.workload.context = 16384; })
                                                   << true;
    QTest::addRow("context typed 200000") << Action([=](QWidget* w) {
        typeInto(child<QSpinBox>(w, "contextSpin"), QStringLiteral("200000"));
    }) << Expect([](core::Scenario& s) { s.workload.context = 200000; })
                                          << true;
    QTest::addRow("context typed 1M") << Action([=](QWidget* w) {
        typeInto(child<QSpinBox>(w, "contextSpin"), QStringLiteral("1M"));
    }) << Expect([](core::Scenario& s) { s.workload.context = 1 << 20; })
                                      << true;
    QTest::addRow("max model len 128K") << Action([=](QWidget* w) {
        typeInto(child<QSpinBox>(w, "maxModelLenSpin"), QStringLiteral("128K"));
    }) << Expect([](core::Scenario& s) { s.workload.maxModelLen = 131072; })
                                        << true;
    QTest::addRow("tensor parallel 2") << Action([=](QWidget* w) {
        typeInto(child<QSpinBox>(w, "gpuCountSpin"), QStringLiteral("2"));
    }) << Expect([](core::Scenario& s) { s.hardware.gpuCount = 2; })
                                       << true;
    QTest::addRow("memory utilization 0.8") << Action([=](QWidget* w) {
        typeInto(child<QDoubleSpinBox>(w, "memUtilSpin"), QStringLiteral("0.80"));
    }) << Expect([](core::Scenario& s) { s.hardware.memoryUtilization = 0.8; })
                                            << true;
    QTest::addRow("weights int4") << Action([=](QWidget* w) {
        QVERIFY(
            selectComboData(child<QComboBox>(w, "weightDtypeCombo"), int(core::WeightDtype::Int4)));
    }) << Expect([](core::Scenario& s) { s.hardware.weightDtype = core::WeightDtype::Int4; })
                                  << true;
    QTest::addRow("what-if 4 KV heads") << Action([=](QWidget* w) {
        typeInto(child<QSpinBox>(w, "kvHeadsSpin"), QStringLiteral("4"));
    }) << Expect([](core::Scenario& s) {
        s.model.kvHeads = 4; // the name stays: "edited" is the panel's state, not the model's
    }) << true;
    QTest::addRow("what-if 40 layers") << Action([=](QWidget* w) {
        typeInto(child<QSpinBox>(w, "layersSpin"), QStringLiteral("40"));
    }) << Expect([](core::Scenario& s) { s.model = core::withLayerCount(s.model, 40); })
                                       << true;
    if (io::builtinGpus().size() > 1) {
        const core::GpuSpec other =
            io::builtinGpus()[1].id == "h100-80gb" ? io::builtinGpus()[0] : io::builtinGpus()[1];
        QTest::addRow("gpu %s", other.id.c_str()) << Action([=](QWidget* w) {
            QVERIFY(
                selectComboData(child<QComboBox>(w, "gpuCombo"), QString::fromStdString(other.id)));
        }) << Expect([=](core::Scenario& s) { s.hardware.gpu = other; })
                                                  << true;
    }
}

void TestMainWindow::leverChangesSeries() {
    QFETCH(Action, action);
    QFETCH(Expect, expect);
    QFETCH(bool, curvesChange);
    MainWindow* w = m_window.get();
    core::Scenario expected = w->scenario();
    const QVector<double> before = w->memoryChart()->seriesValues(
        w->memoryChart()->seriesIndex(widgets::CurveChart::currentSeriesName()));
    const QVector<double> beforeConc = w->concurrencyChart()->seriesValues(
        w->concurrencyChart()->seriesIndex(widgets::CurveChart::currentSeriesName()));
    QSignalSpy spy(w, &MainWindow::recomputed);
    action(w);
    expect(expected);
    QVERIFY(spy.count() >= 1);
    QCOMPARE(QString::fromStdString(json(w->scenario())), QString::fromStdString(json(expected)));
    verifyPlotted(w->memoryChart(), expected);
    verifyPlotted(w->concurrencyChart(), expected);
    const QVector<double> after = w->memoryChart()->seriesValues(
        w->memoryChart()->seriesIndex(widgets::CurveChart::currentSeriesName()));
    const QVector<double> afterConc = w->concurrencyChart()->seriesValues(
        w->concurrencyChart()->seriesIndex(widgets::CurveChart::currentSeriesName()));
    if (curvesChange)
        QVERIFY2(before != after || beforeConc != afterConc,
                 "the plotted current curves did not move");
    // The cursor shows the exact bytes core computes at the context.
    const core::PointResult p = core::computePoint(expected, expected.workload.context);
    QVERIFY2(w->memoryChart()->cursorText().contains(
                 QString::fromStdString(core::withThousands(p.bytesPerRequestPerGpu))),
             qPrintable(w->memoryChart()->cursorText()));
    const core::LedgerResult r = core::computeLedger(expected);
    QCOMPARE(w->snapshot().ledger.maxRequestsAtContext, r.maxRequestsAtContext);
    QVERIFY(w->concurrencyChart()->cursorText().contains(
        QString::fromStdString(core::withThousands(r.maxRequestsAtContext))));
    // The breakdown shows the KV of the chosen concurrency (as many as fit).
    const auto segs = w->breakdownChart()->segments();
    QCOMPARE(segs.at(0).bytes, r.weightsBytesPerGpu);
    if (r.error.empty())
        QCOMPARE(segs.at(1).bytes, r.kvBytesAtMaxRequests);
    // The ladder table follows.
    QCOMPARE(w->ladderModel()
                 ->data(w->ladderModel()->index(4, widgets::LadderModel::BytesPerTokenColumn),
                        widgets::LadderModel::ExactValueRole)
                 .toLongLong(),
             r.kvBytesPerToken);
    QTRY_COMPARE(w->pendingReplots(), 0);
}

void TestMainWindow::statusLine_data() {
    QTest::addColumn<bool>("decimal");
    QTest::addColumn<QString>("prefix");
    QTest::addRow("first launch, GiB")
        << false
        << QStringLiteral("Llama-3-8B | GQA-8 | BF16 | paged 16 | prefix 2K -> 128 KiB/token | "
                          "512 MiB @4K | ");
    QTest::addRow("first launch, GB")
        << true
        << QStringLiteral("Llama-3-8B | GQA-8 | BF16 | paged 16 | prefix 2K -> 131.07 KB/token | "
                          "536.87 MB @4K | ");
}

void TestMainWindow::statusLine() {
    QFETCH(bool, decimal);
    QFETCH(QString, prefix);
    if (decimal)
        QTest::mouseClick(child<QToolButton>(m_window.get(), "unitsButton"), Qt::LeftButton);
    const core::LedgerResult r = core::computeLedger(app::firstLaunchScenario());
    const QString expected =
        prefix + QStringLiteral("%1 requests on H100 SXM 80GB")
                     .arg(QString::fromStdString(core::withThousands(r.maxRequestsAtContext)));
    QCOMPARE(m_window->summaryText(), expected);
    QCOMPARE(child<QLabel>(m_window.get(), "summaryLabel")->text(), expected);
}

void TestMainWindow::vllmCommand_data() {
    QTest::addColumn<Expect>("edit");
    QTest::addColumn<QStringList>("contains");
    QTest::addColumn<QStringList>("absent");
    QTest::addRow("first launch: vLLM's defaults")
        << Expect([](core::Scenario&) {})
        << QStringList{"vllm serve meta-llama/Meta-Llama-3-8B \\\n",
                       "  --kv-cache-dtype auto \\\n",
                       "  --enable-prefix-caching \\\n",
                       "  --gpu-memory-utilization 0.92 \\\n",
                       "  --max-model-len 8192 \\\n",
                       "  --tensor-parallel-size 1\n"}
        << QStringList{"not in vLLM", "--hf-overrides", "--block-size"};
    QTest::addRow("int8 per token-head is vLLM's int8_per_token_head")
        << Expect([](core::Scenario& s) {
               s.levers.quant.enabled = true;
               s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int8);
               s.levers.paging.blockSize = 16;
           })
        << QStringList{"vllm serve meta-llama/Meta-Llama-3-8B \\\n",
                       "  --kv-cache-dtype int8_per_token_head \\\n",
                       "  --block-size 16 \\\n",
                       "  --enable-prefix-caching \\\n",
                       "  --gpu-memory-utilization 0.92 \\\n",
                       "  --max-model-len 8192 \\\n",
                       "  --tensor-parallel-size 1\n"}
        << QStringList{"not in vLLM", "--hf-overrides"};
    QTest::addRow("fp8 on two GPUs within the model's length")
        << Expect([](core::Scenario& s) {
               s.levers.quant.enabled = true;
               s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Fp8E4M3);
               s.hardware.gpuCount = 2;
               s.hardware.memoryUtilization = 0.85;
               s.workload.maxModelLen = 8192;
               s.workload.context = 8192;
               s.levers.prefix.enabled = false;
           })
        << QStringList{"--kv-cache-dtype fp8", "--tensor-parallel-size 2",
                       "--gpu-memory-utilization 0.85", "--max-model-len 8192"}
        << QStringList{"# not in vLLM"};
    QTest::addRow("no paging, int4, GQA-4")
        << Expect([](core::Scenario& s) {
               s.levers.paging.enabled = false;
               s.levers.quant.enabled = true;
               s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int4);
               s.levers.attention.enabled = true;
               s.levers.attention.mode = core::AttentionMode::Gqa;
               s.levers.attention.gqaKvHeads = 4;
           })
        << QStringList{"# not in vLLM: contiguous reservation", "# not in vLLM: INT4",
                       "# not in vLLM: attention regrouping (GQA-4)"}
        << QStringList{"--block-size"};
    QTest::addRow("past the model's length: YaRN through --hf-overrides")
        << Expect([](core::Scenario& s) {
               s.workload.maxModelLen = 32768; // Llama-3-8B's config says 8192
               s.workload.context = 32768;
           })
        << QStringList{"--max-model-len 32768",
                       "--hf-overrides '{\"rope_scaling\": {\"rope_type\": \"yarn\", "
                       "\"factor\": 4, \"original_max_position_embeddings\": 8192}}'"}
        << QStringList{};
}

void TestMainWindow::vllmCommand() {
    QFETCH(Expect, edit);
    QFETCH(QStringList, contains);
    QFETCH(QStringList, absent);
    core::Scenario s = app::firstLaunchScenario();
    edit(s);
    m_window->setScenario(s);
    const QString text = m_window->vllmCommandText();
    for (const QString& c : contains)
        QVERIFY2(text.contains(c), qPrintable(QStringLiteral("missing '%1' in:\n%2").arg(c, text)));
    for (const QString& a : absent)
        QVERIFY2(!text.contains(a),
                 qPrintable(QStringLiteral("unexpected '%1' in:\n%2").arg(a, text)));
}

void TestMainWindow::copyVllmCommandAction() {
    QAction* copy = nullptr;
    for (QAction* a : m_window->findChildren<QAction*>())
        if (a->text() == QLatin1String("Copy &vLLM Command"))
            copy = a;
    QVERIFY(copy);
    QCOMPARE(copy->shortcut(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    copy->trigger();
    QCOMPARE(QGuiApplication::clipboard()->text(), m_window->vllmCommandText());
}

void TestMainWindow::scenarioRoundTrip() {
    MainWindow* w = m_window.get();
    test::setGroupChecked(child<QGroupBox>(w, "attentionGroup"), true);
    QVERIFY(test::selectComboData(child<QComboBox>(w, "attentionModeCombo"),
                                  int(core::AttentionMode::Mqa)));
    test::setGroupChecked(child<QGroupBox>(w, "quantGroup"), true);
    QVERIFY(test::selectComboData(child<QComboBox>(w, "kvDtypeCombo"), int(core::KvDtype::Int4)));
    test::typeInto(child<QSpinBox>(w, "contextSpin"), QStringLiteral("100000"));
    test::typeInto(child<QSpinBox>(w, "kvHeadsSpin"), QStringLiteral("2"));
    const std::string saved = json(w->scenario());
    const QString path = m_dir.filePath(QStringLiteral("round.kvl.json"));
    QVERIFY(w->saveScenarioFile(path));
    QVERIFY(!w->isWindowModified());
    QVERIFY(w->windowTitle().contains(QStringLiteral("round.kvl.json")));
    QCOMPARE(w->recentFiles().value(0), QFileInfo(path).absoluteFilePath());
    w->setScenario(app::firstLaunchScenario());
    QVERIFY(json(w->scenario()) != saved);
    QVERIFY(w->openScenarioFile(path));
    QCOMPARE(QString::fromStdString(json(w->scenario())), QString::fromStdString(saved));
    QCOMPARE(w->scenario().model.kvHeads, 2);
    verifyPlotted(w->memoryChart(), w->scenario());
    // The controls show the opened scenario.
    QCOMPARE(child<QSpinBox>(w, "contextSpin")->value(), 100000);
    QCOMPARE(child<QSpinBox>(w, "kvHeadsSpin")->value(), 2);
    QVERIFY(child<QGroupBox>(w, "attentionGroup")->isChecked());
}

void TestMainWindow::badScenarioFile_data() {
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("fragment");
    const QByteArray good =
        QByteArray::fromStdString(io::scenarioToJson(app::firstLaunchScenario()));
    QByteArray future = good;
    future.replace("\"kvledger_scenario\": 1", "\"kvledger_scenario\": 7");
    QByteArray wrongType = good;
    wrongType.replace("\"context\": 4096", "\"context\": \"long\"");
    QTest::addRow("not JSON") << QByteArray("{ this is not json") << QStringLiteral("line");
    QTest::addRow("empty file") << QByteArray() << QString();
    QTest::addRow("future version") << future << QStringLiteral("newer");
    QTest::addRow("wrong type") << wrongType << QStringLiteral("context");
    QTest::addRow("missing file") << QByteArray("<missing>") << QStringLiteral("Could not open");
}

void TestMainWindow::badScenarioFile() {
    QFETCH(QByteArray, content);
    QFETCH(QString, fragment);
    QVERIFY2(QByteArray::fromStdString(io::scenarioToJson(app::firstLaunchScenario()))
                     .contains("\"kvledger_scenario\": 1") ||
                 !fragment.contains(QLatin1String("newer")),
             "the version field layout changed");
    const QString path = m_dir.filePath(QStringLiteral("bad-%1.kvl.json")
                                            .arg(QString::fromLatin1(QTest::currentDataTag())
                                                     .replace(QLatin1Char(' '), QLatin1Char('-'))));
    if (content != "<missing>") {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(content);
    }
    const std::string before = json(m_window->scenario());
    QSignalSpy errors(m_window.get(), &MainWindow::errorRaised);
    QVERIFY(!m_window->openScenarioFile(path));
    QCOMPARE(errors.count(), 1);
    const QString message = errors.at(0).at(1).toString();
    QVERIFY2(message.contains(QFileInfo(path).fileName()), qPrintable(message));
    if (!fragment.isEmpty())
        QVERIFY2(message.contains(fragment, Qt::CaseInsensitive), qPrintable(message));
    QCOMPARE(m_window->lastError(), message);
    QCOMPARE(json(m_window->scenario()), before); // nothing lost
    QVERIFY(m_window->recentFiles().isEmpty());
}

void TestMainWindow::pinnedReference() {
    MainWindow* w = m_window.get();
    const core::Scenario pinned = w->scenario();
    w->pinReference();
    // First launch keeps the model's BF16; pinning it and then turning FP8 on holds more.
    test::setGroupChecked(child<QGroupBox>(w, "quantGroup"), true);
    QVERIFY(w->scenario().levers.quant.enabled);
    for (const widgets::CurveChart* chart : {w->memoryChart(), w->concurrencyChart()}) {
        const int ref = chart->seriesIndex(widgets::CurveChart::referenceSeriesName());
        QVERIFY(ref >= 0);
        QVERIFY(chart->seriesDashed(ref));
        QVERIFY(!chart->seriesDashed(chart->seriesIndex(widgets::CurveChart::currentSeriesName())));
    }
    const core::SweepResult refSweep = core::computeSweep(pinned);
    const QVector<double> refValues = w->memoryChart()->seriesValues(
        w->memoryChart()->seriesIndex(widgets::CurveChart::referenceSeriesName()));
    QCOMPARE(refValues.size(), static_cast<qsizetype>(refSweep.contexts.size()));
    for (qsizetype i = 0; i < refValues.size(); ++i)
        QCOMPARE(refValues[i],
                 refSweep.curves.back().bytesPerRequestPerGpu[static_cast<std::size_t>(i)]);
    verifyPlotted(w->memoryChart(), w->scenario());

    widgets::LadderModel* m = w->ladderModel();
    QCOMPARE(m->columnCount(), widgets::LadderModel::DeltaColumn + 1);
    const auto now = core::computeLedger(w->scenario()).maxRequestsAtContext;
    const auto then = core::computeLedger(pinned).maxRequestsAtContext;
    QCOMPARE(m->data(m->index(4, widgets::LadderModel::DeltaColumn),
                     widgets::LadderModel::ExactValueRole)
                 .toLongLong(),
             now - then);
    QVERIFY(now > then);
    QVERIFY(m->data(m->index(4, widgets::LadderModel::DeltaColumn))
                .toString()
                .startsWith(QLatin1Char('+')));
    QCOMPARE(w->breakdownChart()->segments(true).size(), std::size_t{6});

    w->clearReference();
    QCOMPARE(w->memoryChart()->seriesIndex(widgets::CurveChart::referenceSeriesName()), -1);
    QCOMPARE(m->columnCount(), int(widgets::LadderModel::DeltaColumn));
}

void TestMainWindow::hoverTooltip() {
    widgets::CurveChart* chart = m_window->memoryChart();
    QTRY_COMPARE(m_window->pendingReplots(), 0);
    const int series = chart->seriesIndex(widgets::CurveChart::currentSeriesName());
    const int point = chart->seriesKeys(series).size() / 2;
    const QPoint pos = chart->seriesPointPosition(series, point);
    QWidget* target = chart->childAt(pos);
    QVERIFY(target);
    QTest::mouseMove(target, target->mapFrom(chart, pos));
    const auto bytes = static_cast<std::int64_t>(chart->seriesValues(series)[point]);
    QTRY_VERIFY(chart->lastTooltip().contains(QStringLiteral("Current")));
    QVERIFY2(chart->lastTooltip().contains(QString::fromStdString(core::withThousands(bytes))),
             qPrintable(chart->lastTooltip()));
    QCOMPARE(chart->tooltipAt(pos), chart->lastTooltip());
    QVERIFY(chart->tooltipAt(QPoint(2, 2)).isEmpty());
}

void TestMainWindow::importConfig() {
    const QString path = m_dir.filePath(QStringLiteral("config.json"));
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(
            R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
                   "num_attention_heads": 16, "num_key_value_heads": 4, "num_hidden_layers": 20,
                   "max_position_embeddings": 4096, "torch_dtype": "bfloat16", "vocab_size": 32000,
                   "intermediate_size": 5632})");
    }
    QSignalSpy recomputed(m_window.get(), &MainWindow::recomputed);
    QVERIFY(m_window->panel()->importConfig(path));
    QVERIFY(recomputed.count() >= 1);
    const core::ModelSpec& m = m_window->scenario().model;
    QCOMPARE(m.numLayers(), 20);
    QCOMPARE(m.qHeads, 16);
    QCOMPARE(m.kvHeads, 4);
    QCOMPARE(m.headDim, 128);
    QCOMPARE(m_window->panel()->modelPicker()->currentId(), QString::fromStdString(m.id));
    verifyPlotted(m_window->memoryChart(), m_window->scenario());

    const QString bad = m_dir.filePath(QStringLiteral("bad-config.json"));
    {
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"hidden_size": 2048})");
    }
    const std::string before = json(m_window->scenario());
    QSignalSpy errors(m_window.get(), &MainWindow::errorRaised);
    QVERIFY(!m_window->panel()->importConfig(bad));
    QCOMPARE(errors.count(), 1);
    QVERIFY(!errors.at(0).at(1).toString().isEmpty());
    QCOMPARE(json(m_window->scenario()), before);
}

void TestMainWindow::unitsToggle() {
    QVERIFY(m_window->summaryText().contains(QStringLiteral("KiB/token")));
    QTest::mouseClick(child<QToolButton>(m_window.get(), "unitsButton"), Qt::LeftButton);
    QCOMPARE(m_window->units(), core::UnitSystem::Decimal);
    QVERIFY(m_window->summaryText().contains(QStringLiteral("KB/token")));
    QVERIFY(m_window->memoryChart()->cursorText().contains(QStringLiteral(" MB")));
    QTest::mouseClick(child<QToolButton>(m_window.get(), "unitsButton"), Qt::LeftButton);
    QCOMPARE(m_window->units(), core::UnitSystem::Binary);
}

void TestMainWindow::modelSearch() {
    const auto& models = io::builtinModels();
    const core::ModelSpec* target = nullptr;
    for (const auto& m : models)
        if (m.id != "llama-3-8b" && m.kvHeads != 8)
            target = &m;
    if (!target)
        QSKIP("the catalog has no second model with a different KV head count");
    auto* search = m_window->panel()->modelPicker()->searchField();
    search->setFocus();
    QTest::keyClicks(search, QString::fromStdString(target->name));
    QTest::keyClick(search, Qt::Key_Return);
    QCOMPARE(m_window->scenario().model.id, target->id);
    verifyPlotted(m_window->memoryChart(), m_window->scenario());
    verifyPlotted(m_window->concurrencyChart(), m_window->scenario());
}

void TestMainWindow::settingsRememberLastScenario() {
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope,
                       m_dir.filePath(QStringLiteral("settings")));
    QSettings().clear();
    core::Scenario s = app::firstLaunchScenario();
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Fp8E5M2);
    s.workload.context = 12345;
    {
        MainWindow first; // with settings: first launch shows the default
        QCOMPARE(json(first.scenario()), json(app::firstLaunchScenario()));
        first.show();
        QVERIFY(QTest::qWaitForWindowExposed(&first));
        first.setScenario(s);
        first.setUnits(core::UnitSystem::Decimal);
        first.close(); // saves window state, units and the last scenario
    }
    MainWindow second;
    QCOMPARE(QString::fromStdString(json(second.scenario())), QString::fromStdString(json(s)));
    QCOMPARE(second.units(), core::UnitSystem::Decimal);
    QSettings().clear();
}

void TestMainWindow::invalidInputKeepsLastScenario() {
    MainWindow* w = m_window.get();
    test::setGroupChecked(child<QGroupBox>(w, "quantGroup"), true);
    QVERIFY(test::selectComboData(child<QComboBox>(w, "kvDtypeCombo"), int(core::KvDtype::Int4)));
    const std::string valid = json(w->scenario());
    core::KvFormat bad = w->scenario().levers.quant.format;
    bad.groupSize = 100;
    QVERIFY2(core::validate(bad, 128).has_value(), "core accepts G=100 for head_dim 128");
    const auto plotted = w->memoryChart()->seriesValues(
        w->memoryChart()->seriesIndex(widgets::CurveChart::currentSeriesName()));
    QSignalSpy spy(w, &MainWindow::recomputed);
    test::typeInto(child<QSpinBox>(w, "groupSizeSpin"), QStringLiteral("100"));
    QCOMPARE(spy.count(), 0);
    QVERIFY(!w->panel()->validationMessage().isEmpty());
    QVERIFY(child<QLabel>(w, "problemLabel")->isVisible());
    QCOMPARE(json(w->snapshot().scenario), valid); // the charts keep the last valid scenario
    QCOMPARE(w->memoryChart()->seriesValues(
                 w->memoryChart()->seriesIndex(widgets::CurveChart::currentSeriesName())),
             plotted);
    test::typeInto(child<QSpinBox>(w, "groupSizeSpin"), QStringLiteral("64"));
    QCOMPARE(spy.count(), 1);
    QVERIFY(w->panel()->validationMessage().isEmpty());
    QVERIFY(!child<QLabel>(w, "problemLabel")->isVisible());
    QCOMPARE(w->scenario().levers.quant.format.groupSize, 64);
}

void TestMainWindow::breakdownTooltip() {
    widgets::BreakdownChart* chart = m_window->breakdownChart();
    QTRY_COMPARE(m_window->pendingReplots(), 0);
    // Sweep across the bar's middle: every segment with bytes shows up once.
    QStringList seen;
    const int y = chart->height() / 2;
    for (int x = 0; x < chart->width(); x += 2) {
        const QString tip = chart->tooltipAt(QPoint(x, y));
        const QString first = tip.section(QLatin1Char('\n'), 0, 0);
        if (!tip.isEmpty() && !seen.contains(first))
            seen << first;
    }
    QVERIFY2(seen.size() >= 4, qPrintable(seen.join(QLatin1Char('|'))));
    QVERIFY(seen.first().startsWith(QStringLiteral("Weights")));
    const auto r = core::computeLedger(m_window->scenario());
    bool kvFound = false;
    for (int x = 0; x < chart->width() && !kvFound; x += 2) {
        const QString tip = chart->tooltipAt(QPoint(x, y));
        kvFound = tip.startsWith(QStringLiteral("KV cache")) &&
                  tip.contains(QString::fromStdString(core::withThousands(r.kvBytesAtMaxRequests)));
    }
    QVERIFY(kvFound);
}

void TestMainWindow::tokenParsing_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<qlonglong>("tokens");
    QTest::addRow("plain") << QStringLiteral("8000") << 8000LL;
    QTest::addRow("thousands") << QStringLiteral("131,072") << 131072LL;
    QTest::addRow("32K") << QStringLiteral("32K") << 32768LL;
    QTest::addRow("1.5k") << QStringLiteral("1.5k") << 1536LL;
    QTest::addRow("1M") << QStringLiteral("1M") << 1048576LL;
    QTest::addRow("garbage") << QStringLiteral("lots") << -1LL;
    QTest::addRow("fraction of a token") << QStringLiteral("1.0001K") << -1LL;
}

void TestMainWindow::tokenParsing() {
    QFETCH(QString, text);
    QFETCH(qlonglong, tokens);
    const auto v = widgets::parseTokens(text);
    QCOMPARE(v ? qlonglong(*v) : -1LL, tokens);
}

void TestMainWindow::editedIsTheViewsState() {
    MainWindow* w = m_window.get();
    const std::string name = w->scenario().model.name;
    QVERIFY(!w->panel()->modelEdited());
    test::typeInto(child<QSpinBox>(w, "kvHeadsSpin"), QStringLiteral("4"));
    QCOMPARE(w->scenario().model.kvHeads, 4);
    // The panel says "edited"; the data keeps the model's name.
    QVERIFY(w->panel()->modelEdited());
    QVERIFY2(child<QLabel>(w, "modelInfo")->text().contains(QStringLiteral("(edited)")),
             qPrintable(child<QLabel>(w, "modelInfo")->text()));
    QVERIFY(child<QPushButton>(w, "resetModelButton")->isEnabled());
    QCOMPARE(w->scenario().model.name, name);
    QCOMPARE(w->snapshot().scenario.model.name, name);
    QVERIFY(!QString::fromStdString(json(w->scenario())).contains(QStringLiteral("edited")));
    QVERIFY(!w->summaryText().contains(QStringLiteral("edited")));
    const QString path = m_dir.filePath(QStringLiteral("edited.kvl.json"));
    QVERIFY(w->saveScenarioFile(path));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(!f.readAll().contains("edited"));
    // Opened again, the panel still knows the geometry differs from the catalog entry.
    w->setScenario(app::firstLaunchScenario());
    QVERIFY(!w->panel()->modelEdited());
    QVERIFY(w->openScenarioFile(path));
    QVERIFY(w->panel()->modelEdited());
    QTest::mouseClick(child<QPushButton>(w, "resetModelButton"), Qt::LeftButton);
    QVERIFY(!w->panel()->modelEdited());
    QCOMPARE(w->scenario().model.kvHeads, 8);
    QVERIFY(!child<QLabel>(w, "modelInfo")->text().contains(QStringLiteral("(edited)")));
}

void TestMainWindow::granularityRuleSharedWithCli_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("granularity");
    QTest::addColumn<QString>("dtypeName");
    QTest::addColumn<QString>("granularityName");
    using core::Granularity;
    using core::KvDtype;
    for (const auto d : {KvDtype::Int8, KvDtype::Int4, KvDtype::Fp8E4M3})
        for (const auto g : {Granularity::PerTokenHead, Granularity::PerGroup,
                             Granularity::KPerChannelVPerToken, Granularity::PerHead})
            QTest::addRow("%s %s", core::dtypeName(d).data(), core::granularityName(g).data())
                << int(d) << int(g) << QString::fromLatin1(core::dtypeName(d).data())
                << QString::fromLatin1(core::granularityName(g).data());
}

void TestMainWindow::granularityRuleSharedWithCli() {
    // The panel and `--kv-granularity` give the same format: core::withGranularity.
    QFETCH(int, dtype);
    QFETCH(int, granularity);
    QFETCH(QString, dtypeName);
    QFETCH(QString, granularityName);
    MainWindow* w = m_window.get();
    test::setGroupChecked(child<QGroupBox>(w, "quantGroup"), true);
    QVERIFY(test::selectComboData(child<QComboBox>(w, "kvDtypeCombo"), dtype));
    QVERIFY(test::selectComboData(child<QComboBox>(w, "granularityCombo"), granularity));
    const auto cli =
        app::parseCommand("ledger", {"--kv-dtype", dtypeName.toStdString(), "--kv-granularity",
                                     granularityName.toStdString()});
    const core::KvFormat panel = w->scenario().levers.quant.format;
    const core::KvFormat expected = core::withGranularity(
        core::KvFormat::defaultFor(core::KvDtype(dtype)), core::Granularity(granularity), 128);
    QCOMPARE(core::formatLabel(panel), core::formatLabel(expected));
    QCOMPARE(panel.groupSize, expected.groupSize);
    if (cli.ok()) {
        QCOMPARE(core::formatLabel(cli->scenario.levers.quant.format), core::formatLabel(panel));
        QVERIFY(cli->scenario.levers.quant.format == panel);
    } else {
        // A combination core refuses is refused by both, naming the same problem.
        QVERIFY(!w->panel()->validationMessage().isEmpty());
        QVERIFY2(
            QString::fromStdString(cli.error().message).contains(w->panel()->validationMessage()),
            cli.error().message.c_str());
    }
}

void TestMainWindow::viewsTakeOneSignal() {
    MainWindow* w = m_window.get();
    QSignalSpy spy(w, &MainWindow::snapshotChanged);
    auto last = [&] { return spy.last().at(0).value<widgets::LedgerView>(); };
    core::Scenario s = w->scenario();
    s.workload.context = 12288;
    w->setScenario(s);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(last().snapshot->scenario.workload.context, 12288);
    QCOMPARE(last().snapshot.get(), &w->snapshot());
    QVERIFY(!last().reference);
    w->pinReference();
    QCOMPARE(spy.count(), 2);
    QCOMPARE(last().reference, last().snapshot);
    QVERIFY(w->memoryChart()->hasReference());
    QVERIFY(w->ladderModel()->hasReference());
    w->setUnits(core::UnitSystem::Decimal);
    QCOMPARE(spy.count(), 3);
    QCOMPARE(last().units, core::UnitSystem::Decimal);
    QCOMPARE(w->memoryChart()->units(), core::UnitSystem::Decimal);
    QCOMPARE(w->breakdownChart()->units(), core::UnitSystem::Decimal);
    QCOMPARE(w->chart(QStringLiteral("quality"))->units(), core::UnitSystem::Decimal);
    w->clearReference();
    QCOMPARE(spy.count(), 4);
    QVERIFY(!last().reference);
    QVERIFY(!w->memoryChart()->hasReference());
    QVERIFY(!w->ladderModel()->hasReference());
}

void TestMainWindow::chartsReplottedWaitsForEveryChart() {
    // Every chart of the window counts, however many there are: a new model redraws the
    // probe tab's charts too.
    MainWindow* w = m_window.get();
    const auto charts = w->findChildren<widgets::ChartWidget*>();
    QVERIFY(charts.size() >= 5);
    QSignalSpy done(w, &MainWindow::chartsReplotted);
    core::Scenario s = w->scenario();
    s.model = *io::findModel("llama-3-70b");
    w->setScenario(s);
    int pending = 0;
    for (const auto* c : charts)
        pending += c->replotPending() ? 1 : 0;
    QCOMPARE(w->pendingReplots(), pending);
    QVERIFY(pending >= 5); // the memory, concurrency, breakdown, quality and speed charts
    QVERIFY(done.wait(5000));
    QCOMPARE(done.count(), 1);
    for (const auto* c : charts)
        QVERIFY2(!c->replotPending(), qPrintable(c->objectName()));
    QCOMPARE(w->pendingReplots(), 0);
}

void TestMainWindow::openSpecialFiles_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("fragment");
    QTest::addRow("fifo") << QStringLiteral("fifo") << QStringLiteral("not a regular file");
    QTest::addRow("directory") << QStringLiteral("dir") << QStringLiteral("directory");
    QTest::addRow("65 MiB, valid JSON first")
        << QStringLiteral("large") << QStringLiteral("64 MiB");
}

void TestMainWindow::openSpecialFiles() {
    // File > Open reads through io::readFile: a FIFO never blocks, and one size limit holds
    // for the whole file (a 65 MiB file was once cut at 64 MiB and its head accepted).
    QFETCH(QString, kind);
    QFETCH(QString, fragment);
    QString path = m_dir.filePath(QStringLiteral("special-%1.kvl.json").arg(kind));
    if (kind == QLatin1String("fifo")) {
#ifdef Q_OS_UNIX
        QFile::remove(path);
        QCOMPARE(::mkfifo(QFile::encodeName(path).constData(), 0600), 0);
#else
        QSKIP("FIFOs are POSIX");
#endif
    } else if (kind == QLatin1String("dir")) {
        QVERIFY(QDir(m_dir.path()).mkpath(QStringLiteral("special-dir.kvl.json")));
    } else {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        QVERIFY(f.write(QByteArray::fromStdString(io::scenarioToJson(app::firstLaunchScenario()))) >
                0);
        QVERIFY(f.resize(qint64(65) << 20)); // sparse: zeros after the JSON
    }
    const std::string before = json(m_window->scenario());
    QSignalSpy errors(m_window.get(), &MainWindow::errorRaised);
    QElapsedTimer t;
    t.start();
    QVERIFY(!m_window->openScenarioFile(path));
    QVERIFY(t.elapsed() < 5000);
    QCOMPARE(errors.count(), 1);
    const QString message = errors.at(0).at(1).toString();
    QVERIFY2(message.contains(QFileInfo(path).fileName()), qPrintable(message));
    QVERIFY2(message.contains(fragment), qPrintable(message));
    QCOMPARE(json(m_window->scenario()), before);
    QVERIFY(m_window->recentFiles().isEmpty());
    QFile::remove(path);
}

void TestMainWindow::saveOnFullDisk() {
    // File > Save on a full disk: the error names the file and the OS's reason, the file
    // keeps its bytes, the window stays "modified" and the title keeps the old file.
    test::FullDisk disk;
    if (!disk.ok())
        QSKIP(qPrintable(disk.whyNot()));
    MainWindow* w = m_window.get();
    const QByteArray original = QByteArray::fromStdString(json(app::firstLaunchScenario()));
    QVERIFY(disk.put(QStringLiteral("full.kvl.json"), original));
    QVERIFY(disk.fill());
    test::typeInto(child<QSpinBox>(w, "contextSpin"), QStringLiteral("100000"));
    QVERIFY(w->isWindowModified());
    QSignalSpy errors(w, &MainWindow::errorRaised);
    const QString path = disk.filePath(QStringLiteral("full.kvl.json"));
    QVERIFY(!w->saveScenarioFile(path));
    QCOMPARE(errors.count(), 1);
    const QString message = errors.at(0).at(1).toString();
    QVERIFY2(message.contains(QDir::toNativeSeparators(path)), qPrintable(message));
    QVERIFY2(message.contains(QString::fromLocal8Bit(std::strerror(ENOSPC))), qPrintable(message));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), original);
    QVERIFY(w->isWindowModified());
    QVERIFY(w->currentFile().isEmpty());
    QVERIFY(w->recentFiles().isEmpty());
}

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"
