// The window at laptop and desktop sizes (1366 x 768, 1440 x 900, 1600 x 1000), checked
// geometrically: the five ladder rows show, step names fit or elide with the full name in the
// tooltip, chart titles are not clipped, the context slider and the prefix controls are on
// screen without scrolling, legends never cover a plotted point, an empty chart's placeholder
// fits in the plot, and the banner's items are not cut off. A screenshot of each size is
// written beside the test binary (layout-WxH.png) to look at.

#include "main_window.h"

#include "widgets/charts/breakdown_chart.h"
#include "widgets/charts/chart_widget.h"
#include "widgets/charts/curve_chart.h"
#include "widgets/charts/ladder_model.h"
#include "widgets/deployment/deployment_panel.h"
#include "widgets/scenario/scenario_panel.h"
#include "widgets/scenario/warnings_banner.h"

#include "core/io/catalog.h"

#include <QCoreApplication>
#include <QDialog>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QSlider>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTextBlock>
#include <QTextLayout>
#include <QToolButton>

#include <memory>

using namespace kvl;
using app::MainWindow;

namespace {

template <class T> T* child(QWidget* w, const char* name) {
    T* c = w->findChild<T*>(QLatin1String(name));
    if (!c)
        qFatal("no child %s", name);
    return c;
}

// `w`'s rectangle in `ancestor`'s coordinates.
QRect rectIn(const QWidget* w, const QWidget* ancestor) {
    return QRect(w->mapTo(ancestor, QPoint(0, 0)), w->size());
}

// Every point of every plotted series of `chart` lies outside its legend, and the legend lies
// outside the plot area (it can cover nothing the chart draws later either).
void verifyLegendClear(const widgets::ChartWidget* chart) {
    const QRect legend = chart->legendRect();
    QVERIFY2(!legend.isEmpty(), qPrintable(chart->objectName()));
    QVERIFY2(chart->rect().contains(legend), qPrintable(chart->objectName()));
    QVERIFY2(!legend.intersects(chart->plotAreaRect()), qPrintable(chart->objectName()));
    int points = 0;
    for (int s = 0; s < chart->seriesCount(); ++s)
        for (int p = 0; p < chart->seriesKeys(s).size(); ++p) {
            const QPoint at = chart->seriesPointPosition(s, p);
            QVERIFY2(!legend.contains(at),
                     qPrintable(QStringLiteral("%1: %2 point %3")
                                    .arg(chart->objectName(), chart->seriesName(s))
                                    .arg(p)));
            ++points;
        }
    QVERIFY(points > 20);
}

void verifyTitleFits(const widgets::ChartWidget* chart) {
    const QRect r = chart->titleRect();
    QVERIFY2(chart->rect().contains(r), qPrintable(chart->objectName()));
    const QFontMetrics fm(chart->titleFont());
    const QStringList lines = chart->shownTitle().split(QLatin1Char('\n'));
    for (const QString& line : lines)
        QVERIFY2(fm.horizontalAdvance(line) <= r.width(),
                 qPrintable(QStringLiteral("%1: \"%2\" is %3 px in %4")
                                .arg(chart->objectName(), line)
                                .arg(fm.horizontalAdvance(line))
                                .arg(r.width())));
    QVERIFY2(r.height() >= int(lines.size()) * fm.height(), qPrintable(chart->objectName()));
    // Nothing of the title is lost to the wrapping.
    QCOMPARE(chart->shownTitle().split(QRegularExpression(QStringLiteral("\\s+"))).join(' '),
             chart->title().split(QRegularExpression(QStringLiteral("\\s+"))).join(' '));
}

} // namespace

class TestLayout : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init();
    void cleanup();
    void windowAtSize_data();
    void windowAtSize();
    void placeholderNotClipped_data();
    void placeholderNotClipped();
    void longBannerOpensPopup();
    void everyTab_data();
    void everyTab();
    void ladderHidesToFit_data();
    void ladderHidesToFit();
    void tallBannerFits();
    void commandShowsEveryLine_data();
    void commandShowsEveryLine();
    void bannerTintBySeverity_data();
    void bannerTintBySeverity();

