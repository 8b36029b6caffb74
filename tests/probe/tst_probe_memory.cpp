// The probe's memory guard: the one estimate of a run's peak against the peak resident set a
// run really reaches (measured in a child process: VmHWM after resetting it), a shape that
// cannot fit refused before anything is allocated, with the figures, and the cgroup reader.
#include "gpu_probe/run/memory_guard.h"
#include "gpu_probe/run/probe.h"

#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <malloc.h>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kvl;
using namespace kvl::probe;

namespace {

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); -1 when absent.
std::int64_t statusBytes(const char* field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    const std::string key = std::string(field) + ":";
    while (std::getline(in, line))
        if (line.compare(0, key.size(), key) == 0)
            return std::int64_t(std::atoll(line.c_str() + key.size())) * 1024;
    return -1;
}

// Resets VmHWM to the current resident set (proc(5), /proc/pid/clear_refs: "5").
bool resetPeak() {
    std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
    if (!f)
        return false;
    const bool ok = std::fputs("5", f) >= 0;
    return std::fclose(f) == 0 && ok;
}

struct Peak {
    bool ok = false;
    std::string error;
    std::int64_t increase = 0; // peak RSS minus RSS before the run
};

// Runs the plan in a forked child, so this process's earlier tests and heap do not blur the
// figure, and reports the child's peak resident-set increase.
Peak measurePeak(const ProbePlan& plan) {
    int fds[2];
    if (pipe(fds) != 0)
        return {false, "pipe failed", 0};
    const pid_t pid = fork();
    if (pid < 0)
        return {false, "fork failed", 0};
    if (pid == 0) {
        close(fds[0]);
        std::int64_t out[3] = {0, 0, 0};
        // Pages touched are what the estimate counts. With transparent huge pages set to
        // "always" (some CI kernels) the kernel backs each touched 4 KiB with 2 MiB, and the
        // peak then measures the kernel's policy, not the probe: 0.66 GB for 0.50 GB touched
        // was seen. prctl(2) PR_SET_THP_DISABLE turns that off for this child only.
        prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
        // glibc raises its mmap threshold each time a large mapped block is freed (mallopt(3),
        // M_MMAP_THRESHOLD), and this child inherits whatever the earlier rows left. Above it,
        // big buffers come from per-thread arenas, and how they fragment depends on thread
        // timing: a CI run once measured 3.08 GB for 2.67 GB of buffers. A fixed threshold gives
        // each large buffer its own mapping, so the figure is the probe's, not the allocator's.
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        if (resetPeak()) {
            const std::int64_t before = statusBytes("VmRSS");
            const ProbeResult result = runProbe(plan);
            out[0] = result.ok() ? 1 : 2;
            out[1] = before;
            out[2] = statusBytes("VmHWM");
        }
        const ssize_t written = write(fds[1], out, sizeof out);
        _exit(written == ssize_t(sizeof out) ? 0 : 1);
    }
    close(fds[1]);
    std::int64_t in[3] = {0, 0, 0};
    const ssize_t got = read(fds[0], in, sizeof in);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != ssize_t(sizeof in) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return {false, "the child did not report (killed?)", 0};
    if (in[0] == 0)
        return {false, "cannot reset VmHWM (/proc/self/clear_refs)", 0};
    if (in[0] == 2)
        return {false, "the run failed in the child", 0};
    return {true, {}, in[2] - in[1]};
}

core::ModelSpec llama() {
    return defaultModel();
}

void writeFile(const QString& path, const QByteArray& text) {
    QDir().mkpath(QFileInfo(path).path());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QCOMPARE(f.write(text), qint64(text.size()));
}

} // namespace

