// The scenario panel's context slider against the max model len (issue 29, item 5): its top
// stop is the user's max model len where set, else the model's, so a drag never lands on a
// context vLLM rejects; and the charts' context axis (core::computeSweep) ends at the same
// length.

#include "tests/widgets/test_helpers.h"
#include "widgets/scenario/scenario_panel.h"
#include "widgets/scenario/token_spin_box.h"
#include "widgets/scenario/warnings_banner.h"
#include "widgets/scenario/wrap_label.h"

#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/ledger.h"

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSlider>
#include <QSpinBox>
#include <QtTest>

#include <vector>

using namespace kvl;

class TestScenarioPanel : public QObject {
    Q_OBJECT
private slots:
    void wrapLabelAnswersAsQLabel_data();
    void wrapLabelAnswersAsQLabel();
    void sliderEndsAtMaxModelLen_data();
    void sliderEndsAtMaxModelLen();
    void sweepEndsAtMaxModelLen_data();
    void sweepEndsAtMaxModelLen();
    void dragCommitsOncePerPass_data();
    void dragCommitsOncePerPass();
    void versionNoteFollowsEngine_data();
    void versionNoteFollowsEngine();
    void bannerHoldsHeight_data();
    void bannerHoldsHeight();
    void layoutSizesAsTheCommandLine_data();
    void layoutSizesAsTheCommandLine();
};

void TestScenarioPanel::sliderEndsAtMaxModelLen_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("maxModelLen"); // typed into the box; "" = the model's
    QTest::addColumn<qint64>("top");          // the context at the slider's end
    QTest::addRow("llama-3-8b, 8K") << "llama-3-8b"
                                    << "" << qint64(8192);
    QTest::addRow("llama-3.1-8b, 128K") << "llama-3.1-8b"
                                        << "" << qint64(131072);
    QTest::addRow("llama-3.1-8b cut to 16K") << "llama-3.1-8b"
                                             << "16K" << qint64(16384);
    QTest::addRow("llama-3-8b raised to 32K") << "llama-3-8b"
                                              << "32K" << qint64(32768);
    // 10M is beyond the slider's stops: it ends at its last, 1M.
    QTest::addRow("llama-4-scout, 10M") << "llama-4-scout-17b-16e"
                                        << "" << qint64(1 << 20);
    // Not a stop: the stop at or below it (the next, 40,960, is above 40,000).
    QTest::addRow("llama-3.1-8b cut to 40000") << "llama-3.1-8b"
                                               << "40000" << qint64(32768);
}

void TestScenarioPanel::sliderEndsAtMaxModelLen() {
    QFETCH(QString, model);
    QFETCH(QString, maxModelLen);
    QFETCH(qint64, top);
    widgets::ScenarioPanel panel;
    panel.show();
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel(model.toStdString());
    s.workload.context = 4096;
    panel.setScenario(s);
    if (!maxModelLen.isEmpty())
        test::typeInto(panel.findChild<QSpinBox*>(QStringLiteral("maxModelLenSpin")), maxModelLen);
    auto* slider = panel.findChild<QSlider*>(QStringLiteral("contextSlider"));
    QVERIFY(slider);
    // Today's 120 px drag from 4K: as far right as the slider goes.
    slider->setFocus();
    QTest::keyClick(slider, Qt::Key_End);
    QCOMPARE(panel.scenario().workload.context, top);
    QCOMPARE(widgets::tokensAtSliderPosition(slider->maximum()), top);
    // The slider's stops below the top are the same as before.
    QTest::keyClick(slider, Qt::Key_Home);
    QCOMPARE(panel.scenario().workload.context, qint64(256));
}