private:
    void open(QSize size);
    std::unique_ptr<MainWindow> m_window;
};

void TestLayout::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
}

void TestLayout::init() {
    MainWindow::Options o;
    o.useSettings = false;
    o.showDialogs = false;
    m_window = std::make_unique<MainWindow>(o);
}

void TestLayout::cleanup() {
    m_window.reset();
}

void TestLayout::open(QSize size) {
    m_window->resize(size);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    QCOMPARE(m_window->size(), size);
    QTRY_COMPARE(m_window->pendingReplots(), 0);
    QCoreApplication::processEvents();
}

void TestLayout::windowAtSize_data() {
    QTest::addColumn<QSize>("size");
    QTest::addRow("1366x768") << QSize(1366, 768);
    QTest::addRow("1440x900") << QSize(1440, 900);
    QTest::addRow("1600x1000") << QSize(1600, 1000);
}

void TestLayout::windowAtSize() {
    QFETCH(QSize, size);
    open(size);
    MainWindow* w = m_window.get();

    // The ladder: all five steps on screen, each name fits or elides with a tooltip.
    QTableView* ladder = w->ladderView();
    QVERIFY(ladder->isVisible());
    QVERIFY(w->rect().contains(rectIn(ladder, w)));
    // The vLLM command under it shows its first four lines at least (model, KV dtype, prefix
    // caching, utilization): at 1366 x 768 it showed a line and a half.
    auto* command = w->findChild<QPlainTextEdit*>(QStringLiteral("vllmView"));
    QVERIFY(command && command->isVisible());
    QVERIFY(w->rect().contains(rectIn(command, w)));
    const int lines = command->viewport()->height() / command->fontMetrics().lineSpacing();
    QVERIFY2(lines >= 4, qPrintable(QStringLiteral("the vLLM command shows %1 lines").arg(lines)));
    const auto* model = w->ladderModel();
    QCOMPARE(model->rowCount(), 5);
    const int stepWidth = ladder->columnWidth(widgets::LadderModel::StepColumn);
    for (int row = 0; row < 5; ++row) {
        const QModelIndex index = model->index(row, widgets::LadderModel::StepColumn);
        const QRect cell = ladder->visualRect(index);
        QVERIFY2(ladder->viewport()->rect().contains(cell),
                 qPrintable(QStringLiteral("row %1 at %2,%3 %4x%5 outside the viewport %6x%7")
                                .arg(row)
                                .arg(cell.x())
                                .arg(cell.y())
                                .arg(cell.width())
                                .arg(cell.height())
                                .arg(ladder->viewport()->width())
                                .arg(ladder->viewport()->height())));
        const QString text = index.data().toString();
        QFont f = ladder->font();
        if (index.data(Qt::FontRole).canConvert<QFont>())
            f = index.data(Qt::FontRole).value<QFont>();
        const int needed = QFontMetrics(f).horizontalAdvance(text) + 8; // cell margins
        const bool fits = needed <= stepWidth;
        QVERIFY2(fits || index.data(Qt::ToolTipRole).toString().contains(text),
                 qPrintable(QStringLiteral("\"%1\" is elided without a tooltip").arg(text)));
    }

    // Chart titles are whole: wrapped, never clipped.
    verifyTitleFits(w->breakdownChart());
    verifyTitleFits(w->memoryChart());
    verifyTitleFits(w->concurrencyChart());

    // The context slider and the prefix controls are on screen with the panel unscrolled.
    auto* scroll = qobject_cast<QScrollArea*>(w->panel()->parentWidget()->parentWidget());
    QVERIFY(scroll);
    QCOMPARE(scroll->verticalScrollBar()->value(), 0);
    QVERIFY(!w->panel()->geometryEditorShown()); // folded by default
    // The default assumes no shared prefix (issue 29, item 12): the lever is one click away,
    // and its controls, once it is on, must be on screen too.
    QVERIFY(!w->scenario().levers.prefix.enabled);
    {
        core::Scenario s = w->scenario();
        s.levers.prefix.enabled = true;
        w->setScenario(s);
        QTRY_COMPARE(w->pendingReplots(), 0);
        QCoreApplication::processEvents();
    }
    QWidget* viewport = scroll->viewport();
    for (const char* name : {"contextSlider", "contextSpin", "prefixGroup", "prefixTokensSpin",
                             "prefixRequestsSpin", "targetRequestsSpin"}) {
        QWidget* c = child<QWidget>(w->panel(), name);
        QVERIFY2(c->isVisible(), name);
        QVERIFY2(viewport->rect().contains(rectIn(c, viewport)),
                 qPrintable(QStringLiteral("%1 at y %2..%3, the viewport is %4 high")
                                .arg(QLatin1String(name))
                                .arg(rectIn(c, viewport).top())
                                .arg(rectIn(c, viewport).bottom())
                                .arg(viewport->height())));
    }

    // Legends sit outside the plots and cover no point.
    verifyLegendClear(w->memoryChart());
    verifyLegendClear(w->concurrencyChart());

    // The banner's items show whole.
    widgets::WarningsBanner* banner = w->banner();
    QVERIFY(banner->isVisible());
    QVERIFY(w->rect().contains(rectIn(banner, w)));
    for (int i = 0; i < banner->shownCount(); ++i) {
        QLabel* l = banner->itemLabel(i);
        QVERIFY(l->isVisible());
        QVERIFY2(l->height() >= l->heightForWidth(l->width()), qPrintable(l->text()));
    }

    // The status line names the scope, and the scope button is in reach.
    QVERIFY(w->summaryText().contains(QStringLiteral("per GPU")));
    QToolButton* scopeButton = child<QToolButton>(w, "scopeButton");
    QVERIFY(scopeButton->isVisible());
    QVERIFY(w->rect().contains(rectIn(scopeButton, w)));

    const QString shot = QCoreApplication::applicationDirPath() +
                         QStringLiteral("/layout-%1x%2.png").arg(size.width()).arg(size.height());
    QVERIFY(w->grab().save(shot, "PNG"));
    qInfo("screenshot: %s", qPrintable(shot));
}

