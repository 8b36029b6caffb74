#include "raster_fills.h"

#include <QThread>
#include <QThreadPool>
#include <QtGlobal>

#include <atomic>
#include <bit>

#if defined(__ELF__) && !defined(QT_STATIC)
#include <dlfcn.h>
#endif

// Why: Qt's raster engine hands each fill of 96 or more spans (a widget's background, a scroll
// bar's groove, a group box's frame) to a thread pool in segments of 64 rows and blocks until
// they are done (QT_THREAD_PARALLEL_FILLS in qtbase's src/gui/painting/qdrawhelper.cpp;
// QImage's smooth scaling does the same). For the widget-sized fills of a change that costs
// more than the fill: a wake-up of each pool thread and of the GUI thread, each a context
// switch, several times per widget painted. On the 2-core VM, three bench_replot runs in turn
// with each gave change -> window painted p95 5.5-6.1 ms against 6.8-7.6 ms with Qt's pool
// (docs/measurements.md). And Qt 6.4 uses the global pool, which the Deployment tab's planner
// runs on too: while planner runs held all its threads, a paint would wait for one of them to
// finish a GPU kind.
//
// Newer Qt (QThreadPoolPrivate::qtGuiInstance in qthreadpool.cpp) has a pool of its own for
// this, which QT_NO_GUI_THREADPOOL turns off. Qt 6.4 (Debian 12's) has no such switch; there,
// each fill asks the pool whether the calling thread is one of its own
// (QThreadPool::contains(QThread::currentThread())) and, if it is, fills on that thread. The
// definition below answers yes for the thread that asks about itself while serial fills are
// in force, and forwards every other question to Qt's own definition. Only QtGui calls
// QThreadPool::contains among the libraries kvledger loads, and only to make that choice.

namespace {

std::atomic<bool> g_serial{false};

} // namespace

namespace kvl::app {

bool keepRasterFillsSerial() {
    if (qEnvironmentVariableIntValue("KVL_QT_PARALLEL_FILLS") == 1)
        return false;
    if (qEnvironmentVariableIsEmpty("QT_NO_GUI_THREADPOOL"))
        qputenv("QT_NO_GUI_THREADPOOL", "1");
    g_serial.store(true, std::memory_order_relaxed);
    return true;
}

bool rasterFillsSerial() {
    return g_serial.load(std::memory_order_relaxed);
}

} // namespace kvl::app

#if defined(__ELF__) && !defined(QT_STATIC)
// An executable's definition comes before the shared library's in the dynamic linker's
// search order, so QtGui's calls arrive here; RTLD_NEXT finds QtCore's.
bool QThreadPool::contains(const QThread* thread) const {
    if (g_serial.load(std::memory_order_relaxed) && thread == QThread::currentThread())
        return true;
    using Contains = bool (*)(const QThreadPool*, const QThread*);
    static const auto qtContains =
        std::bit_cast<Contains>(dlsym(RTLD_NEXT, "_ZNK11QThreadPool8containsEPK7QThread"));
    return qtContains != nullptr && qtContains(this, thread);
}
#endif
