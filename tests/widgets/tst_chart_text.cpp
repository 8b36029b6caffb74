// The window's drawing shortcuts (issue 27: a change replotted within a frame) draw what they
// replace: a chart's text copied from a TextStamp as QPainter::drawText draws it, legend entries
// sized and drawn as QCustomPlot's own, a legend re-flowed only when its columns change, and
// scenario groups drawn once per look as QGroupBox draws them. Each comparison is against the
// Qt or QCustomPlot code the shortcut stands in for, in the same process and fonts.

#include "test_helpers.h"

#include "widgets/charts/chart_text_p.h"
#include "widgets/charts/text_stamp_p.h"
#include "widgets/scenario/cached_group_box.h"
#include "widgets/scenario/scenario_panel.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QGroupBox>
#include <QImage>
#include <QScreen>
#include <QScrollArea>
#include <QTest>
#include <QVBoxLayout>

#include <algorithm>
#include <cstdlib>

using namespace kvl;

namespace {

int inkedPixels(const QImage& image) {
    int n = 0;
    for (int row = 0; row < image.height(); ++row)
        for (int col = 0; col < image.width(); ++col)
            n += qAlpha(image.pixel(col, row)) != 0 ? 1 : 0;
    return n;
}

QImage transparentImage() {
    QImage image(320, 120, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    return image;
}

// The legend's entries, in the order QCPLegend::item numbers them.
QStringList legendNames(QCPLegend* legend) {
    QStringList names;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(i)))
            names << item->plottable()->name();
    return names;
}

// A legend entry's size as QCustomPlot's layout asks it (public in QCPLayoutElement).
QSize sizeOf(QCPAbstractLegendItem* item) {
    return static_cast<QCPLayoutElement*>(item)->minimumOuterSizeHint();
}

// A scenario panel in `scroll`, sized by it as the window's is (widgetResizable), `height` tall
// (less than the panel needs, so it scrolls), shown.
widgets::ScenarioPanel* showInScrollArea(QScrollArea& scroll, int height) {
    auto* panel = new widgets::ScenarioPanel;
    scroll.setWidget(panel);
    scroll.setWidgetResizable(true);
    scroll.resize(420, height);
    scroll.show();
    return panel;
}

// Every message Qt's logging gets while it lives (qDebug included, which QTest::failOnWarning
// does not cover).
class MessageCatcher {
public:
    MessageCatcher() {
        s_caught.clear();
        m_previous = qInstallMessageHandler(
            [](QtMsgType, const QMessageLogContext&, const QString& text) { s_caught << text; });
    }
    ~MessageCatcher() { qInstallMessageHandler(m_previous); }
    MessageCatcher(const MessageCatcher&) = delete;
    MessageCatcher& operator=(const MessageCatcher&) = delete;
    QStringList caught() const { return s_caught; }

private:
    static inline QStringList s_caught;
    QtMessageHandler m_previous = nullptr;
};

} // namespace

class TestChartText : public QObject {
    Q_OBJECT
private slots:
    void stampDrawsAsDrawText_data();
    void stampDrawsAsDrawText();
    void stampCopiesUntilTextChanges();
    void stampLeavesExportsToDrawText_data();
    void stampLeavesExportsToDrawText();
    void legendItemsAsQCustomPlot();
    void legendColumns_data();
    void legendColumns();
    void groupBoxAsQGroupBox_data();
    void groupBoxAsQGroupBox();
    void groupBoxDrawnOncePerLook();
    void panelOnScreenAsDrawnAnew_data();
    void panelOnScreenAsDrawnAnew();
    void panelNeverSqueezed_data();
    void panelNeverSqueezed();
};

void TestChartText::stampDrawsAsDrawText_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("flags");
    QTest::addColumn<QRect>("rect");
    QTest::addColumn<QPointF>("move"); // the painter's translation
    QTest::addColumn<int>("pointSize");
    QTest::addRow("title, centred") << "Memory per GPU at 104 requests" << int(Qt::AlignCenter)
                                    << QRect(10, 10, 300, 30) << QPointF(0, 0) << 11;
    // QCPPainter shifts antialiased elements by half a pixel.
    QTest::addRow("title, half-pixel shift") << "KV cache: 512 MiB/request" << int(Qt::AlignCenter)
                                             << QRect(10, 10, 300, 30) << QPointF(0.5, 0.5) << 11;
    QTest::addRow("note, two lines, left")
        << "32 layers: 32 full\nBF16, paged 16" << int(Qt::AlignLeft | Qt::AlignVCenter)
        << QRect(4, 20, 280, 50) << QPointF(0.5, 0.5) << 8;
    QTest::addRow("legend entry, no clip") << "FP8 E4M3 (per-tensor scale)" << int(Qt::TextDontClip)
                                           << QRect(40, 60, 120, 16) << QPointF(0, 0) << 9;
    QTest::addRow("whole-pixel move") << "Cursor at 4K tokens" << int(Qt::AlignRight)
                                      << QRect(0, 0, 250, 20) << QPointF(7, 13) << 9;
}