void TestLayout::placeholderNotClipped_data() {
    QTest::addColumn<QString>("what");
    QTest::addRow("invalid layout (TP 3)") << QStringLiteral("tp3");
    QTest::addRow("nothing fits (405B on one GPU)") << QStringLiteral("nofit");
}

void TestLayout::placeholderNotClipped() {
    QFETCH(QString, what);
    open(QSize(1366, 768));
    MainWindow* w = m_window.get();
    core::Scenario s = w->scenario();
    QString expected;
    if (what == QLatin1String("tp3")) {
        s.hardware.gpuCount = 3;
        expected = QStringLiteral("Not computed: layout TP 3: tensor parallel 3 does not divide "
                                  "the 32 attention heads");
    } else {
        const core::ModelSpec* big = nullptr;
        for (const auto& m : io::builtinModels())
            if (!big || m.params > big->params)
                big = &m;
        s.model = *big;
        expected = QStringLiteral("No request fits at any context");
    }
    w->setScenario(s);
    QTRY_COMPARE(w->pendingReplots(), 0);
    QCoreApplication::processEvents();
    for (widgets::CurveChart* c : {w->memoryChart(), w->concurrencyChart()}) {
        if (what == QLatin1String("nofit") && c == w->memoryChart())
            continue; // the memory curves still plot: one request's bytes exist
        if (what == QLatin1String("tp3"))
            QCOMPARE(c->seriesCount(), 0); // not the last valid scenario's curves
        const QString text = c->placeholderText();
        QVERIFY2(text.simplified().startsWith(expected), qPrintable(text));
        const QRect r = c->placeholderRect();
        QVERIFY(!r.isEmpty());
        QVERIFY2(c->plotAreaRect().contains(r),
                 qPrintable(QStringLiteral("%1: placeholder %2x%3 in a plot of %4x%5")
                                .arg(c->objectName())
                                .arg(r.width())
                                .arg(r.height())
                                .arg(c->plotAreaRect().width())
                                .arg(c->plotAreaRect().height())));
    }
}