void TestScenarioPanel::sweepEndsAtMaxModelLen_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<qint64>("maxModelLen");
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("axisEnd");
    QTest::addRow("the model's 128K")
        << "llama-3.1-8b" << qint64(0) << qint64(4096) << qint64(131072);
    QTest::addRow("cut to 16K") << "llama-3.1-8b" << qint64(16384) << qint64(4096) << qint64(16384);
    QTest::addRow("raised to 32K")
        << "llama-3-8b" << qint64(32768) << qint64(4096) << qint64(32768);
    QTest::addRow("a typed context beyond it keeps its point")
        << "llama-3-8b" << qint64(0) << qint64(20000) << qint64(20000);
}

void TestScenarioPanel::sweepEndsAtMaxModelLen() {
    QFETCH(QString, model);
    QFETCH(qint64, maxModelLen);
    QFETCH(qint64, context);
    QFETCH(qint64, axisEnd);
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel(model.toStdString());
    s.workload.maxModelLen = maxModelLen;
    s.workload.context = context;
    const auto sweep = core::computeSweep(s);
    QVERIFY(!sweep.contexts.empty());
    QCOMPARE(sweep.contexts.back(), axisEnd);
}

// Issue 27: while the handle is held, the moves handled in one pass of the event loop commit
// once, with the latest context; without the handle held (keys, wheel) every move commits; a
// release commits what a held drag left pending at once.
void TestScenarioPanel::dragCommitsOncePerPass_data() {
    QTest::addColumn<bool>("held");
    QTest::addColumn<int>("moves");
    QTest::addColumn<bool>("release"); // release the handle before the event loop runs
    QTest::addColumn<int>("beforeLoop");
    QTest::addColumn<int>("afterLoop");
    QTest::addRow("held, 1 move") << true << 1 << false << 0 << 1;
    QTest::addRow("held, 7 moves") << true << 7 << false << 0 << 1;
    QTest::addRow("held, 7 moves, released") << true << 7 << true << 1 << 1;
    QTest::addRow("not held, 7 moves") << false << 7 << false << 7 << 7;
}

void TestScenarioPanel::dragCommitsOncePerPass() {
    QFETCH(bool, held);
    QFETCH(int, moves);
    QFETCH(bool, release);
    QFETCH(int, beforeLoop);
    QFETCH(int, afterLoop);
    widgets::ScenarioPanel panel;
    panel.show();
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel("llama-3.1-8b");
    s.workload.context = 1024;
    panel.setScenario(s);
    auto* slider = panel.findChild<QSlider*>(QStringLiteral("contextSlider"));
    QVERIFY(slider);
    QCoreApplication::processEvents();
    std::vector<qint64> changed; // the context of each scenario the panel commits
    connect(&panel, &widgets::ScenarioPanel::scenarioChanged, this,
            [&changed](const core::Scenario& c) { changed.push_back(c.workload.context); });
    slider->setSliderDown(held);
    const int start = slider->value();
    for (int i = 1; i <= moves; ++i)
        slider->setValue(start + i);
    const qint64 last = widgets::tokensAtSliderPosition(start + moves);
    QCOMPARE(panel.scenario().workload.context, last); // the panel's own state follows at once
    if (release)
        slider->setSliderDown(false);
    QCOMPARE(int(changed.size()), beforeLoop);
    QCoreApplication::processEvents();
    QCOMPARE(int(changed.size()), afterLoop);
    QCOMPARE(changed.back(), last);
    slider->setSliderDown(false);
}

// The note under the vLLM version ("0.92 -> 0.9 ..." or a red reason) says something only for
// vLLM, whichever way the version was picked and the engine switched, and comes back with vLLM;
// it is laid out in its place below the version. Its row never hides (Qt 6.4's QFormLayout
// wrote before its arrays when a hidden word-wrapped row was shown again).
void TestScenarioPanel::versionNoteFollowsEngine_data() {
    QTest::addColumn<bool>("viaSglang"); // SGLang picked and vLLM again before the version
    QTest::addColumn<QString>("typed");  // "" picks the 0.20 release from the list
    QTest::addColumn<bool>("refused");   // the typed text is not a release
    QTest::addColumn<QString>("engineAfter");
    QTest::addColumn<bool>("noteShown");
    QTest::addRow("0.20 from the list, vLLM") << false << QString() << false << "vllm" << true;
    QTest::addRow("SGLang and back, 0.20 from the list")
        << true << QString() << false << "vllm" << true;
    QTest::addRow("0.20 from the list, then SGLang")
        << false << QString() << false << "sglang" << false;
    QTest::addRow("0.20 from the list, then llama.cpp")
        << false << QString() << false << "llamacpp" << false;
    QTest::addRow("a typo, vLLM") << false << "0.2x" << true << "vllm" << true;
    QTest::addRow("SGLang and back, a typo") << true << "0.2x" << true << "vllm" << true;
    QTest::addRow("a typo, then TensorRT-LLM") << false << "0.2x" << true << "trtllm" << false;
}