void TestChartText::stampDrawsAsDrawText() {
    QFETCH(QString, text);
    QFETCH(int, flags);
    QFETCH(QRect, rect);
    QFETCH(QPointF, move);
    QFETCH(int, pointSize);
    const QFont font(QApplication::font().family(), pointSize);
    const QColor color(30, 60, 200);

    QImage direct = transparentImage();
    QRect directBounds;
    {
        QCPPainter p(&direct);
        p.translate(move);
        p.setFont(font);
        p.setPen(QPen(color));
        p.drawText(rect, flags, text, &directBounds);
    }
    QImage stamped = transparentImage();
    QRect stampBounds;
    widgets::TextStamp stamp;
    {
        QCPPainter p(&stamped);
        p.translate(move);
        QVERIFY(stamp.draw(&p, rect, flags, text, font, color, &stampBounds));
        QCOMPARE(p.transform(), QTransform::fromTranslate(move.x(), move.y())); // left as found
    }
    QVERIFY(inkedPixels(direct) > 50); // the text was drawn at all
    QCOMPARE(stampBounds, directBounds);
    // Compositing the copy may round a channel by one level; anything more is a shift.
    QVERIFY2(
        test::largestDifference(direct, stamped) <= 1,
        qPrintable(
            QStringLiteral("largest difference %1").arg(test::largestDifference(direct, stamped))));
}

void TestChartText::stampCopiesUntilTextChanges() {
    const QFont font(QApplication::font().family(), 10);
    const QRect rect(0, 0, 300, 24);
    widgets::TextStamp stamp;
    QImage image = transparentImage();
    QCPPainter p(&image);
    auto draw = [&](const QString& text, const QColor& color = Qt::black) {
        QVERIFY(stamp.draw(&p, rect, Qt::AlignCenter, text, font, color));
    };
    draw(QStringLiteral("104 requests"));
    draw(QStringLiteral("104 requests"));
    QCOMPARE(stamp.drawn(), 1);
    draw(QStringLiteral("96 requests"));
    QCOMPARE(stamp.drawn(), 2);
    draw(QStringLiteral("104 requests")); // a lever toggled back: still kept
    QCOMPARE(stamp.drawn(), 2);
    draw(QStringLiteral("96 requests"), Qt::red); // a new colour is a new picture
    QCOMPARE(stamp.drawn(), 3);
    p.translate(0.5, 0.5); // a new offset from the pixel grid too
    draw(QStringLiteral("96 requests"), Qt::red);
    QCOMPARE(stamp.drawn(), 4);
}

void TestChartText::stampLeavesExportsToDrawText_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<bool>("rotate");
    QTest::addRow("export (pmNoCaching)") << int(QCPPainter::pmNoCaching) << false;
    QTest::addRow("PDF or SVG (pmVectorized)") << int(QCPPainter::pmVectorized) << false;
    QTest::addRow("rotated") << int(QCPPainter::pmDefault) << true;
}

void TestChartText::stampLeavesExportsToDrawText() {
    QFETCH(int, mode);
    QFETCH(bool, rotate);
    QImage image = transparentImage();
    QCPPainter p(&image);
    p.setModes(QCPPainter::PainterModes(mode));
    if (rotate)
        p.rotate(90);
    widgets::TextStamp stamp;
    QVERIFY(!stamp.draw(&p, QRect(0, 0, 200, 20), Qt::AlignLeft, QStringLiteral("Title"),
                        QApplication::font(), Qt::black));
    QCOMPARE(stamp.drawn(), 0);
    QCOMPARE(inkedPixels(image), 0);
}