void TestLayout::longBannerOpensPopup() {
    open(QSize(1366, 768));
    MainWindow* w = m_window.get();
    // Target missed, max_num_seqs, the context beyond the model and a format vLLM has not: four
    // items, more than the three rows the banner has.
    core::Scenario s = w->scenario();
    s.workload.context = 512;
    s.workload.maxModelLen = 256;
    s.workload.targetRequests = 100000;
    s.levers.quant.enabled = true;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int4);
    w->setScenario(s);
    QTRY_COMPARE(w->pendingReplots(), 0);
    widgets::WarningsBanner* banner = w->banner();
    const int n = static_cast<int>(banner->items().size());
    QVERIFY2(n > widgets::WarningsBanner::kInlineItems, qPrintable(banner->plainText()));
    QCOMPARE(banner->shownCount(), widgets::WarningsBanner::kInlineItems);
    QToolButton* all = banner->showAllButton();
    QVERIFY(all->isVisible());
    QCOMPARE(all->text(), QStringLiteral("Show all %1...").arg(n));
    QVERIFY(w->rect().contains(rectIn(all, w)));
    QTest::mouseClick(all, Qt::LeftButton);
    QDialog* popup = banner->popup();
    QVERIFY(popup);
    QTRY_VERIFY(popup->isVisible());
    const QString text = child<QLabel>(popup, "bannerPopupText")->text();
    for (const auto& it : banner->items())
        QVERIFY2(text.contains(it.text.toHtmlEscaped()), qPrintable(it.text));
    popup->close();
}

namespace {

// Every shown column of a table with rows is on screen whole (no horizontal scrolling to
// reach it) and its header lines fit the column (no elided header): the first problem, or "".
QString tableProblem(const QTableView* table, const QString& where) {
    const QHeaderView* header = table->horizontalHeader();
    const QAbstractItemModel* model = table->model();
    const QFontMetrics fm(header->font());
    const int viewport = table->viewport()->width();
    for (int c = 0; c < model->columnCount(); ++c) {
        if (table->isColumnHidden(c))
            continue;
        const QString title = model->headerData(c, Qt::Horizontal).toString();
        const int x = header->sectionViewportPosition(c);
        const int w = header->sectionSize(c);
        if (x < 0 || x + w > viewport + 1)
            return QStringLiteral("%1: column \"%2\" at %3..%4 of a %5 px viewport (all "
                                  "columns: %6 px)")
                .arg(where, title)
                .arg(x)
                .arg(x + w)
                .arg(viewport)
                .arg(header->length());
        for (const QString& line : title.split(QLatin1Char('\n')))
            if (fm.horizontalAdvance(line) + 8 > w)
                return QStringLiteral("%1: header \"%2\" needs %3 px in %4")
                    .arg(where, line)
                    .arg(fm.horizontalAdvance(line) + 8)
                    .arg(w);
    }
    return {};
}

// No two rectangles of `rects` overlap (1 px of antialiasing allowed).
void verifyApart(const QList<QRect>& rects, const QString& what) {
    for (qsizetype i = 0; i < rects.size(); ++i)
        for (qsizetype j = i + 1; j < rects.size(); ++j)
            QVERIFY2(!rects[i].adjusted(1, 1, -1, -1).intersects(rects[j].adjusted(1, 1, -1, -1)),
                     qPrintable(QStringLiteral("%1: %2,%3 %4x%5 overlaps %6,%7 %8x%9")
                                    .arg(what)
                                    .arg(rects[i].x())
                                    .arg(rects[i].y())
                                    .arg(rects[i].width())
                                    .arg(rects[i].height())
                                    .arg(rects[j].x())
                                    .arg(rects[j].y())
                                    .arg(rects[j].width())
                                    .arg(rects[j].height())));
}

} // namespace

void TestLayout::everyTab_data() {
    QTest::addColumn<QSize>("size");
    QTest::addRow("1366x768") << QSize(1366, 768);
    QTest::addRow("1600x1000") << QSize(1600, 1000);
}