class TestProbeMemory : public QObject {
    Q_OBJECT
private slots:
    void estimateTracksMeasuredPeak_data() {
        QTest::addColumn<QString>("format");
        QTest::addColumn<int>("block");
        QTest::addColumn<int>("batch");
        QTest::addColumn<qint64>("context");
        QTest::addColumn<bool>("speed");
        QTest::addColumn<bool>("checkStore");
        // The case: estimated at 0.1 GB before, it peaked at 2.97 GB (the stream K/V).
        // 32 requests rather than the 128 keep the row to seconds in CI; the stream K/V
        // still outweighs the pages 8 to 1, which is what the row is about.
        QTest::addRow("int2-kivi B32 32 x 4096")
            << "int2-kivi" << 32 << 32 << qint64(4096) << false << false;
        QTest::addRow("fp16 B16 8 x 4096 with speed (copy yardstick)")
            << "fp16" << 16 << 8 << qint64(4096) << true << false;
        QTest::addRow("int8 B16 32 x 2048 quality only")
            << "int8" << 16 << 32 << qint64(2048) << false << false;
        QTest::addRow("fp8 B16 4 x 16384 quality only")
            << "fp8_e4m3" << 16 << 4 << qint64(16384) << false << false;
        QTest::addRow("int4-g32 B32 4 x 8192 store check")
            << "int4-g32" << 32 << 4 << qint64(8192) << false << true;
    }
    void estimateTracksMeasuredPeak() {
        QFETCH(QString, format);
        QFETCH(int, block);
        QFETCH(int, batch);
        QFETCH(qint64, context);
        QFETCH(bool, speed);
        QFETCH(bool, checkStore);
        ProbePlan plan;
        plan.model = llama();
        plan.format = parseProbeFormat(format.toStdString()).value();
        plan.blockSize = block;
        plan.batch = batch;
        plan.context = context;
        plan.measureSpeed = speed;
        plan.warmup = 0;
        plan.repeats = 1;
        plan.qualityRequests = 1;
        plan.checkStore = checkStore;
        plan.seed = 5;
        const auto estimate = estimatePeakHostBytes(plan);
        QVERIFY2(estimate.ok(), estimate ? "" : estimate.error().message.c_str());
        const Peak peak = measurePeak(plan);
        if (!peak.ok && peak.error.find("clear_refs") != std::string::npos)
            QSKIP("this kernel cannot reset VmHWM (/proc/self/clear_refs)");
        QVERIFY2(peak.ok, peak.error.c_str());
        const double ratio = double(*estimate) / double(peak.increase);
        qInfo("%s: estimate %.3f GB, measured peak increase %.3f GB (ratio %.3f)",
              qPrintable(format), double(*estimate) / 1e9, double(peak.increase) / 1e9, ratio);
        QVERIFY2(ratio > 0.8 && ratio < 1.2, qPrintable(QString::number(ratio)));
    }

    // The other case: batch 4096 x 1200 touches about 24 GB. Refused with the figures,
    // before anything is allocated (no stage after planning is reported, the RSS does not grow).
    void hugeShapeRefusedBeforeAllocating() {
        ProbePlan plan;
        plan.model = llama();
        plan.format = parseProbeFormat("int2-kivi").value();
        plan.blockSize = 32;
        plan.batch = 4096;
        plan.context = 1200;
        plan.hostMemoryLimitBytes = 22'500'000'000;
        const auto estimate = estimatePeakHostBytes(plan);
        QVERIFY(estimate.ok());
        // Stream K/V 20.1 GB, pool 3.8 GB and its copy yardstick 3.8 GB, and the rest.
        QVERIFY2(*estimate > 27'000'000'000 && *estimate < 29'000'000'000,
                 qPrintable(QString::number(double(*estimate) / 1e9)));
        std::vector<std::string> stages;
        const std::int64_t rssBefore = statusBytes("VmRSS");
        const auto start = std::chrono::steady_clock::now();
        const ProbeResult result =
            runProbe(plan, [&](double, const std::string& stage) { stages.push_back(stage); });
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        QCOMPARE(result.status, ProbeStatus::Failed);
        QCOMPARE(result.error.code, ErrorCode::OutOfMemory);
        char expected[80];
        std::snprintf(expected, sizeof expected, "needs %.1f GB of host memory, 22.5 GB available",
                      double(*estimate) / 1e9);
        QVERIFY2(result.error.message.find(expected) == 0, result.error.message.c_str());
        QCOMPARE(stages, std::vector<std::string>{"planning"});
        QVERIFY2(statusBytes("VmRSS") - rssBefore < (std::int64_t(64) << 20),
                 "the refused run allocated");
        QVERIFY2(ms < 1000, qPrintable(QString::number(ms)));
        // Without an explicit limit: a shape no machine holds, against the system's figure.
        plan.hostMemoryLimitBytes = 0;
        plan.context = std::int64_t(1) << 24;
        const ProbeResult real = runProbe(plan);
        QCOMPARE(real.error.code, ErrorCode::OutOfMemory);
        QVERIFY2(real.error.message.find("needs ") == 0, real.error.message.c_str());
    }

    void refusalNamesTheFigures_data() {
        QTest::addColumn<qint64>("need");
        QTest::addColumn<qint64>("available");
        QTest::addColumn<QString>("message"); // empty: fits
        QTest::addRow("fits") << qint64(1000) << qint64(1000) << QString();
        QTest::addRow("unknown availability fits") << qint64(1) << qint64(-1) << QString();
        QTest::addRow("24.1 GB of 22.5 GB") << qint64(24'100'000'000) << qint64(22'500'000'000)
                                            << "needs 24.1 GB of host memory, 22.5 GB available";
        QTest::addRow("one byte over") << qint64(1'000'000'001) << qint64(1'000'000'000)
                                       << "needs 1.0 GB of host memory, 1.0 GB available";
    }
    void refusalNamesTheFigures() {
        QFETCH(qint64, need);
        QFETCH(qint64, available);
        QFETCH(QString, message);
        const Status fits = checkMemoryFits(need, available);
        QCOMPARE(fits.ok(), message.isEmpty());
        if (!fits) {
            QCOMPARE(fits.error().code, ErrorCode::OutOfMemory);
            QVERIFY2(QString::fromStdString(fits.error().message).startsWith(message),
                     fits.error().message.c_str());
        }
    }