void TestChartText::legendItemsAsQCustomPlot() {
    // Two identical plots; one's legend entries become CachedLegendItems.
    const QStringList names = {QStringLiteral("BF16 (reference)"),
                               QStringLiteral("FP8 E4M3, paged 16"),
                               QStringLiteral("INT4 per-token-head")};
    QCustomPlot theirs, ours;
    for (QCustomPlot* p : {&theirs, &ours}) {
        p->resize(480, 300);
        p->legend->setVisible(true);
        for (int i = 0; i < names.size(); ++i) {
            QCPGraph* g = p->addGraph();
            g->setName(names[i]);
            g->setPen(QPen(QColor::fromHsv(90 * i, 200, 200), 2));
            g->setData({1, 2, 3}, {double(i), double(i + 1), double(i)});
        }
        p->rescaleAxes();
    }
    widgets::useCachedLegendItems(ours.legend);
    QCOMPARE(legendNames(ours.legend), names);
    for (int i = 0; i < names.size(); ++i) {
        QVERIFY(dynamic_cast<widgets::CachedLegendItem*>(ours.legend->item(i)));
        QVERIFY(!dynamic_cast<widgets::CachedLegendItem*>(theirs.legend->item(i)));
        QCOMPARE(sizeOf(ours.legend->item(i)), sizeOf(theirs.legend->item(i)));
    }
    // QCustomPlot's own lookups still find them.
    QVERIFY(ours.legend->hasItemWithPlottable(ours.graph(1)));
    // The same picture, replotted to the screen buffer (the path the cache takes).
    theirs.replot();
    ours.replot();
    QVERIFY2(test::largestDifference(theirs.grab().toImage(), ours.grab().toImage()) <= 1,
             "the cached legend draws otherwise");
    // A renamed graph: the entry is sized anew.
    theirs.graph(0)->setName(QStringLiteral("BF16, a much longer name than before"));
    ours.graph(0)->setName(QStringLiteral("BF16, a much longer name than before"));
    QCOMPARE(sizeOf(ours.legend->item(0)), sizeOf(theirs.legend->item(0)));
    theirs.replot();
    ours.replot();
    QVERIFY(test::largestDifference(theirs.grab().toImage(), ours.grab().toImage()) <= 1);
    // Removing a graph removes its entry, as it does for QCustomPlot's own.
    ours.removeGraph(1);
    QCOMPARE(legendNames(ours.legend),
             (QStringList{QStringLiteral("BF16, a much longer name than before"), names[2]}));
}

void TestChartText::legendColumns_data() {
    QTest::addColumn<int>("entries");
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("columns"); // expected: as many as fit, at most three
    QTest::addRow("wide: three") << 7 << 2000 << 3;
    QTest::addRow("narrow: one") << 4 << 60 << 1;
    QTest::addRow("fewer entries than columns") << 2 << 2000 << 2;
}

void TestChartText::legendColumns() {
    QFETCH(int, entries);
    QFETCH(int, width);
    QFETCH(int, columns);
    QCustomPlot p;
    QStringList names;
    for (int i = 0; i < entries; ++i) {
        names << QStringLiteral("Series %1").arg(i);
        p.addGraph()->setName(names.back());
    }
    widgets::fitLegendColumns(p.legend, width);
    QCOMPARE(p.legend->columnCount(), columns);
    QCOMPARE(p.legend->rowCount(), (entries + columns - 1) / columns);
    QCOMPARE(legendNames(p.legend), names); // row by row, in order
    for (int i = 0; i < entries; ++i)
        QCOMPARE(p.legend->element(i / columns, i % columns), p.legend->item(i));
    // Fitted again at the same width: nothing moves (no re-flow).
    QCPLayoutElement* first = p.legend->element(0, 0);
    widgets::fitLegendColumns(p.legend, width);
    QCOMPARE(p.legend->element(0, 0), first);
    QCOMPARE(p.legend->columnCount(), columns);
    // The entries become cached ones in the same cells, and the last row's empty cells are
    // passed over without QCustomPlot's "Requested cell is empty" debug line (it went to the
    // terminal twice per change).
    QList<QCPLayoutElement*> before;
    for (int i = 0; i < entries; ++i)
        before << p.legend->element(i / columns, i % columns);
    {
        const MessageCatcher messages;
        widgets::useCachedLegendItems(p.legend);
        QCOMPARE(messages.caught(), QStringList());
    }
    QCOMPARE(legendNames(p.legend), names);
    for (int i = 0; i < entries; ++i) {
        QCPLayoutElement* cell = p.legend->element(i / columns, i % columns);
        QVERIFY(dynamic_cast<widgets::CachedLegendItem*>(cell));
        QVERIFY(cell != before[i]);
    }
    // A narrower chart: one column, still in order.
    widgets::fitLegendColumns(p.legend, 40);
    QCOMPARE(p.legend->columnCount(), 1);
    QCOMPARE(p.legend->rowCount(), entries);
    QCOMPARE(legendNames(p.legend), names);
}