void TestLayout::everyTab() {
    // Issue 29 item 10: on every tab of the window (whatever tabs there are), at a laptop's
    // 1366 x 768 and at 1600 x 1000, tables show every column with whole headers, the vllm
    // command keeps each line on one line, and no chart label overlaps another.
    QFETCH(QSize, size);
    open(size);
    MainWindow* w = m_window.get();
    w->deploymentPanel()->planNow(); // the Deployment tab with its plan, not "Planning..."
    QTabWidget* tabs = w->tabs();
    int tables = 0, commands = 0, charts = 0;
    for (int t = 0; t < tabs->count(); ++t) {
        tabs->setCurrentIndex(t);
        QTRY_COMPARE(w->pendingReplots(), 0);
        QCoreApplication::processEvents();
        QWidget* page = tabs->widget(t);
        const QString tab = tabs->tabText(t).remove(QLatin1Char('&'));
        for (QTableView* table : page->findChildren<QTableView*>()) {
            if (!table->isVisible() || table->model()->rowCount() == 0)
                continue;
            const QString problem =
                tableProblem(table, tab + QLatin1Char('/') + table->objectName());
            // (The ladder and the plan table hide their least needed columns to fit, and say
            // so: tst_deployment_panel, ladderHidesToFit.)
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
            ++tables;
        }
        for (QPlainTextEdit* edit : page->findChildren<QPlainTextEdit*>()) {
            if (!edit->isVisible() || !edit->toPlainText().startsWith(QLatin1String("vllm ")))
                continue;
            // Each line of the command is one line on screen (it scrolls sideways instead).
            for (QTextBlock b = edit->document()->begin(); b.isValid(); b = b.next())
                QVERIFY2(!b.layout() || b.layout()->lineCount() <= 1,
                         qPrintable(QStringLiteral("%1: \"%2\" wraps onto %3 lines")
                                        .arg(tab, b.text())
                                        .arg(b.layout()->lineCount())));
            ++commands;
        }
        for (widgets::ChartWidget* chart : page->findChildren<widgets::ChartWidget*>()) {
            if (!chart->isVisible() || chart->width() < 50)
                continue;
            const QString name = tab + QLatin1Char('/') + chart->objectName();
            QList<QRect> labels;
            for (const QList<QRect>& axis : chart->tickLabelRects()) {
                verifyApart(axis, name + QStringLiteral(" tick labels"));
                labels += axis;
            }
            // Bar and point labels: apart from each other and from the axes' labels.
            const QList<QRect> items = chart->textItemRects();
            verifyApart(items, name + QStringLiteral(" text items"));
            for (const QRect& item : items)
                for (const QRect& label : labels)
                    QVERIFY2(!item.adjusted(1, 1, -1, -1).intersects(label.adjusted(1, 1, -1, -1)),
                             qPrintable(name + QStringLiteral(": a text item overlaps a tick "
                                                              "label")));
            ++charts;
        }
    }
    // The ladder keeps its speed columns: shown, whole, on screen.
    tabs->setCurrentIndex(0);
    QTRY_COMPARE(w->pendingReplots(), 0);
    QTableView* ladder = w->ladderView();
    const QFontMetrics lfm(ladder->font());
    for (int c : {int(widgets::LadderModel::StepMsColumn),
                  int(widgets::LadderModel::TokensPerUserColumn)}) {
        QVERIFY(!ladder->isColumnHidden(c));
        for (int row = 0; row < ladder->model()->rowCount(); ++row) {
            const QString text = ladder->model()->index(row, c).data().toString();
            QVERIFY2(lfm.horizontalAdvance(text) + 8 <= ladder->columnWidth(c),
                     qPrintable(QStringLiteral("ladder \"%1\" in %2 px")
                                    .arg(text)
                                    .arg(ladder->columnWidth(c))));
        }
    }
    QVERIFY2(tables >= 2, "the ladder and the deployment plan");
    QVERIFY(commands >= 1); // the Deployment tab's, and the ladder's where it shows one
    QVERIFY(charts >= 4);
    const QString shot =
        QCoreApplication::applicationDirPath() +
        QStringLiteral("/layout-tabs-%1x%2.png").arg(size.width()).arg(size.height());
    w->grab().save(shot, "PNG");
}

