// The main window's tabs (app/steady_tab_widget.cpp): a change inside a page repaints what it
// changed, not every widget of the tab area; when the tab bar or the pages do move, the screen
// still shows what drawing the tabs anew gives.

#include "steady_tab_widget.h"
#include "test_helpers.h"

#include <QIcon>
#include <QLabel>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QScreen>
#include <QTabBar>
#include <QTest>
#include <QVBoxLayout>

#include <functional>
#include <memory>

using namespace kvl;

class TestSteadyTabs : public QObject {
    Q_OBJECT
private slots:
    void pageChangePaintsOnlyItself_data();
    void pageChangePaintsOnlyItself();
    void onScreenAsDrawnAnew_data();
    void onScreenAsDrawnAnew();
};

namespace {

// A page laid out as the Ledger tab's lower right: a title above the vLLM command.
struct Tabs {
    std::unique_ptr<QTabWidget> tabs;
    QLabel* title = nullptr;
    QPlainTextEdit* command = nullptr;
};

Tabs makeTabs(bool steady, bool documentMode = true) {
    Tabs t;
    t.tabs.reset(steady ? new app::SteadyTabWidget : new QTabWidget);
    t.tabs->setDocumentMode(documentMode);
    auto* page = new QWidget;
    auto* layout = new QVBoxLayout(page);
    t.title = new QLabel(QStringLiteral("Lever ladder"));
    t.title->setWordWrap(true);
    t.command = new QPlainTextEdit(QStringLiteral("vllm serve meta-llama/Meta-Llama-3-8B"));
    layout->addWidget(t.title);
    layout->addWidget(t.command, 1);
    t.tabs->addTab(page, QStringLiteral("Ledger"));
    t.tabs->addTab(new QWidget, QStringLiteral("Probe"));
    t.tabs->resize(520, 360);
    t.tabs->show();
    return t;
}

using Change = std::function<void(Tabs&)>;

} // namespace

void TestSteadyTabs::pageChangePaintsOnlyItself_data() {
    QTest::addColumn<bool>("steady");
    QTest::addColumn<bool>("commandRepainted");
    // QTabWidget's own behaviour, so that the count below is seen to catch it.
    QTest::addRow("QTabWidget") << false << true;
    QTest::addRow("SteadyTabWidget") << true << false;
}

void TestSteadyTabs::pageChangePaintsOnlyItself() {
    // A new title of the same height: the label repaints itself; nothing else moved.
    QFETCH(bool, steady);
    QFETCH(bool, commandRepainted);
    Tabs t = makeTabs(steady);
    QVERIFY(QTest::qWaitForWindowExposed(t.tabs.get()));
    QTest::qWait(50);
    test::PaintCounter commandPaints;
    t.command->installEventFilter(&commandPaints);
    for (QWidget* w : t.command->findChildren<QWidget*>())
        w->installEventFilter(&commandPaints);
    const QRect commandBefore = t.command->geometry();
    t.title->setText(QStringLiteral("Lever ladder: each step adds one lever"));
    QTest::qWait(50);
    QCOMPARE(t.command->geometry(), commandBefore);
    QCOMPARE(commandPaints.paints > 0, commandRepainted);
}

void TestSteadyTabs::onScreenAsDrawnAnew_data() {
    QTest::addColumn<bool>("documentMode"); // the main window's; without it, a frame
    QTest::addColumn<Change>("change");
    const std::pair<const char*, Change> changes[] = {
        {"title of the same height",
         [](Tabs& t) {
             t.title->setText(QStringLiteral("Lever ladder: each step adds one lever"));
         }},
        {"title wraps, the command moves down",
         [](Tabs& t) {
             t.title->setText(QString(QStringLiteral("a long title that wraps ")).repeated(8));
         }},
        {"tab bar grows taller",
         [](Tabs& t) {
             QPixmap icon(40, 40);
             icon.fill(Qt::darkCyan);
             t.tabs->setIconSize(QSize(40, 40));
             t.tabs->setTabIcon(0, QIcon(icon));
         }},
        {"a tab added",
         [](Tabs& t) { t.tabs->addTab(new QWidget, QStringLiteral("Traffic: simulated")); }},
        {"tab bar hidden", [](Tabs& t) { t.tabs->tabBar()->hide(); }},
        {"last tab but one removed, the bar hides itself",
         [](Tabs& t) {
             t.tabs->setTabBarAutoHide(true);
             t.tabs->removeTab(1);
         }},
        {"tab bar hidden, then shown",
         [](Tabs& t) {
             t.tabs->tabBar()->hide();
             QTest::qWait(20);
             t.tabs->tabBar()->show();
         }},
        {"another tab shown", [](Tabs& t) { t.tabs->setCurrentIndex(1); }},
        {"another tab shown and back",
         [](Tabs& t) {
             t.tabs->setCurrentIndex(1);
             QTest::qWait(20);
             t.title->setText(QStringLiteral("changed while hidden"));
             t.tabs->setCurrentIndex(0);
         }},
    };
    for (const bool documentMode : {true, false})
        for (const auto& [name, change] : changes)
            QTest::addRow("%s, %s", documentMode ? "document mode" : "framed", name)
                << documentMode << change;
}

void TestSteadyTabs::onScreenAsDrawnAnew() {
    QFETCH(bool, documentMode);
    QFETCH(Change, change);
    Tabs t = makeTabs(true, documentMode);
    QVERIFY(QTest::qWaitForWindowExposed(t.tabs.get()));
    QTest::qWait(50);
    QScreen* screen = t.tabs->screen();
    QCOMPARE(test::largestDifference(screen->grabWindow(t.tabs->winId()).toImage(),
                                     t.tabs->grab().toImage()),
             0);
    const QRect barBefore = t.tabs->tabBar()->geometry();
    change(t);
    QTest::qWait(50);
    QCOMPARE(test::largestDifference(screen->grabWindow(t.tabs->winId()).toImage(),
                                     t.tabs->grab().toImage()),
             0);
    // The rows that move the tab bar check the repaint this class adds back.
    if (QByteArray(QTest::currentDataTag()).endsWith("tab bar grows taller"))
        QVERIFY(t.tabs->tabBar()->geometry() != barBefore);
}

QTEST_MAIN(TestSteadyTabs)
#include "tst_steady_tabs.moc"