void TestChartText::groupBoxAsQGroupBox_data() {
    QTest::addColumn<QString>("title");
    QTest::addColumn<bool>("checkable");
    QTest::addColumn<bool>("checked");
    QTest::addRow("lever, on") << "2  KV format: quantization" << true << true;
    QTest::addRow("lever, off") << "2  KV format: quantization" << true << false;
    QTest::addRow("plain group") << "Engine and reserves" << false << false;
    QTest::addRow("no title") << "" << false << false;
}

void TestChartText::groupBoxAsQGroupBox() {
    QFETCH(QString, title);
    QFETCH(bool, checkable);
    QFETCH(bool, checked);
    QWidget window;
    auto* layout = new QVBoxLayout(&window);
    auto* theirs = new QGroupBox(title);
    auto* ours = new widgets::CachedGroupBox(title);
    for (QGroupBox* g : {static_cast<QGroupBox*>(theirs), static_cast<QGroupBox*>(ours)}) {
        g->setCheckable(checkable);
        if (checkable)
            g->setChecked(checked);
        g->setFixedSize(300, 90);
        layout->addWidget(g);
    }
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    // As the window shows them: the group on the window's background.
    const QImage a = window.grab(theirs->geometry()).toImage();
    const QImage b = window.grab(ours->geometry()).toImage();
    QCOMPARE(test::largestDifference(a, b), 0);
    QVERIFY(ours->drawnByStyle() >= 1);
}

void TestChartText::groupBoxDrawnOncePerLook() {
    QWidget window;
    window.resize(400, 400);
    auto* group = new widgets::CachedGroupBox(QStringLiteral("3  Paging"), &window);
    group->setCheckable(true);
    group->setGeometry(10, 10, 300, 80);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    // Opaque, so that a move is a copy of its pixels, not a repaint.
    QVERIFY(group->autoFillBackground());
    // (Qt moves a widget's pixels only if it is opaque: filled with an opaque brush.)
    QVERIFY(group->palette().brush(group->backgroundRole()).isOpaque());
    group->repaint();
    const int drawn = group->drawnByStyle();
    QVERIFY(drawn >= 1);
    group->move(10, 120); // moved: the same picture
    group->repaint();
    QCOMPARE(group->drawnByStyle(), drawn);
    group->setChecked(false); // a new look: drawn again
    group->repaint();
    QCOMPARE(group->drawnByStyle(), drawn + 1);
    group->setChecked(true); // toggled back and forth: both looks are kept
    group->repaint();
    group->setChecked(false);
    group->repaint();
    QCOMPARE(group->drawnByStyle(), drawn + 1);
    group->resize(320, 80);
    group->repaint();
    QCOMPARE(group->drawnByStyle(), drawn + 2);
    group->setTitle(QStringLiteral("3  Paging (vLLM)"));
    group->repaint();
    QCOMPARE(group->drawnByStyle(), drawn + 3);
    group->repaint(); // nothing changed
    QCOMPARE(group->drawnByStyle(), drawn + 3);
}

void TestChartText::panelOnScreenAsDrawnAnew_data() {
    QTest::addColumn<QStringList>("toggles"); // levers switched in turn, each then painted
    QTest::addRow("KV format on and off") << QStringList{"quantGroup", "quantGroup"};
    QTest::addRow("KV format, then paging") << QStringList{"quantGroup", "pagingGroup"};
    QTest::addRow("every lever") << QStringList{"attentionGroup", "quantGroup", "pagingGroup",
                                                "prefixGroup", "attentionGroup"};
}