void TestScenarioPanel::versionNoteFollowsEngine() {
    QFETCH(bool, viaSglang);
    QFETCH(QString, typed);
    QFETCH(bool, refused);
    QFETCH(QString, engineAfter);
    QFETCH(bool, noteShown);
    widgets::ScenarioPanel panel;
    panel.resize(420, 1400);
    panel.show();
    panel.setScenario(io::defaultScenario());
    auto* version = panel.findChild<QComboBox*>(QStringLiteral("vllmVersionCombo"));
    auto* engine = panel.findChild<QComboBox*>(QStringLiteral("engineCombo"));
    auto* note = panel.findChild<QLabel*>(QStringLiteral("vllmVersionInfo"));
    QVERIFY(version && engine && note);
    QVERIFY(note->text().isEmpty()); // nothing to say yet
    auto pick = [engine](const char* name) {
        const int e = engine->findData(static_cast<int>(*core::parseEngine(name)));
        QVERIFY(e >= 0);
        engine->setCurrentIndex(e);
    };
    if (viaSglang) {
        pick("sglang");
        pick("vllm");
    }
    if (typed.isEmpty()) {
        const int i = version->findText(QStringLiteral("0.20"));
        QVERIFY(i > 0);
        version->setCurrentIndex(i);
        emit version->activated(i);
    } else {
        version->setEditText(typed);
        emit version->lineEdit()->editingFinished();
    }
    QVERIFY(!note->text().isEmpty());
    QCOMPARE(note->text().contains(QStringLiteral("vLLM version:")), refused);
    QCOMPARE(panel.scenario().engine.vllmVersion.has_value(), !refused);
    QCoreApplication::processEvents();
    QVERIFY(note->geometry().top() >= version->geometry().bottom()); // laid out in its row
    QVERIFY(note->height() > 0);
    pick(engineAfter.toLatin1().constData());
    QCoreApplication::processEvents();
    QCOMPARE(!note->text().isEmpty(), noteShown);
    QVERIFY(note->isVisibleTo(&panel)); // a word-wrapped row never hides (see setNote)
    if (noteShown) {                    // laid out inside its group, below the version combo
        QVERIFY(note->geometry().top() >= version->geometry().bottom());
        QVERIFY(note->parentWidget()->rect().contains(note->geometry()));
    }
}

// The warnings banner above the charts grows at once and shrinks only after a pause, so that
// a drag does not re-lay out the charts at each step; the same rows again (a step that moves no
// warning) measure nothing, yet keep a pending shrink waiting for its pause.
void TestScenarioPanel::bannerHoldsHeight_data() {
    QTest::addColumn<int>("firstRows");
    QTest::addColumn<int>("thenRows");
    QTest::addColumn<bool>("repeat"); // the second rows set again during the pause
    QTest::addColumn<bool>("held");   // the first height kept right after the second rows
    QTest::addRow("fewer rows: held, then shrinks") << 3 << 1 << false << true;
    QTest::addRow("fewer rows set twice: the pause restarts") << 3 << 1 << true << true;
    QTest::addRow("more rows: grows at once") << 1 << 3 << false << false;
    QTest::addRow("the same rows: nothing pending") << 2 << 2 << true << true;
}