    // The estimate's arithmetic saturates: an absurd shape reads as "too much", never wraps.
    void estimateSaturates() {
        RunShape shape;
        shape.kvHeads = 1024;
        shape.qHeads = 1024;
        shape.headDim = 1024;
        shape.batch = 4096;
        shape.dataRows = shape.dataRowsHeld = std::int64_t(1) << 40;
        shape.streamRows = std::int64_t(1) << 50;
        shape.pages = std::int64_t(1) << 40;
        shape.pageBytes = std::int64_t(1) << 40;
        const MemoryEstimate estimate = estimateRunMemory(shape);
        QCOMPARE(estimate.hostBytes, std::numeric_limits<std::int64_t>::max());
        QVERIFY(!checkMemoryFits(estimate.hostBytes, std::int64_t(1) << 50));
    }

    void cgroupRoom_data() {
        QTest::addColumn<QByteArray>("procCgroup");
        QTest::addColumn<QStringList>("files"); // path=content
        QTest::addColumn<qint64>("room");
        // v2: min over the cgroup and its ancestors of max - (current - inactive_file).
        QTest::addRow("v2 with a limit and file cache")
            << QByteArray("0::/app/probe\n")
            << QStringList{"cgroup.controllers=memory",
                           "app/probe/memory.max=1000000000",
                           "app/probe/memory.current=400000000",
                           "app/probe/memory.stat=anon 300000000\ninactive_file 100000000\n",
                           "app/memory.max=max",
                           "app/memory.current=900000000"}
            << qint64(700'000'000);
        QTest::addRow("v2 parent tighter")
            << QByteArray("0::/app/probe\n")
            << QStringList{"cgroup.controllers=memory", "app/probe/memory.max=max",
                           "app/probe/memory.current=1", "app/memory.max=500000000",
                           "app/memory.current=200000000"}
            << qint64(300'000'000);
        QTest::addRow("v2 without limits")
            << QByteArray("0::/\n") << QStringList{"cgroup.controllers=memory", "memory.current=5"}
            << qint64(-1);
        QTest::addRow("v1 limit_in_bytes")
            << QByteArray("12:pids:/x\n4:memory:/job\n0::/\n")
            << QStringList{"memory/job/memory.limit_in_bytes=2000000000",
                           "memory/job/memory.usage_in_bytes=1500000000",
                           "memory/job/memory.stat=cache 1\ntotal_inactive_file 500000000\n",
                           "memory/memory.limit_in_bytes=9223372036854771712",
                           "memory/memory.usage_in_bytes=1"}
            << qint64(1'000'000'000);
        QTest::addRow("v1 unlimited (LONG_MAX rounded to a page)")
            << QByteArray("4:memory:/\n")
            << QStringList{"memory/memory.limit_in_bytes=9223372036854771712",
                           "memory/memory.usage_in_bytes=4006125568"}
            << qint64(-1);
        QTest::addRow("usage above the limit leaves no room")
            << QByteArray("0::/a\n")
            << QStringList{"cgroup.controllers=memory", "a/memory.max=100", "a/memory.current=150"}
            << qint64(0);
    }
    void cgroupRoom() {
        QFETCH(QByteArray, procCgroup);
        QFETCH(QStringList, files);
        QFETCH(qint64, room);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString mount = dir.filePath(QStringLiteral("cgroup"));
        QDir().mkpath(mount);
        writeFile(dir.filePath(QStringLiteral("self-cgroup")), procCgroup);
        for (const QString& file : files) {
            const int eq = int(file.indexOf(QLatin1Char('=')));
            writeFile(mount + QLatin1Char('/') + file.left(eq), file.mid(eq + 1).toUtf8());
        }
        QCOMPARE(cgroupAvailableBytes(dir.filePath(QStringLiteral("self-cgroup")).toStdString(),
                                      mount.toStdString()),
                 std::int64_t(room));
    }

    void memAvailableIsRead() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("meminfo"));
        writeFile(path, "MemTotal:       24000000 kB\nMemFree:  100 kB\n"
                        "MemAvailable:   21973568 kB\nBuffers: 1 kB\n");
        QCOMPARE(memAvailableBytes(path.toStdString()), std::int64_t(21973568) * 1024);
        QCOMPARE(memAvailableBytes(dir.filePath(QStringLiteral("none")).toStdString()),
                 std::int64_t(-1));
        QVERIFY(hostAvailableBytes() > 0); // this machine reports something
    }
};

QTEST_GUILESS_MAIN(TestProbeMemory)
#include "tst_probe_memory.moc"
