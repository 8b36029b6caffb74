// kvledger paints its own pixels (app/raster_fills.cpp): with every thread of Qt's pool busy, a
// large translucent fill, smooth scale or widget paint on the GUI thread finishes at once,
// where Qt's default hands it to the pool and waits for a thread to come free.

#include "raster_fills.h"

#include <QGroupBox>
#include <QImage>
#include <QPainter>
#include <QScrollBar>
#include <QSemaphore>
#include <QThread>
#include <QThreadPool>
#include <QtTest>

#include <atomic>
#include <functional>

class TestRasterFills : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void paintsWhilePoolBusy_data();
    void paintsWhilePoolBusy();
    void forwardsOtherQuestions();
};

namespace {

// The paints, each large enough for Qt to split it (96 rows or more).
using Paint = std::function<void()>;

QImage translucent(int w, int h) {
    QImage img(w, h, QImage::Format_ARGB32_Premultiplied);
    img.fill(QColor(200, 40, 40, 120));
    return img;
}

} // namespace

// After QApplication here (QTEST_MAIN), before it in kvledger: QtGui asks at each fill, so
// either order holds for Qt 6.4.
void TestRasterFills::initTestCase() {
    if (qEnvironmentVariableIntValue("KVL_QT_PARALLEL_FILLS") == 1)
        QWARN("KVL_QT_PARALLEL_FILLS=1: Qt's default is kept, paintsWhilePoolBusy fails");
    kvl::app::keepRasterFillsSerial();
}

void TestRasterFills::paintsWhilePoolBusy_data() {
    QTest::addColumn<Paint>("paint");
    QTest::newRow("translucent fill, 1000 rows") << Paint([] {
        QImage img(1000, 1000, QImage::Format_ARGB32_Premultiplied);
        img.fill(Qt::white);
        QPainter p(&img);
        p.fillRect(img.rect(), QColor(0, 0, 255, 128));
    });
    QTest::newRow("smooth scale") << Paint([] {
        const QImage big = translucent(400, 400).scaled(1600, 1600, Qt::IgnoreAspectRatio,
                                                        Qt::SmoothTransformation);
        QVERIFY(!big.isNull());
    });
    QTest::newRow("scroll bar, 900 px") << Paint([] {
        QScrollBar bar(Qt::Vertical);
        bar.resize(16, 900);
        QVERIFY(!bar.grab().isNull());
    });
    QTest::newRow("group box, 900 px") << Paint([] {
        QGroupBox box(QStringLiteral("Quantization"));
        box.setCheckable(true);
        box.resize(400, 900);
        QVERIFY(!box.grab().isNull());
    });
}

// Every thread of the global pool waits (at most 3 s) for a release given after the paint. A
// paint handed to the pool cannot start before those threads give up, so they find no release
// and the count comes out short.
void TestRasterFills::paintsWhilePoolBusy() {
    QFETCH(Paint, paint);
    QThreadPool* pool = QThreadPool::globalInstance();
    const int threads = pool->maxThreadCount();
    QSemaphore started;
    QSemaphore release;
    std::atomic<int> released{0};
    for (int i = 0; i < threads; ++i)
        pool->start([&] {
            started.release();
            if (release.tryAcquire(1, 3000))
                ++released;
        });
    QVERIFY(started.tryAcquire(threads, 10000));
    paint();
    release.release(threads);
    pool->waitForDone();
    QCOMPARE(released.load(), threads);
}

// Any question but "is the asking thread the pool's?" still gets Qt's answer.
void TestRasterFills::forwardsOtherQuestions() {
    QThreadPool* pool = QThreadPool::globalInstance();
    QThread outsider;
    QVERIFY(!pool->contains(&outsider));
    QSemaphore inside;
    QSemaphore done;
    std::atomic<QThread*> member{nullptr};
    pool->start([&] {
        member = QThread::currentThread();
        inside.release();
        done.acquire();
    });
    QVERIFY(inside.tryAcquire(1, 10000));
    // Asked while the member runs: waitForDone() deletes the pool's threads.
    const bool answered = pool->contains(member.load());
    QThreadPool other;
    const bool strangerAnswered = other.contains(member.load());
    done.release();
    pool->waitForDone();
    QVERIFY(answered);
    QVERIFY(!strangerAnswered);
    // The GUI thread paints serially: to QtGui it answers as a pool thread.
    QVERIFY(pool->contains(QThread::currentThread()));
}

QTEST_MAIN(TestRasterFills)
#include "tst_raster_fills.moc"