void TestScenarioPanel::bannerHoldsHeight() {
    QFETCH(int, firstRows);
    QFETCH(int, thenRows);
    QFETCH(bool, repeat);
    QFETCH(bool, held);
    auto rows = [](int n) {
        std::vector<widgets::BannerItem> items;
        for (int i = 0; i < n; ++i)
            items.push_back({widgets::Severity::Warning, QStringLiteral("warning"),
                             QStringLiteral("Row %1").arg(i),
                             QStringLiteral("a paragraph long enough to wrap over more than one "
                                            "line of a banner four hundred pixels wide, %1")
                                 .arg(i)});
        return items;
    };
    widgets::WarningsBanner banner;
    banner.resize(400, 60);
    banner.show();
    QVERIFY(QTest::qWaitForWindowExposed(&banner));
    banner.setItems(rows(firstRows));
    const int first = banner.minimumHeight();
    QVERIFY(first > 0);
    banner.setItems(rows(thenRows)); // within the same interaction
    const int second = banner.minimumHeight();
    if (held)
        QCOMPARE(second, first);
    else
        QVERIFY(second > first);
    const bool shrinking = thenRows < firstRows;
    QCOMPARE(banner.shrinkPendingMs() >= 0, shrinking);
    if (repeat) {
        QTest::qWait(widgets::WarningsBanner::kSettleMs / 2);
        banner.setItems(rows(thenRows)); // the same rows: the pause starts again
        QCOMPARE(banner.minimumHeight(), second);
        if (shrinking)
            QVERIFY2(banner.shrinkPendingMs() > widgets::WarningsBanner::kSettleMs * 3 / 4,
                     qPrintable(QString::number(banner.shrinkPendingMs())));
        else
            QCOMPARE(banner.shrinkPendingMs(), -1);
    }
    if (shrinking) // after the pause, the rows' own height
        QTRY_VERIFY_WITH_TIMEOUT(banner.minimumHeight() < first, 5000);
}

void TestScenarioPanel::wrapLabelAnswersAsQLabel_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("change"); // what changes between the two sets of answers
    const QString plain = QStringLiteral(
        "FP8 (E4M3): 8 bits a value, a scale per tensor; vLLM's --kv-cache-dtype fp8 halves the "
        "KV cache's bytes against BF16");
    const QString rich = QStringLiteral(
        "<b>Refused:</b> vLLM will not start: 131,072 tokens need 5.24 GiB of KV cache per "
        "request and the GPU has 3.1 GiB left after the weights");
    for (const char* change : {"text", "font", "margin", "indent", "format", "contents"}) {
        QTest::addRow("plain, %s", change) << plain << QString::fromLatin1(change);
        QTest::addRow("rich, %s", change) << rich << QString::fromLatin1(change);
    }
}

void TestScenarioPanel::wrapLabelAnswersAsQLabel() {
    // WrapLabel remembers heightForWidth and its size hints for its last few texts; whatever
    // changes the layout of its text, it must answer exactly what QLabel would, never an answer
    // remembered from before the change, and the same again when the change is undone.
    QFETCH(QString, text);
    QFETCH(QString, change);
    const QString longer = text + QStringLiteral(" and one more clause to wrap over another line");
    widgets::WrapLabel cached(text);
    QLabel plainLabel(text);
    plainLabel.setWordWrap(true);
    const std::vector<int> widths{90, 160, 240, 160, 90, 400, 90};
    auto compare = [&] {
        for (int w : widths) {
            QCOMPARE(cached.heightForWidth(w), plainLabel.heightForWidth(w));
            QCOMPARE(cached.heightForWidth(w), plainLabel.heightForWidth(w)); // from the cache
        }
        for (int twice = 0; twice < 2; ++twice) {
            QCOMPARE(cached.sizeHint(), plainLabel.sizeHint());
            QCOMPARE(cached.minimumSizeHint(), plainLabel.minimumSizeHint());
        }
    };
    compare();
    const int before = cached.heightForWidth(160);
    auto apply = [&](QLabel& l) {
        if (change == QLatin1String("text"))
            l.setText(longer);
        else if (change == QLatin1String("font")) {
            QFont f = l.font();
            f.setPointSizeF(f.pointSizeF() * 1.6);
            l.setFont(f);
        } else if (change == QLatin1String("margin"))
            l.setMargin(14);
        else if (change == QLatin1String("indent"))
            l.setIndent(60);
        else if (change == QLatin1String("format"))
            l.setTextFormat(Qt::PlainText); // the rich text's tags become text to lay out
        else
            l.setContentsMargins(30, 8, 30, 8);
    };
    const QSize sizeBefore = cached.sizeHint();
    apply(cached);
    apply(plainLabel);
    compare();
    if (change != QLatin1String("format")) // (the tags shown as text may wrap the same)
        QVERIFY2(cached.heightForWidth(160) != before, qPrintable(change)); // a real change
    if (change == QLatin1String("text")) {
        // Back to the first text, then the second again: answers found among those kept.
        for (const QString& t : {text, longer}) {
            cached.setText(t);
            plainLabel.setText(t);
            compare();
        }
        cached.setText(text);
        QCOMPARE(cached.sizeHint(), sizeBefore);
    }
}