// Issue 29 item 10: on a 1366 x 768 window the ladder's least needed columns (vs baseline,
// then vLLM conc.) step aside so that every other column, speed included, is whole, and the
// title names them; the column menu brings one back (the table then scrolls); wide, none hides.
void TestLayout::ladderHidesToFit_data() {
    QTest::addColumn<QSize>("size");
    QTest::addColumn<bool>("askBack"); // the user shows "vs baseline" again
    QTest::addColumn<QList<int>>("hidden");
    const int saving = widgets::LadderModel::SavingColumn;
    const int conc = widgets::LadderModel::VllmConcurrencyColumn;
    QTest::addRow("1366 x 768") << QSize(1366, 768) << false << QList<int>{saving, conc};
    QTest::addRow("1366 x 768, vs baseline asked back")
        << QSize(1366, 768) << true << QList<int>{conc};
    QTest::addRow("1920 x 1080") << QSize(1920, 1080) << false << QList<int>{};
}

void TestLayout::ladderHidesToFit() {
    QFETCH(QSize, size);
    QFETCH(bool, askBack);
    QFETCH(QList<int>, hidden);
    open(size);
    MainWindow* w = m_window.get();
    if (askBack)
        w->setLadderColumnShown(widgets::LadderModel::SavingColumn, true);
    QCoreApplication::processEvents();
    QTableView* ladder = w->ladderView();
    QList<int> actual;
    for (int c = 0; c < ladder->model()->columnCount(); ++c)
        if (ladder->isColumnHidden(c))
            actual << c;
    QVERIFY2(actual == hidden, qPrintable(QStringLiteral("hidden %1 in a %2 px ladder")
                                              .arg(actual.size())
                                              .arg(ladder->viewport()->width())));
    for (int c :
         {int(widgets::LadderModel::StepMsColumn), int(widgets::LadderModel::TokensPerUserColumn)})
        QVERIFY(!ladder->isColumnHidden(c)); // speed stays at every width
    QCOMPARE(w->ladderTitle()->text().contains(QStringLiteral("hidden to fit")), !hidden.isEmpty());
    if (!hidden.isEmpty())
        QVERIFY2(w->ladderTitle()->toolTip().contains(QStringLiteral("vLLM conc.")),
                 qPrintable(w->ladderTitle()->toolTip()));
    if (!askBack) // every column shown is whole: no sideways scrolling
        QCOMPARE(tableProblem(ladder, QStringLiteral("ladder")), QString());
}

// A scenario vLLM refuses, quoting its three-line message, plus a note: the banner is four
// lines, and a 1366 x 768 window still holds every panel (with the charts' old 220 px minimum it
// needed 782 px and the window could not be that small).
void TestLayout::tallBannerFits() {
    MainWindow* w = m_window.get();
    core::Scenario s = w->scenario();
    s.model = *io::findModel("gemma-3-27b");
    s.workload.context = 131072;
    w->setScenario(s);      // before the window is shown, as kvledger --screenshot does
    open(QSize(1366, 768)); // fails when the panels need more than the size asked
    QVERIFY(w->banner()->shownCount() >= 2);
    QVERIFY(w->rect().contains(rectIn(w->ladderView(), w)));
}

// The banner's rows are tinted by severity, over the theme's background: red for an error,
// amber for a warning, none for a note (the row painted as the window behind it).
void TestLayout::bannerTintBySeverity_data() {
    QTest::addColumn<int>("severity");
    QTest::addColumn<QString>("tint"); // "red", "amber", "none"
    QTest::addRow("error") << int(widgets::Severity::Error) << "red";
    QTest::addRow("warning") << int(widgets::Severity::Warning) << "amber";
    QTest::addRow("note") << int(widgets::Severity::Note) << "none";
}