void TestChartText::panelOnScreenAsDrawnAnew() {
    // The scenario panel paints incrementally: its groups are opaque, so a group that a lever
    // above only moves is moved as pixels (QWidgetPrivate::moveRect), not repainted. What is on
    // the screen after the levers are toggled must be what drawing the whole panel anew gives.
    // The panel has WA_StaticContents: when its height changes, only what is new is painted.
    QFETCH(QStringList, toggles);
    QScrollArea scroll;
    widgets::ScenarioPanel* panel = showInScrollArea(scroll, 760);
    QVERIFY(QTest::qWaitForWindowExposed(&scroll));
    QScreen* screen = scroll.screen();
    // In the first window a process shows, the slider on the screen differs from a fresh
    // render before any lever is touched (its tick marks' colour, from the window's first
    // show); repainting the slider clears it. So the comparison starts from a panel that is
    // on the screen as drawn anew, and what follows checks the levers' painting alone.
    QTest::qWait(50);
    panel->findChild<QWidget*>(QStringLiteral("contextSlider"))->update();
    QTest::qWait(50);
    QCOMPARE(test::largestDifference(screen->grabWindow(scroll.winId()).toImage(),
                                     scroll.grab().toImage()),
             0);
    // The workload group sits above every lever: a toggle that changes the panel's height
    // must not repaint it (without WA_StaticContents the resized panel was repainted whole).
    test::PaintCounter workloadPaints;
    auto* workload = panel->findChild<QWidget*>(QStringLiteral("workloadGroup"));
    QVERIFY(workload);
    workload->installEventFilter(&workloadPaints);
    for (QWidget* w : workload->findChildren<QWidget*>())
        w->installEventFilter(&workloadPaints);
    for (const QString& name : toggles) {
        auto* lever = panel->findChild<QGroupBox*>(name);
        QVERIFY2(lever, qPrintable(name));
        const int heightBefore = panel->height();
        lever->setChecked(!lever->isChecked());
        // The layout, the moves, the scroll bar's new range and the partial repaints, each
        // queued by the one before.
        QTest::qWait(50);
        QVERIFY2(panel->height() != heightBefore, qPrintable(name)); // the panel was resized
        QCOMPARE(workloadPaints.paints, 0);
        workloadPaints.counting = false;
        const QImage onScreen = screen->grabWindow(scroll.winId()).toImage();
        const QImage anew = scroll.grab().toImage();
        QCOMPARE(onScreen.size(), anew.size());
        QVERIFY2(test::largestDifference(onScreen, anew) == 0, qPrintable(name));
        workloadPaints.counting = true;
    }
}

void TestChartText::panelNeverSqueezed_data() {
    QTest::addColumn<int>("engine"); // the engine combo's index: each shows its own rows
    for (int i = 0; i < 4; ++i)
        QTest::addRow("engine %d", i) << i;
}

void TestChartText::panelNeverSqueezed() {
    // In a scroll area that sizes it, the panel is laid out at the height its groups need on
    // the first pass: a KV dtype or lever change that adds a row must not leave the fields at
    // the bottom squeezed below their minimum for a frame (they were: the engine group's spin
    // boxes at 14 px, then laid out and painted again once the area had resized the panel).
    QFETCH(int, engine);
    QScrollArea scroll;
    widgets::ScenarioPanel* panel = showInScrollArea(scroll, 600);
    QVERIFY(QTest::qWaitForWindowExposed(&scroll));
    panel->findChild<QComboBox*>(QStringLiteral("engineCombo"))->setCurrentIndex(engine);
    QTest::qWait(20);
    auto* quant = panel->findChild<QGroupBox*>(QStringLiteral("quantGroup"));
    auto* dtype = panel->findChild<QComboBox*>(QStringLiteral("kvDtypeCombo"));
    QVERIFY(quant && dtype);
    auto squeezed = [&] {
        QStringList out;
        for (QWidget* w : panel->findChildren<QWidget*>())
            if (w->isVisible() &&
                (qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QComboBox*>(w)) &&
                w->height() < w->minimumSizeHint().height())
                out << QStringLiteral("%1 %2 < %3")
                           .arg(w->objectName())
                           .arg(w->height())
                           .arg(w->minimumSizeHint().height());
        return out;
    };
    for (int step = 0; step < 2 * dtype->count() + 2; ++step) {
        if (step % (dtype->count() + 1) == 0)
            quant->setChecked(!quant->isChecked());
        else
            dtype->setCurrentIndex((dtype->currentIndex() + 1) % dtype->count());
        QCoreApplication::processEvents(); // one pass: the layout requests, then the paint
        QCOMPARE(squeezed(), QStringList());
    }
}

QTEST_MAIN(TestChartText)
#include "tst_chart_text.moc"