void TestScenarioPanel::layoutSizesAsTheCommandLine_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("dp");
    QTest::addColumn<QString>("typedIntoDp"); // then typed into the DP box, "" for nothing
    QTest::addColumn<int>("dpAfter");
    QTest::newRow("dp 64") << 1 << 1 << 64 << "" << 64;
    QTest::newRow("dp 128 (a plan with --max-gpus 128)") << 1 << 1 << 128 << "" << 128;
    QTest::newRow("tp 8 x dp 512") << 8 << 1 << 512 << "" << 512;
    QTest::newRow("dp kMaxGpus") << 1 << 1 << core::kMaxGpus << "" << core::kMaxGpus;
    QTest::newRow("typed 200") << 1 << 1 << 1 << "200" << 200;
    QTest::newRow("typed kMaxGpus")
        << 1 << 1 << 1 << QString::number(core::kMaxGpus) << core::kMaxGpus;
}

void TestScenarioPanel::layoutSizesAsTheCommandLine() {
    // The layout boxes take what `kvledger --tp/--pp/--dp` takes (1 to core::kMaxGpus): a
    // scenario file or an applied plan larger than the boxes' range must not be clamped to it.
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(int, dp);
    QFETCH(QString, typedIntoDp);
    QFETCH(int, dpAfter);
    widgets::ScenarioPanel panel;
    panel.resize(420, 1400);
    panel.show();
    core::Scenario s = io::defaultScenario();
    s.hardware.gpuCount = tp;
    s.hardware.pipelineParallel = pp;
    s.hardware.dataParallel = dp;
    panel.setScenario(s);
    auto* dpSpin = panel.findChild<QSpinBox*>(QStringLiteral("dpSpin"));
    QVERIFY(dpSpin);
    if (!typedIntoDp.isEmpty())
        test::typeInto(dpSpin, typedIntoDp);
    QCOMPARE(dpSpin->value(), dpAfter);
    QCOMPARE(panel.scenario().hardware.dataParallel, dpAfter);
    QCOMPARE(panel.scenario().hardware.gpuCount, tp);
    QCOMPARE(panel.scenario().hardware.pipelineParallel, pp);
    for (const char* name : {"gpuCountSpin", "dpSpin", "dcpSpin"}) {
        auto* spin = panel.findChild<QSpinBox*>(QLatin1String(name));
        QVERIFY(spin);
        QCOMPARE(spin->maximum(), core::kMaxGpus);
    }
    // PP: at most one stage a layer.
    auto* ppSpin = panel.findChild<QSpinBox*>(QStringLiteral("ppSpin"));
    QVERIFY(ppSpin);
    QCOMPARE(ppSpin->maximum(), s.model.numLayers());
}

QTEST_MAIN(TestScenarioPanel)
#include "tst_scenario_panel.moc"