void TestLayout::bannerTintBySeverity() {
    QFETCH(int, severity);
    QFETCH(QString, tint);
    open({1600, 1000});
    widgets::WarningsBanner* banner = m_window->banner();
    widgets::BannerItem item;
    item.severity = static_cast<widgets::Severity>(severity);
    item.kind = QStringLiteral("note");
    item.title = QStringLiteral("Title");
    item.text = QStringLiteral("short");
    banner->setItems({item});
    QCoreApplication::processEvents();
    auto* row = banner->findChild<QWidget*>(QStringLiteral("bannerRow0"));
    QVERIFY(row && row->isVisible());
    // A pixel of the row right of its short text.
    const QImage img = row->grab().toImage();
    const QColor c = img.pixelColor(img.width() - 6, img.height() / 2);
    const QColor bg = row->palette().color(QPalette::Window);
    const QString got = QStringLiteral("%1 over %2").arg(c.name(), bg.name());
    if (tint == QLatin1String("none")) {
        QCOMPARE(c.name(), bg.name());
    } else if (tint == QLatin1String("red")) {
        QVERIFY2(c.red() - c.green() > 15 && c.red() - c.blue() > 15, qPrintable(got));
    } else {
        QVERIFY2(c.red() - c.blue() > 15 && c.green() - c.blue() > 8, qPrintable(got));
    }
}

void TestLayout::commandShowsEveryLine_data() {
    QTest::addColumn<QSize>("size");
    QTest::addColumn<QString>("model"); // empty: the window's default scenario
    QTest::addColumn<int>("tp");
    for (const QSize size : {QSize(1366, 768), QSize(1600, 1000)}) {
        const QString at = QStringLiteral("%1x%2").arg(size.width()).arg(size.height());
        QTest::addRow("default %s", qPrintable(at)) << size << QString() << 0;
        QTest::addRow("Llama-3.1-70B TP 4 %s", qPrintable(at))
            << size << QStringLiteral("llama-3.1-70b") << 4;
    }
}

// The Deployment tab's `vllm serve` command, one flag per line, shows whole: every line in the
// box at once (no vertical scrolling), the box inside the window. The box used to be six lines
// tall whatever the command: the 70B plan (TP 2 x PP 3 x DP 2, eight lines) scrolled.
void TestLayout::commandShowsEveryLine() {
    QFETCH(QSize, size);
    QFETCH(QString, model);
    QFETCH(int, tp);
    MainWindow* w = m_window.get();
    if (!model.isEmpty()) {
        core::Scenario s = w->scenario();
        s.model = *io::findModel(model.toStdString());
        s.hardware.gpu = *io::findGpu("h100-80gb");
        s.hardware.gpuCount = tp;
        s.workload.context = 32768;
        s.workload.targetRequests = 50;
        w->setScenario(s);
    }
    open(size);
    widgets::DeploymentPanel* panel = w->deploymentPanel();
    w->tabs()->setCurrentWidget(panel);
    panel->planNow();
    QTRY_COMPARE(w->pendingReplots(), 0);
    QCoreApplication::processEvents();
    auto* box = child<QPlainTextEdit>(panel, "planCommandView");
    const QString text = box->toPlainText();
    QVERIFY2(text.startsWith(QLatin1String("vllm serve ")), qPrintable(text));
    const int lines = box->document()->blockCount();
    QVERIFY2(lines >= 6, qPrintable(text));        // the model, then one flag per line
    QCOMPARE(box->document()->lineCount(), lines); // no line wraps
    const int needed = lines * box->fontMetrics().lineSpacing();
    QVERIFY2(box->viewport()->height() >= needed,
             qPrintable(QStringLiteral("%1 lines need %2 px, the box shows %3 px")
                            .arg(lines)
                            .arg(needed)
                            .arg(box->viewport()->height())));
    QCOMPARE(box->verticalScrollBar()->maximum(), 0);
    QVERIFY(box->isVisible());
    QVERIFY(w->rect().contains(rectIn(box, w)));
    // The copied command is the text shown, ending in a newline as the command line prints it.
    QCOMPARE(panel->commandText(), text + QLatin1Char('\n'));
    const QString shot = QCoreApplication::applicationDirPath() +
                         QStringLiteral("/layout-deployment-%1-%2x%3.png")
                             .arg(model.isEmpty() ? QStringLiteral("default") : model)
                             .arg(size.width())
                             .arg(size.height());
    w->grab().save(shot, "PNG");
}

QTEST_MAIN(TestLayout)
#include "tst_layout.moc"
