// The probe on the CPU backend: each operation against its FP64 reference for every format,
// error bounds per format, the block manager, memory against core, cancellation, bad input.
#include "core/io/json.h"
#include "core/ledger.h"
#include "gpu_probe/cpu/cpu_ops.h"
#include "gpu_probe/cpu/cpu_simd.h"
#include "gpu_probe/cpu/read_stream.h"
#include "gpu_probe/io/npy.h"
#include "gpu_probe/io/probe_json.h"
#include "gpu_probe/kv_quant.h"
#include "gpu_probe/ops.h"
#include "gpu_probe/reference.h"
#include "gpu_probe/run/block_manager.h"
#include "gpu_probe/run/probe.h"
#include "gpu_probe/run/synth.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <new>
#include <stdexcept>
#include <thread>

using namespace kvl;
using namespace kvl::probe;

namespace {

// One attention layer; the shape kvprobe check draws its models in.
core::ModelSpec smallLayer(int qHeads = 16, int kvHeads = 4, int headDim = 128) {
    return checkModel(qHeads, kvHeads, headDim);
}

ProbeFormat fmt(const char* id) {
    auto f = parseProbeFormat(id);
    if (!f)
        qFatal("%s", f.error().message.c_str());
    return *f;
}

ProbePlan quickPlan(const char* format) {
    ProbePlan p;
    p.model = smallLayer();
    p.format = fmt(format);
    p.blockSize = 32;
    p.contexts = {700, 1033, 517};
    p.prefixTokens = 300;
    p.measureSpeed = false;
    p.qualityRequests = 3;
    p.checkStore = true;
    p.seed = 42;
    return p;
}

// A v1.0 .npy with a hand-written header (no padding rules enforced by the reader).
std::vector<std::uint8_t> npyWithHeader(const std::string& header, std::size_t dataBytes) {
    std::vector<std::uint8_t> out(10 + header.size() + dataBytes, 0);
    const std::uint8_t magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    std::memcpy(out.data(), magic, 8);
    out[8] = std::uint8_t(header.size() & 0xff);
    out[9] = std::uint8_t(header.size() >> 8);
    std::memcpy(out.data() + 10, header.data(), header.size());
    return out;
}

} // namespace

class TestProbe : public QObject {
    Q_OBJECT
private slots:
    // ---- conversions (shared by the CPU backend and the kernels)
    void fp16RoundTripsEveryCode() {
        for (std::uint32_t b = 0; b < 65536; ++b) {
            const float f = halfToFloat(std::uint16_t(b));
            if (std::isnan(f))
                continue;
            QCOMPARE(floatToHalf(f), std::uint16_t(b));
        }
        QCOMPARE(floatToHalf(65520.0f), std::uint16_t(0x7c00)); // rounds to infinity (IEEE)
        QCOMPARE(floatToHalf(1.0f + 0x1.0p-11f), std::uint16_t(0x3c00)); // tie to even
    }
    void roundEvenMatchesRint() {
        for (float v : {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.49999997f, 8388607.5f, 4194304.5f,
                        -0.3f, 1e30f, -1e30f, 0.0f, -0.0f, 126.5f, 127.5f, -127.5f, 7.5f})
            QCOMPARE(floatToBits(roundEven(v)), floatToBits(std::rint(v)));
        for (int i = -200000; i <= 200000; ++i) {
            const float v = float(i) * 0.25f + 0.001f * float(i % 7);
            QCOMPARE(roundEven(v), std::rint(v));
        }
    }
    void fp8RoundTripsAndSaturates() {
        for (int b = 0; b < 256; ++b) {
            const float e4 = e4m3ToFloat(std::uint8_t(b));
            if (!std::isnan(e4))
                QCOMPARE(int(floatToE4m3(e4)), b);
            const float e5 = e5m2ToFloat(std::uint8_t(b));
            if (std::isfinite(e5))
                QCOMPARE(int(floatToE5m2(e5)), b);
        }
        QCOMPARE(e4m3ToFloat(0x7e), 448.0f);
        QCOMPARE(int(floatToE4m3(1e9f)), 0x7e); // saturate, never NaN
        QCOMPARE(int(floatToE4m3(-1e9f)), 0xfe);
        QCOMPARE(int(floatToE5m2(1e9f)), 0x7b);    // 57344
        QCOMPARE(int(floatToE4m3(1.0625f)), 0x38); // halfway 1.0 / 1.125: even mantissa (1.0)
        QCOMPARE(int(floatToE4m3(1.1875f)), 0x3a); // halfway 1.125 / 1.25: even (1.25)
        QCOMPARE(e4m3ToFloat(0x01), 0x1.0p-9f);    // smallest subnormal
        QCOMPARE(floatToBf16(1.0f + 0x1.0p-8f), std::uint16_t(0x3f80)); // tie to even
    }

    // ---- layouts follow core's byte sizes exactly
    void pageBytesEqualCore_data() {
        QTest::addColumn<QString>("format");
        for (const auto& f : allProbeFormats())
            QTest::addRow("%s", f.id.c_str()) << QString::fromStdString(f.id);
    }
    void pageBytesEqualCore() {
        QFETCH(QString, format);
        const ProbeFormat f = fmt(format.toStdString().c_str());
        auto l = makeLayout(f.format, 128, 8, 32);
        QVERIFY2(l.ok(), l ? "" : l.error().message.c_str());
        const PageLayout L = *l;
        QCOMPARE(L.pageBytes, 32 * 8 * core::kvBytesPerTokenPerHead(f.format, 128));
    }

    // ---- each operation against the FP64 reference, every format
    void opsMatchReference_data() {
        QTest::addColumn<QString>("format");
        QTest::addColumn<double>("maxRelL2"); // vs FP64 on the unquantized data
        // Bounds for keys with ~10x outlier channels (KVQuant, Hooper et al. 2024, sec. 3), with
        // headroom.
        const std::pair<const char*, double> rows[] = {{"fp16", 1e-3},
                                                       {"bf16", 1e-2},
                                                       {"fp32", 1e-5},
                                                       {"fp8_e4m3", 0.08},
                                                       {"fp8_e4m3-per-head", 0.08},
                                                       {"fp8_e5m2", 0.16},
                                                       {"fp8_e5m2-per-head", 0.16},
                                                       {"int8", 0.04},
                                                       {"int4-g32", 0.4},
                                                       {"int4-g64", 0.45},
                                                       {"int4-g128", 0.6},
                                                       {"int4-kivi", 0.2},
                                                       {"int2-kivi", 0.8}};
        for (auto [id, bound] : rows)
            QTest::addRow("%s", id) << QString(id) << bound;
    }
    void opsMatchReference() {
        QFETCH(QString, format);
        QFETCH(double, maxRelL2);
        const ProbePlan p = quickPlan(format.toLatin1().constData());
        const ProbeResult r = runProbe(p);
        QVERIFY2(r.ok(), r.error.message.c_str());
        QVERIFY2(r.storeCheck.ok(),
                 r.storeCheck
                     ? ""
                     : r.storeCheck.error().message.c_str()); // store vs reference, byte for byte
        QVERIFY(r.qualityMeasured);
        // The kernel against FP64 on the same dequantized pages: within fp32 accumulation (1e-3).
        QVERIFY2(r.kernelVsRefRelL2 <= 1e-3, qPrintable(QString::number(r.kernelVsRefRelL2)));
        QVERIFY2(r.relL2 <= maxRelL2, qPrintable(QString::number(r.relL2)));
        QVERIFY(r.top8 > 0.3 && r.top8 <= 1.0);
        QCOMPARE(r.pagesSaved, 2 * (300 / 32)); // two requests after the first share 9 blocks
    }

    void outlierErrorOrdering() {
        // On keys with outlier channels: INT8 per-token < FP8 E4M3 per-tensor < INT4 per-group.
        auto err = [](const char* id) {
            ProbePlan p;
            p.model = defaultModel();
            p.format = fmt(id);
            p.blockSize = 16;
            p.batch = 2;
            p.context = 2048;
            p.measureSpeed = false;
            p.qualityRequests = 2;
            p.seed = 7;
            const ProbeResult r = runProbe(p);
            if (!r.ok())
                qFatal("%s", r.error.message.c_str());
            return r.relL2;
        };
        const double i8 = err("int8"), f8 = err("fp8_e4m3"), i4 = err("int4-g128");
        QVERIFY2(i8 < f8 && f8 < i4,
                 qPrintable(QString("int8 %1 fp8 %2 int4 %3").arg(i8).arg(f8).arg(i4)));
    }

    void qualityVsContext() {
        ProbePlan p;
        p.model = defaultModel();
        p.format = fmt("int8");
        p.batch = 1;
        p.context = 256;
        p.measureSpeed = false;
        p.qualityContexts = {1024, 4096};
        const ProbeResult r = runProbe(p);
        QVERIFY2(r.ok(), r.error.message.c_str());
        QCOMPARE(int(r.qualityVsContext.size()), 2);
        QCOMPARE(r.qualityVsContext[1].context, std::int64_t(4096));
        for (const auto& q : r.qualityVsContext) {
            QVERIFY(q.relL2 > 1e-4 && q.relL2 < 0.05);
            QVERIFY(q.kernelVsRefRelL2 <= 1e-3);
        }
    }

    // Decode steps in turn: one time per plan and round, a bad plan's or a cancel's error, and
    // times that follow the work (16 times the tokens takes longer in the rounds' median).
    void decodeInTurn() {
        auto planOf = [](std::int64_t context, int blockSize) {
            ProbePlan p;
            p.model = defaultModel();
            p.format = fmt("int8");
            p.batch = 2;
            p.context = context;
            p.blockSize = blockSize;
            p.measureQuality = false;
            return p;
        };
        // Its shape: one time per plan per round, each a real, positive step time. That the
        // 64x larger plan took longer was asserted here as a median ratio above 2: a statement
        // about the machine's load, not about timeDecodeInTurn, and it failed once under ctest
        // -j2 on a loaded machine (issue 32 item 16). Which plan runs when is checked below,
        // without a clock, through the caller's step and the cancel flag; the ratios themselves
        // are what tests/bench/bench_probe reports.
        const auto times = timeDecodeInTurn({planOf(256, 16), planOf(16384, 16)}, 5);
        QVERIFY2(times.ok(), times.ok() ? "" : times.error().message.c_str());
        QCOMPARE(int(times->size()), 2);
        for (const auto& plan : *times) {
            QCOMPARE(int(plan.size()), 5);
            for (double ms : plan)
                QVERIFY(ms > 0.0 && std::isfinite(ms));
        }

        const auto bad = timeDecodeInTurn({planOf(256, 16), planOf(256, 0)}, 2);
        QVERIFY(!bad.ok());
        QCOMPARE(bad.error().code, ErrorCode::BadInput);
        // a caller's step alongside: first in every round, its times last, its error returned
        int calls = 0;
        const auto alongside = timeDecodeInTurn(
            {planOf(256, 16)}, 3, nullptr, [&]() -> Result<double> { return 100.0 + ++calls; });
        QVERIFY(alongside.ok());
        QCOMPARE(int(alongside->size()), 2);
        QCOMPARE(calls, 3);
        QCOMPARE(alongside->back(), (std::vector<double>{101.0, 102.0, 103.0}));
        QCOMPARE(int(alongside->front().size()), 3);
        const auto failing =
            timeDecodeInTurn({planOf(256, 16)}, 2, nullptr, []() -> Result<double> {
                return Error{ErrorCode::Io, "yardstick failed"};
            });
        QVERIFY(!failing.ok());
        QCOMPARE(failing.error().message, std::string("yardstick failed"));
        // first in its round: a cancel it sets in the last round stops that round's plan steps
        // (were it last, the two rounds would finish)
        std::atomic<bool> stop{false};
        calls = 0;
        const auto stopped = timeDecodeInTurn({planOf(256, 16)}, 2, &stop, [&]() -> Result<double> {
            stop = ++calls == 2;
            return 1.0;
        });
        QVERIFY(!stopped.ok());
        QCOMPARE(stopped.error().code, ErrorCode::Cancelled);
        QCOMPARE(calls, 2);
        const std::atomic<bool> cancel{true};
        const auto cancelled = timeDecodeInTurn({planOf(256, 16)}, 2, &cancel);
        QVERIFY(!cancelled.ok());
        QCOMPARE(cancelled.error().code, ErrorCode::Cancelled);
    }

    // ---- block manager
    void blockManagerSharesFullBlocksOnly() {
        BlockManager m(100, 16, 0);
        // P = 40 -> 2 full blocks shared; contexts 50 (4 blocks) and 33 (3 blocks).
        auto a = m.allocate({50, 33, 50}, 40);
        QVERIFY(a.ok());
        const auto& b = *a;
        QCOMPARE(b.sharedBlocks, std::int64_t(2));
        QCOMPARE(b.pagesUsed, std::int64_t(2 + 2 + 1 + 2));
        QCOMPARE(b.pagesSaved, std::int64_t(4));
        QCOMPARE(m.freeBlocks(), std::int64_t(100 - 7));
        for (int r = 1; r < 3; ++r)
            for (int i = 0; i < 2; ++i)
                QCOMPARE(b.block(r, i * 16, 16), b.block(0, i * 16, 16));
        QCOMPARE(m.refCount(b.block(0, 0, 16)), 3);
        QCOMPARE(m.refCount(b.block(0, 40, 16)), 1);
        QVERIFY(b.block(1, 40, 16) != b.block(0, 40, 16));
        m.release(b);
        QCOMPARE(m.freeBlocks(), std::int64_t(100));
        // The block holding the last token is never shared: P = context = 32 shares one block.
        QCOMPARE(BlockManager::sharedBlocksFor({32, 32}, 32, 16), std::int64_t(1));
        QCOMPARE(BlockManager::sharedBlocksFor({32}, 32, 16),
                 std::int64_t(0)); // nobody to share with
        // Out of pages: a clean error.
        BlockManager small(3, 16);
        auto e = small.allocate({100}, 0);
        QVERIFY(!e.ok());
        QCOMPARE(e.error().code, ErrorCode::OutOfMemory);
        QVERIFY(e.error().message.find("out of pages") != std::string::npos);
    }
    void blockManagerShufflesPages() {
        BlockManager m(64, 16, 1234);
        auto a = m.allocate({64 * 16}, 0).value();
        int inOrder = 0;
        for (int i = 1; i < 64; ++i)
            inOrder += a.blockTables[std::size_t(i)] == a.blockTables[std::size_t(i - 1)] + 1;
        QVERIFY(inOrder < 8);
    }

    // ---- measured memory equals core's prediction
    void memoryMatchesCore_data() {
        QTest::addColumn<QString>("format");
        QTest::addColumn<int>("block");
        QTest::addColumn<int>("batch");
        QTest::addColumn<qint64>("context");
        QTest::addColumn<qint64>("prefix");
        QTest::addRow("llama-3-8b fp16 B16 4x1000")
            << "fp16" << 16 << 4 << qint64(1000) << qint64(0);
        QTest::addRow("llama-3-8b fp16 B16 4x1000 prefix 500")
            << "fp16" << 16 << 4 << qint64(1000) << qint64(500);
        QTest::addRow("llama-3-8b fp8 B16 3x4097") << "fp8" << 16 << 3 << qint64(4097) << qint64(0);
        QTest::addRow("llama-3-8b int8 B32 5x777 prefix 777")
            << "int8" << 32 << 5 << qint64(777) << qint64(777);
        QTest::addRow("llama-3-8b int4 B16 2x3000 prefix 1024")
            << "int4" << 16 << 2 << qint64(3000) << qint64(1024);
        QTest::addRow("llama-3-8b int2 KIVI B64 2x2500")
            << "int2" << 64 << 2 << qint64(2500) << qint64(0);
    }
    void memoryMatchesCore() {
        QFETCH(QString, format);
        QFETCH(int, block);
        QFETCH(int, batch);
        QFETCH(qint64, context);
        QFETCH(qint64, prefix);
        ProbePlan p;
        p.model = defaultModel();
        p.format = fmt(format.toLatin1().constData());
        p.blockSize = block;
        p.batch = batch;
        p.context = context;
        p.prefixTokens = prefix;
        p.measureSpeed = false;
        p.measureQuality = false;
        const ProbeResult r = runProbe(p);
        QVERIFY2(r.ok(), r.error.message.c_str());
        QCOMPARE(r.poolBytes, r.predictedPoolBytes);
        QVERIFY(std::abs(r.memoryErrorPct) < 1.0);
        QVERIFY(r.allocatedPoolBytes >= r.poolBytes && r.allocatedPoolBytes - r.poolBytes < 4096);
        // Independently of the probe's helper: one layer from core::computePoint.
        core::Scenario s;
        s.model = core::withLayerCount(p.model, 1);
        s.levers.quant.enabled = true;
        s.levers.quant.format = p.format.format;
        s.levers.paging.blockSize = block;
        s.hardware.gpu.memoryBytes = std::int64_t(1) << 40;
        s.hardware.kvMemoryBytes = std::int64_t(1) << 39;
        s.workload.context = context;
        s.workload.maxModelLen = context;
        const auto pt = core::computePoint(s, context);
        const std::int64_t blocks = (context + block - 1) / block;
        QCOMPARE(pt.bytesPerRequestPerGpu, blocks * r.pageBytes);
        if (prefix == 0)
            QCOMPARE(r.poolBytes, batch * pt.bytesPerRequestPerGpu);
        // The RSS delta is the device's own account: the pool was touched, so it is resident.
        QVERIFY(r.devicePoolBytes > r.poolBytes / 2);
    }

    // ---- cancellation, progress
    void cancellationIsHonouredQuickly() {
        // "Quickly" is counted in the run's own steps, not in milliseconds (a clock here failed
        // on a loaded machine): once cancel is set, the run reports at most one more step of
        // progress and never reaches its end, of 50 timed repeats.
        ProbePlan p;
        p.model = defaultModel();
        p.format = fmt("int4-g32");
        p.batch = 8;
        p.context = 16384;
        p.repeats = 50;
        std::atomic<bool> cancel{false};
        std::atomic<bool> started{false};
        std::atomic<int> reportsAfterCancel{0};
        std::atomic<double> lastPct{0};
        ProbeResult r;
        std::thread t([&] {
            r = runProbe(
                p,
                [&](double pct, const std::string&) {
                    if (cancel)
                        ++reportsAfterCancel;
                    lastPct = pct;
                    started = started || pct >= 8;
                },
                &cancel);
        });
        while (!started)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        cancel = true;
        t.join();
        QVERIFY(!r.ok());
        QCOMPARE(r.status, ProbeStatus::Cancelled);
        QCOMPARE(r.error.code, ErrorCode::Cancelled);
        QVERIFY2(reportsAfterCancel <= 1, qPrintable(QString::number(reportsAfterCancel)));
        QVERIFY2(lastPct < 100, qPrintable(QString::number(lastPct)));
        // A check and a bench cancelled before they start return at once, cleanly.
        const CheckReport c = runCheck(CheckPlan{"cpu", 1, false, 0}, {}, &cancel);
        QCOMPARE(c.status, ProbeStatus::Cancelled);
        QCOMPARE(c.error.code, ErrorCode::Cancelled);
        const ProbeReport b = runSweep(benchSweepPlan("cpu", true, 1), {}, &cancel);
        QCOMPARE(b.status, ProbeStatus::Cancelled);
        QCOMPARE(b.error.code, ErrorCode::Cancelled);
    }
    void progressRisesToHundred() {
        ProbePlan p = quickPlan("fp16");
        p.measureSpeed = true;
        p.repeats = 1;
        std::vector<double> seen;
        const ProbeResult r =
            runProbe(p, [&](double pct, const std::string&) { seen.push_back(pct); });
        QVERIFY2(r.ok(), r.error.message.c_str());
        QVERIFY(seen.size() >= 5);
        for (std::size_t i = 1; i < seen.size(); ++i)
            QVERIFY(seen[i] >= seen[i - 1]);
        QCOMPARE(seen.back(), 100.0);
        QVERIFY(r.speedMeasured && r.copyGBs > 0 && r.attentionMs > 0 && r.storeGBs > 0);
        QVERIFY(r.attentionPctOfCopy > 0);
    }
    // The read stream (cpu/read_stream.h) is decode's yardstick in every CPU run: measured over
    // the pool beside the copy, a positive, finite rate that the run's JSON carries. (A rate, not
    // a ratio to anything: timings on a shared machine prove nothing.)
    void cpuRunMeasuresTheReadStream() {
        ProbePlan p = quickPlan("int8");
        p.measureSpeed = true;
        p.repeats = 1;
        const ProbeResult r = runProbe(p);
        QVERIFY2(r.ok(), r.error.message.c_str());
        QVERIFY(r.speedMeasured);
        QVERIFY2(r.readGBs > 0 && std::isfinite(r.readGBs), qPrintable(QString::number(r.readGBs)));
        QVERIFY(r.copyGBs > 0 && std::isfinite(r.copyGBs));
        const nlohmann::json j = io::parseJson(runJson(r), "run.json").value();
        QCOMPARE(j.at("results").at(0).at("read_gbs").get<double>(), r.readGBs);
        QCOMPARE(j.at("read_bandwidth_gbs").get<double>(), r.readGBs);
    }
    // One pass reads every byte once: the sum of the 64-bit words of the 64-byte blocks, plus the
    // bytes before the first block boundary and after the last one, whatever the alignment, the
    // length (across 1 MiB chunks) and the thread count, at every vector level this CPU runs. A
    // block skipped or read twice changes the sum (the words are distinct).
    void readStreamReadsEveryByteOnce_data() {
        QTest::addColumn<int>("offset"); // from a 64-byte boundary
        QTest::addColumn<qint64>("bytes");
        QTest::addColumn<int>("threads");
        QTest::addRow("empty") << 0 << qint64(0) << 2;
        QTest::addRow("fewer bytes than the first boundary") << 5 << qint64(40) << 2;
        QTest::addRow("one block") << 0 << qint64(64) << 1;
        QTest::addRow("unaligned head and tail") << 7 << qint64(64 * 9 + 13) << 2;
        QTest::addRow("3 MiB + 5 blocks, aligned, 2 threads") << 0 << qint64((3 << 20) + 320) << 2;
        QTest::addRow("1 MiB + 100, offset 63, 3 threads") << 63 << qint64((1 << 20) + 100) << 3;
    }
    void readStreamReadsEveryByteOnce() {
        QFETCH(int, offset);
        QFETCH(qint64, bytes);
        QFETCH(int, threads);
        std::vector<std::uint64_t> words(std::size_t(bytes + offset) / 8 + 16);
        for (std::size_t i = 0; i < words.size(); ++i)
            words[i] = 0x9e3779b97f4a7c15ull * (i + 1); // distinct, all bits in play
        // 64-byte aligned start, then the row's offset.
        auto* base = reinterpret_cast<unsigned char*>(words.data());
        base += (64 - reinterpret_cast<std::uintptr_t>(base) % 64) % 64;
        if (std::size_t(base - reinterpret_cast<unsigned char*>(words.data())) +
                std::size_t(offset) + std::size_t(bytes) >
            words.size() * 8)
            QFAIL("test buffer too small");
        const unsigned char* data = base + offset;
        const std::size_t n = std::size_t(bytes);
        const std::size_t head = std::min<std::size_t>(n, (64 - std::size_t(offset) % 64) % 64);
        const std::size_t blocks = (n - head) / 64;
        std::uint64_t expected = 0;
        for (std::size_t i = 0; i < head; ++i)
            expected += data[i];
        for (std::size_t w = 0; w < blocks * 8; ++w) {
            std::uint64_t word;
            std::memcpy(&word, data + head + w * 8, 8);
            expected += word;
        }
        for (std::size_t i = head + blocks * 64; i < n; ++i)
            expected += data[i];
        for (int level = 0; level < simdLevelCount(); ++level) {
            QVERIFY(testing::setSimdOverride(simdLevel(level).name));
            const auto sum = readStreamPass(data, n, threads);
            QVERIFY2(sum, sum ? "" : sum.error().message.c_str());
            QCOMPARE(*sum, expected);
        }
        QVERIFY(testing::setSimdOverride(""));
    }
    // The backends without a read stream say so (the run then leaves read_gbs at 0).
    void readStreamIsTheCpusOnly_data() {
        QTest::addColumn<QString>("backend");
        QTest::addColumn<bool>("supported");
        QTest::addRow("cpu") << "cpu" << true;
        QTest::addRow("emulated-cuda") << "emulated-cuda" << false;
    }
    void readStreamIsTheCpusOnly() {
        QFETCH(QString, backend);
        QFETCH(bool, supported);
        auto b = makeBackend(backend.toStdString());
        if (!b)
            QSKIP(qPrintable(QString::fromStdString(b.error().message)));
        DeviceBuffer buffer;
        QVERIFY(buffer.allocate(**b, 4096));
        QVERIFY((*b)->fill(buffer.get(), 1, 4096));
        const Status pass = (*b)->readStream(buffer.get(), 4096);
        QCOMPARE(bool(pass), supported);
        if (!supported)
            QCOMPARE(pass.error().code, ErrorCode::Unsupported);
    }
    // The CUDA backend's launches per event pair: a span of at least 1 ms, at most 64 launches.
    void launchesPerTimingSpansAMillisecond_data() {
        QTest::addColumn<double>("singleMs");
        QTest::addColumn<int>("launches");
        QTest::addRow("8x8K FP16 decode on an H200, ~70 us") << 0.07 << 15;
        QTest::addRow("exactly a quarter ms") << 0.25 << 4;
        QTest::addRow("just over a quarter ms") << 0.2501 << 4;
        QTest::addRow("just under a quarter ms") << 0.2499 << 5;
        QTest::addRow("a millisecond already") << 1.0 << 1;
        QTest::addRow("a slow step") << 37.0 << 1;
        QTest::addRow("3 us, capped") << 0.003 << 64;
        QTest::addRow("unmeasured") << 0.0 << 64;
        QTest::addRow("negative") << -1.0 << 64;
        QTest::addRow("NaN") << std::nan("") << 64;
    }
    void launchesPerTimingSpansAMillisecond() {
        QFETCH(double, singleMs);
        QFETCH(int, launches);
        QCOMPARE(launchesPerTiming(singleMs), launches);
        QCOMPARE(launchesPerTiming(singleMs, 1.0, 1), 1); // a cap of one times each launch alone
        QCOMPARE(launchesPerTiming(singleMs, 0.1, 0), 1); // nonsense caps still launch once
    }
    // The CPU backend reports its last-level cache: the L3 glibc's sysconf reports where it
    // reports one, and never less than its L2 (an L2 or L1 figure, or none, would be wrong),
    // and a timed pool under 4x it is flagged.
    void smallPoolsAreFlaggedAgainstTheCache() {
        const std::int64_t cache = makeBackend("cpu").value()->cacheBytes();
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
        if (const std::int64_t l3 = sysconf(_SC_LEVEL3_CACHE_SIZE); l3 > 0)
            QCOMPARE(cache, l3);
        if (const std::int64_t l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); l2 > 0)
            QVERIFY2(cache >= l2 && cache <= (std::int64_t(4) << 30),
                     qPrintable(QString("cache %1, L2 %2").arg(cache).arg(l2)));
#endif
        // kvprobe info and the probe panel's backend tooltip say it
        const BackendInfo cpu = listBackends().front();
        QCOMPARE(cpu.name, std::string("cpu"));
        QCOMPARE(cpu.details.find("last-level cache " + std::to_string(cache >> 20) + " MiB") !=
                     std::string::npos,
                 cache > 0);
        ProbePlan p = quickPlan("int8");
        p.measureSpeed = true;
        p.repeats = 1;
        const ProbeResult r = runProbe(p);
        QVERIFY2(r.ok(), r.error.message.c_str());
        const std::string note =
            "pool under 4x the device's " + std::to_string(cache >> 20) + " MiB last-level cache";
        const bool flagged = std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) {
            return n.rfind(note, 0) == 0;
        });
        QCOMPARE(flagged, cache > 0 && r.poolBytes < 4 * cache);
        if (cache >= (std::int64_t(1) << 20))
            QVERIFY2(flagged, "a quick probe's pool of a few MiB is under 4x any MiB-sized cache");
        // Nothing is timed without speed: no flag.
        p.measureSpeed = false;
        const ProbeResult quiet = runProbe(p);
        QVERIFY(std::none_of(quiet.notes.begin(), quiet.notes.end(),
                             [&](const std::string& n) { return n.rfind(note, 0) == 0; }));
    }

    // ---- bad arguments end in a clean error
    void badArguments_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("expect");
        QTest::addRow("batch 0") << 0 << "batch";
        QTest::addRow("context 0") << 1 << "context";
        QTest::addRow("q heads not a multiple of kv heads") << 2 << "divisible";
        QTest::addRow("block size 0") << 3 << "block size";
        QTest::addRow("unknown backend") << 4 << "unknown backend";
        QTest::addRow("KIVI with block 16") << 5 << "multiple of the KIVI group";
        QTest::addRow("negative prefix") << 6 << "prefix";
        QTest::addRow("missing v npy") << 7 << "v-npy";
        QTest::addRow("no format") << 8 << "format";
        QTest::addRow("cuda without a device") << 9 << "cuda";
    }
    void badArguments() {
        QFETCH(int, which);
        QFETCH(QString, expect);
        ProbePlan p = quickPlan("int8");
        switch (which) {
        case 0:
            p.contexts.clear();
            p.batch = 0;
            break;
        case 1:
            p.contexts = {0};
            break;
        case 2:
            p.model = smallLayer(6, 4);
            break;
        case 3:
            p.blockSize = 0;
            break;
        case 4:
            p.backend = "tpu";
            break;
        case 5:
            p.format = fmt("int4-kivi");
            p.blockSize = 16;
            break;
        case 6:
            p.prefixTokens = -1;
            break;
        case 7:
            p.kNpy = "/nonexistent.npy";
            break;
        case 8:
            p.format = ProbeFormat{};
            break;
        case 9:
            p.backend = "cuda";
            break;
        }
        const ProbeResult r = runProbe(p);
        QVERIFY(!r.ok());
        QCOMPARE(r.status, ProbeStatus::Failed);
        QVERIFY2(QString::fromStdString(r.error.message).contains(expect, Qt::CaseInsensitive),
                 r.error.message.c_str());
        QVERIFY(!parseProbeFormat("int3"));
        QCOMPARE(parseProbeFormat("int3").error().code, ErrorCode::BadInput);
    }
    void kiviRejectsMidGroupStore() {
        auto l = makeLayout(fmt("int4-kivi").format, 64, 1, 32).value();
        std::vector<std::int64_t> sl = {5, 6, 7};
        std::vector<std::uint16_t> k(3 * 64), v(3 * 64);
        std::vector<std::uint8_t> pool(std::size_t(l.pageBytes));
        StoreArgs a;
        a.k = k.data();
        a.v = v.data();
        a.numTokens = 3;
        a.slotMapping = sl.data();
        a.pool = pool.data();
        a.numBlocks = 1;
        a.layout = l;
        QVERIFY(validateStore(a, sl.data()).error().message.find("mid-group") != std::string::npos);
        sl = {0, 1, 40};
        QVERIFY(validateStore(a, sl.data()).error().message.find("outside the pool") !=
                std::string::npos);
        sl = {0, 1, 2};
        QVERIFY(validateStore(a, sl.data()).ok());
    }

    // ---- .npy
    void npyRoundTrip() {
        std::vector<float> x(3 * 2 * 4);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = float(i) * 0.25f - 2.0f;
        for (bool f16 : {true, false}) {
            const auto bytes = encodeNpy({3, 2, 4}, x, f16);
            auto r = parseNpy(bytes.data(), bytes.size());
            QVERIFY2(r.ok(), r ? "" : r.error().message.c_str());
            const NpyArray& a = *r;
            QCOMPARE(a.shape, (std::vector<std::int64_t>{3, 2, 4}));
            QCOMPARE(a.data, x);
            QVERIFY(checkKvShape(a, 2, 4, "K").ok());
            const Status mismatch = checkKvShape(a, 8, 4, "K");
            QVERIFY(!mismatch.ok());
            QCOMPARE(mismatch.error().code, ErrorCode::BadFile);
            QVERIFY(mismatch.error().message.find("does not match") != std::string::npos);
        }
    }
    void badNpy_data() {
        QTest::addColumn<QByteArray>("file");
        QTest::addColumn<QString>("expect");
        auto qb = [](const std::vector<std::uint8_t>& v) {
            return QByteArray(reinterpret_cast<const char*>(v.data()), int(v.size()));
        };
        const auto good = encodeNpy({2, 2, 4}, std::vector<float>(16, 1.0f), true);
        QTest::addRow("empty") << QByteArray() << "too short";
        QTest::addRow("wrong magic")
            << QByteArray("\x93NUMPX\x01\x00\x10\x00{}              ", 26) << "magic";
        QTest::addRow("truncated header") << qb(good).left(20) << "truncated header";
        QTest::addRow("truncated data") << qb(good).left(int(good.size()) - 3) << "truncated data";
        QTest::addRow("trailing bytes") << qb(good) + "xx"
                                        << "unexpected bytes";
        QTest::addRow("version 9")
            << QByteArray("\x93NUMPY\x09\x00\x10\x00{}              ", 26) << "version";
        QTest::addRow("int32 dtype")
            << qb(npyWithHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1, 1), }\n",
                                4))
            << "not supported";
        QTest::addRow("float64 dtype")
            << qb(npyWithHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1), }\n",
                                8))
            << "not supported";
        QTest::addRow("big endian")
            << qb(npyWithHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (1, 1, 1), }\n",
                                4))
            << "big-endian";
        QTest::addRow("fortran order")
            << qb(npyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1, 1), }\n",
                                4))
            << "Fortran";
        QTest::addRow("huge shape") << qb(npyWithHeader("{'descr': '<f2', 'fortran_order': False, "
                                                        "'shape': (1000000, 1000000, 1000000), }\n",
                                                        0))
                                    << "2^31";
        QTest::addRow("overflowing dimension")
            << qb(npyWithHeader("{'descr': '<f2', 'fortran_order': False, 'shape': "
                                "(99999999999999999999999, 1, 1), }\n",
                                0))
            << "too large";
        QTest::addRow("negative dimension")
            << qb(npyWithHeader("{'descr': '<f2', 'fortran_order': False, 'shape': (-1, 1, 1), }\n",
                                0))
            << "non-integer";
        QTest::addRow("missing shape")
            << qb(npyWithHeader("{'descr': '<f2', 'fortran_order': False, }\n", 0))
            << "lacks 'shape'";
        QTest::addRow("garbage header")
            << qb(npyWithHeader("not a dict at all", 0)) << "not a dictionary";
        QTest::addRow("unterminated string") << qb(npyWithHeader("{'descr: ", 0)) << "malformed";
        QTest::addRow("header length beyond file")
            << QByteArray("\x93NUMPY\x01\x00\xff\xff{}", 12) << "truncated header";
    }
    // Every malformed input gets the same one-line BadFile message in memory and from a file
    // (where it names the file).
    void badNpy() {
        QFETCH(QByteArray, file);
        QFETCH(QString, expect);
        auto r = parseNpy(reinterpret_cast<const std::uint8_t*>(file.constData()),
                          std::size_t(file.size()));
        QVERIFY(!r.ok());
        QCOMPARE(r.error().code, ErrorCode::BadFile);
        QVERIFY2(QString::fromStdString(r.error().message).contains(expect, Qt::CaseInsensitive),
                 r.error().message.c_str());
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath("bad.npy").toStdString();
        std::ofstream(path, std::ios::binary).write(file.constData(), std::streamsize(file.size()));
        auto loaded = loadNpy(path);
        QVERIFY(!loaded.ok());
        QCOMPARE(loaded.error().code, ErrorCode::BadFile);
        const std::string message = loaded.error().message;
        QCOMPARE(message.rfind(path + ": ", 0), std::size_t(0));
        QVERIFY2(QString::fromStdString(message).contains(expect, Qt::CaseInsensitive),
                 message.c_str());
        QCOMPARE(message.find('\n'), std::string::npos);
    }

    // From a file: the same array as in memory, also when the data spans many 1 MiB pieces.
    void loadNpyMatchesParse_data() {
        QTest::addColumn<bool>("float16");
        QTest::addColumn<int>("tokens");
        QTest::addRow("fp16, 3 pieces") << true << 1200;  // 1200 x 8 x 128 x 2 B = 2.4 MiB
        QTest::addRow("fp32, 5 pieces") << false << 1200; // 4.7 MiB
        QTest::addRow("fp16, one token") << true << 1;
    }
    void loadNpyMatchesParse() {
        QFETCH(bool, float16);
        QFETCH(int, tokens);
        std::vector<float> x(std::size_t(tokens) * 8 * 128);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = float(int(i % 2001) - 1000) * 0.125f;
        const auto bytes = encodeNpy({tokens, 8, 128}, x, float16);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath("kv.npy").toStdString();
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        auto loaded = loadNpy(path);
        QVERIFY2(loaded.ok(), loaded ? "" : loaded.error().message.c_str());
        QCOMPARE(loaded->shape, (std::vector<std::int64_t>{tokens, 8, 128}));
        QCOMPARE(loaded->itemBytes, float16 ? 2 : 4);
        QCOMPARE(loaded->data, x); // every value is exact in fp16
    }

    // A FIFO, a directory and a missing file are refused at once (a FIFO used to block in open).
    void loadNpyRefusesSpecialFiles() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string fifo = dir.filePath("k.npy").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        auto pending = std::async(std::launch::async, [&] { return loadNpy(fifo); });
        if (pending.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
            // unblock the reader so the test can end, then fail
            const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
            if (writer >= 0)
                ::close(writer);
            pending.wait();
            QFAIL("loadNpy blocked on a FIFO");
        }
        const auto fromFifo = pending.get();
        QVERIFY(!fromFifo.ok());
        QCOMPARE(fromFifo.error().code, ErrorCode::BadFile);
        QVERIFY2(fromFifo.error().message.find("FIFO") != std::string::npos ||
                     fromFifo.error().message.find("not a regular file") != std::string::npos,
                 fromFifo.error().message.c_str());
        const auto fromDirectory = loadNpy(dir.path().toStdString());
        QVERIFY(!fromDirectory.ok());
        QCOMPARE(fromDirectory.error().code, ErrorCode::BadFile);
        const auto missing = loadNpy(dir.filePath("none.npy").toStdString());
        QVERIFY(!missing.ok());
        QCOMPARE(missing.error().code, ErrorCode::NotFound);
    }

    // The header is checked before the data is read or allocated: a 3 GB file that is not a .npy
    // (sparse: it takes no disk) and a header that claims more data than the file holds each
    // cost a few bytes of reading (the process's rchar in /proc/self/io) and no memory.
    void loadNpyReadsOnlyTheHeaderOfBadFiles_data() {
        QTest::addColumn<QByteArray>("head");
        QTest::addColumn<QString>("expect");
        QTest::addRow("3 GB, not a .npy") << QByteArray("PK\x03\x04 a zip, say") << "magic";
        const auto claims = npyWithHeader(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 2), }\n", 0);
        QTest::addRow("3 GB, header claims 8 GB")
            << QByteArray(reinterpret_cast<const char*>(claims.data()), int(claims.size()))
            << "truncated data";
    }
    void loadNpyReadsOnlyTheHeaderOfBadFiles() {
        QFETCH(QByteArray, head);
        QFETCH(QString, expect);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath("big.npy").toStdString();
        {
            std::ofstream out(path, std::ios::binary);
            out.write(head.constData(), head.size());
        }
        QCOMPARE(::truncate(path.c_str(), off_t(3) << 30), 0);
        auto readBytes = [] {
            std::ifstream io("/proc/self/io");
            std::string key;
            long long value = 0;
            while (io >> key >> value)
                if (key == "rchar:")
                    return value;
            return -1LL;
        };
        const long long before = readBytes();
        if (before < 0)
            QSKIP("/proc/self/io is not readable here");
        const auto loaded = loadNpy(path);
        const long long read = readBytes() - before;
        QVERIFY(!loaded.ok());
        QCOMPARE(loaded.error().code, ErrorCode::BadFile);
        QVERIFY2(QString::fromStdString(loaded.error().message).contains(expect),
                 loaded.error().message.c_str());
        QVERIFY2(read < 200 * 1024, qPrintable(QString("read %1 bytes").arg(read)));
    }

    void npyShapeMismatchAndRealData() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        auto write = [&](const char* name, const std::vector<std::uint8_t>& b) {
            const std::string path = dir.filePath(name).toStdString();
            std::ofstream(path, std::ios::binary)
                .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
            return path;
        };
        ProbePlan p = quickPlan("int8");
        p.contexts = {300};
        p.prefixTokens = 0;
        p.qualityRequests = 1;
        std::vector<float> x(std::size_t(400) * 4 * 128);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = std::sin(float(i) * 0.37f) * (i % 128 == 3 ? 10.0f : 1.0f);
        p.kNpy = write("k.npy", encodeNpy({400, 4, 128}, x, true));
        p.vNpy = write("v.npy", encodeNpy({400, 4, 128}, x, false));
        ProbeResult r = runProbe(p);
        QVERIFY2(r.ok(), r.error.message.c_str());
        QCOMPARE(QString::fromStdString(r.dataSource), QString("npy"));
        QVERIFY(r.kernelVsRefRelL2 <= 1e-3);
        QVERIFY(r.relL2 > 0 && r.relL2 < 0.05);
        p.vNpy = write("v-bad.npy",
                       encodeNpy({400, 3, 128}, std::vector<float>(400 * 3 * 128, 0.5f), true));
        r = runProbe(p);
        QVERIFY(!r.ok());
        QCOMPARE(r.error.code, ErrorCode::BadFile); // kvprobe exits 2 on it, as on bad input
        QVERIFY2(r.error.message.find("does not match the layer") != std::string::npos,
                 r.error.message.c_str());
    }

    // ---- the JSON the GUI loads: the documented keys are there (schema_version 1)
    void jsonSchemaIsStable() {
        ProbePlan p = quickPlan("int8");
        p.measureSpeed = true;
        p.repeats = 1;
        p.qualityContexts = {600};
        const ProbeResult r = runProbe(p);
        QVERIFY2(r.ok(), r.error.message.c_str());
        ProbeReport b;
        b.backend = "cpu";
        b.device = r.device;
        b.copyGBs = r.copyGBs;
        b.rows = {r};
        b.qualityVsContext = {{r.formatLabel, r.qualityVsContext}};
        // The text parses with the project's strict JSON reader.
        const auto parsed = io::parseJson(benchJson(b), "bench.json");
        QVERIFY2(parsed.ok(), parsed.ok() ? "" : parsed.error().message.c_str());
        const nlohmann::json& j = parsed.value();
        for (const char* k : {"tool", "schema_version", "command", "backend", "device", "date",
                              "host", "copy_bandwidth_gbs", "results", "quality_vs_context"})
            QVERIFY2(j.contains(k), k);
        QCOMPARE(j.at("tool").get<std::string>(), std::string("kvprobe"));
        QCOMPARE(j.at("schema_version").get<std::int64_t>(), std::int64_t(1));
        const nlohmann::json& row = j.at("results").at(0);
        for (const char* k : {"format",
                              "format_label",
                              "dtype",
                              "block_size",
                              "batch",
                              "context",
                              "prefix_tokens",
                              "predicted_pool_bytes",
                              "allocated_pool_bytes",
                              "device_pool_bytes",
                              "pages_used",
                              "pages_saved",
                              "store_gbs",
                              "attention_ms",
                              "tokens_per_s",
                              "attention_gbs",
                              "pct_of_copy",
                              "rel_l2_error",
                              "max_abs_error",
                              "top8_agreement",
                              "kernel_vs_reference_rel_l2",
                              "quality_vs_context"})
            QVERIFY2(row.contains(k), k);
        QCOMPARE(row.at("predicted_pool_bytes").get<std::int64_t>(), r.predictedPoolBytes);
        QCOMPARE(row.at("quality_vs_context").size(), std::size_t(1));
    }

    // ---- cancellation: every long step polls the flag
    void cancelStopsTheStepItArrivesIn_data() {
        QTest::addColumn<QString>("stage");
        for (const char* stage :
             {"planning", "allocating pages", "poisoning the pool", "generating K/V",
              "scanning fp8 scales", "uploading K/V", "storing K/V", "checking the store",
              "timing a copy of the pool", "timing the store", "attention", "timing attention",
              "dequantizing the pages", "FP64 reference on the unquantized K/V",
              "FP64 reference on the dequantized pages", "accounting"})
            QTest::addRow("%s", stage) << QString::fromLatin1(stage);
    }
    // Cancelled as a stage begins, the run ends inside that step: no later stage is reported.
    void cancelStopsTheStepItArrivesIn() {
        QFETCH(QString, stage);
        ProbePlan p = quickPlan("fp8_e4m3"); // out-of-page scales: the scale scan runs
        p.measureSpeed = true;
        p.repeats = 1;
        std::atomic<bool> cancel{false};
        std::vector<std::string> seen;
        const ProbeResult r = runProbe(
            p,
            [&](double, const std::string& st) {
                seen.push_back(st);
                if (st == stage.toStdString())
                    cancel = true;
            },
            &cancel);
        QVERIFY2(!seen.empty() && seen.back() == stage.toStdString(),
                 seen.empty() ? "no stage" : seen.back().c_str());
        QCOMPARE(r.status, ProbeStatus::Cancelled);
        QCOMPARE(r.error.code, ErrorCode::Cancelled);
    }
    // Each generation chunk (256 tokens) rounds its own rows: every float is its code's value
    // and every code the float's rounding, across partial last chunks, whatever the threads.
    void synthRoundsEveryRowToItsCodes_data() {
        QTest::addColumn<int>("tokens");
        QTest::addColumn<bool>("bf16");
        QTest::newRow("one token") << 1 << false;
        QTest::newRow("one chunk less a token") << 255 << false;
        QTest::newRow("a chunk and a token, bf16") << 257 << true;
        QTest::newRow("four chunks and a part") << 1100 << false;
        QTest::newRow("four chunks and a part, bf16") << 1100 << true;
    }
    void synthRoundsEveryRowToItsCodes() {
        QFETCH(int, tokens);
        QFETCH(bool, bf16);
        SynthParams sp;
        sp.kvHeads = 2;
        sp.headDim = 64;
        const auto one = synthKv(sp, tokens, bf16, 1);
        const auto two = synthKv(sp, tokens, bf16, 2);
        QVERIFY(one && two);
        const std::size_t elems = std::size_t(tokens) * 2 * 64;
        QCOMPARE(one->k.size(), elems);
        QCOMPARE(one->kBits.size(), elems);
        QCOMPARE(one->vBits.size(), elems);
        for (std::size_t i = 0; i < elems; ++i) {
            for (const auto& [value, bits] :
                 {std::pair{one->k[i], one->kBits[i]}, std::pair{one->v[i], one->vBits[i]}}) {
                const std::uint16_t code = bf16 ? floatToBf16(value) : floatToHalf(value);
                const float decoded = bf16 ? bf16ToFloat(bits) : halfToFloat(bits);
                if (code != bits || decoded != value)
                    QFAIL(qPrintable(QStringLiteral("element %1: %2 stored as 0x%3")
                                         .arg(i)
                                         .arg(double(value))
                                         .arg(bits, 4, 16, QLatin1Char('0'))));
            }
        }
        QVERIFY(one->k == two->k && one->v == two->v);
        QVERIFY(one->kBits == two->kBits && one->vBits == two->vBits);
        QVERIFY(std::any_of(one->kBits.begin(), one->kBits.end(),
                            [](std::uint16_t b) { return b != 0; }));
    }
    // The long steps on their own, with the flag already set.
    void longStepsReturnCancelled() {
        std::atomic<bool> cancel{true};
        SynthParams sp;
        QCOMPARE(synthKv(sp, 4096, false, 2, &cancel).error().code, ErrorCode::Cancelled);
        QCOMPARE(parallelFor(1000, 2, &cancel, [](std::int64_t) {}).error().code,
                 ErrorCode::Cancelled);
        std::vector<float> q(32 * 128, 0.5f), kv(std::size_t(512) * 8 * 128, 0.25f);
        const std::vector<RequestKv> req = {RequestKv{kv.data(), kv.data(), 512}};
        QCOMPARE(
            referenceAttention(q.data(), 1, 32, 8, 128, req, 0.1, nullptr, &cancel).error().code,
            ErrorCode::Cancelled);
        const PageLayout l = makeLayout(fmt("int8").format, 128, 8, 16).value();
        BlockManager m(32, 16);
        const BatchAllocation a = m.allocate({512}, 0).value();
        std::vector<std::uint8_t> pool(std::size_t(32 * l.pageBytes));
        std::vector<float> ks(8, 1.0f), dk, dv;
        QCOMPARE(dequantizeRequest(pool.data(), l, a, 0, ks.data(), ks.data(), dk, dv, &cancel)
                     .error()
                     .code,
                 ErrorCode::Cancelled);
        auto backend = makeBackend("cpu").value();
        backend->setCancel(&cancel);
        std::vector<std::uint8_t> from(std::size_t(8) << 20), to(from.size());
        QCOMPARE(backend->copy(to.data(), from.data(), from.size()).error().code,
                 ErrorCode::Cancelled);
    }

    // ---- exceptions on worker threads come back as errors, never terminate
    void workerExceptionsBecomeErrors_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        QTest::addRow("bad_alloc on a worker")
            << 0 << int(ErrorCode::OutOfMemory) << "out of host memory in a worker thread";
        QTest::addRow("runtime_error on a worker")
            << 1 << int(ErrorCode::Internal) << "a worker thread failed: boom at 37";
        QTest::addRow("a worker thread cannot start")
            << 2 << int(ErrorCode::OutOfMemory) << "could not start worker thread 2 of 4";
    }
    void workerExceptionsBecomeErrors() {
        QFETCH(int, kind);
        QFETCH(int, code);
        QFETCH(QString, message);
        std::atomic<int> ran{0};
        testing::failThreadStarts(kind == 2);
        const Status s = parallelFor(1000, 4, nullptr, [&](std::int64_t i) {
            ++ran;
            if (kind == 0 && i == 37)
                throw std::bad_alloc();
            if (kind == 1 && i == 37)
                throw std::runtime_error("boom at " + std::to_string(i));
            std::this_thread::sleep_for(std::chrono::milliseconds(1)); // 1000 items: >= 250 ms
        });
        testing::failThreadStarts(false);
        QVERIFY(!s.ok());
        QCOMPARE(int(s.error().code), code);
        QVERIFY2(QString::fromStdString(s.error().message).startsWith(message),
                 s.error().message.c_str());
        QVERIFY2(ran < 500, qPrintable(QString::number(ran))); // the others stopped
        // And a whole run fails cleanly instead of terminating the process.
        testing::failThreadStarts(true);
        ProbePlan p = quickPlan("int8");
        p.threads = 4;
        const ProbeResult r = runProbe(p);
        testing::failThreadStarts(false);
        QCOMPARE(r.status, ProbeStatus::Failed);
        QCOMPARE(r.error.code, ErrorCode::OutOfMemory);
        QVERIFY2(r.error.message.find("could not start worker thread") != std::string::npos,
                 r.error.message.c_str());
        QVERIFY(runProbe(p).ok()); // nothing left broken
    }

    // ---- kvprobe run's acceptance rule: pool bytes equal core's prediction exactly
    void poolComparedExactlyAllocatorRoundingApart() {
        ProbePlan p;
        p.model = defaultModel();
        p.format = fmt("int8");
        p.blockSize = 16;
        p.batch = 1;
        p.context = 16; // one page of 33,792 B; the allocator rounds it to 36,864 B
        p.measureSpeed = false;
        const ProbeResult r = runProbe(p);
        QVERIFY2(r.ok(), r.error.message.c_str());
        QCOMPARE(r.poolBytes, std::int64_t(33792));
        QCOMPARE(r.predictedPoolBytes, std::int64_t(33792));
        QCOMPARE(r.allocatedPoolBytes, std::int64_t(36864));
        QCOMPARE(QString::number(r.memoryErrorPct, 'f', 2), QStringLiteral("9.09"));
        QVERIFY(checkPoolAgainstPrediction(r).ok());
        ProbeResult off = r;
        off.poolBytes += 1;
        const Status s = checkPoolAgainstPrediction(off);
        QVERIFY(!s.ok());
        QCOMPARE(s.error().message,
                 std::string("pool of 33793 B (1 pages x 33792 B) differs from core's "
                             "prediction of 33792 B"));
    }

    // ---- one sweep, one block-size rule for KIVI
    void kiviBlockSizeRule_data() {
        QTest::addColumn<QString>("format");
        QTest::addColumn<int>("requested");
        QTest::addColumn<int>("used");
        QTest::addRow("int2-kivi 16 -> 32") << "int2-kivi" << 16 << 32;
        QTest::addRow("int4-kivi 48 -> 64") << "int4-kivi" << 48 << 64;
        QTest::addRow("int2-kivi 64 stays") << "int2-kivi" << 64 << 64;
        QTest::addRow("int2-kivi 1 -> 32") << "int2-kivi" << 1 << 32;
        QTest::addRow("int4-g32 16 stays") << "int4-g32" << 16 << 16;
        QTest::addRow("fp16 24 stays") << "fp16" << 24 << 24;
    }
    void kiviBlockSizeRule() {
        QFETCH(QString, format);
        QFETCH(int, requested);
        QFETCH(int, used);
        const ProbeFormat f = fmt(format.toLatin1().constData());
        QCOMPARE(blockSizeFor(f.format, requested), used);
        // makeLayout accepts exactly what the rule leaves unchanged.
        QCOMPARE(makeLayout(f.format, 128, 8, requested).ok(), used == requested);
        QVERIFY(makeLayout(f.format, 128, 8, used).ok());
    }
    void sweepUsesTheRule() {
        SweepPlan plan;
        plan.model = defaultModel();
        plan.formatIds = {"int8", "int2-kivi"};
        plan.batches = {1};
        plan.contexts = {256};
        plan.blockSize = 48;
        plan.repeats = 1;
        plan.warmup = 0;
        std::vector<double> seen;
        const ProbeReport rep =
            runSweep(plan, [&](double pct, const std::string&) { seen.push_back(pct); });
        QVERIFY2(rep.ok(), rep.error.message.c_str());
        QCOMPARE(rep.command, std::string("bench"));
        QCOMPARE(rep.rows.size(), std::size_t(2));
        QCOMPARE(rep.rows[0].blockSize, 48);
        QVERIFY(rep.rows[0].notes.empty() ||
                rep.rows[0].notes[0].find("block size") == std::string::npos);
        QCOMPARE(rep.rows[1].blockSize, 64);
        QVERIFY(std::any_of(
            rep.rows[1].notes.begin(), rep.rows[1].notes.end(),
            [](const std::string& n) { return n.find("block size raised from 48 to 64") == 0; }));
        QCOMPARE(rep.okRows(), 2);
        QVERIFY(rep.copyGBs > 0);
        QVERIFY(rep.readGBs > 0 && std::isfinite(rep.readGBs)); // the rows' median
        QCOMPARE(seen.back(), 100.0);
        // kvprobe bench's CPU plan asks for vLLM's 16: KIVI rows run at 32, as before.
        const SweepPlan bench = benchSweepPlan("cpu", true, 1);
        QCOMPARE(bench.blockSize, 16);
        QCOMPARE(blockSizeFor(fmt("int2-kivi").format, bench.blockSize), 32);
        // Nothing to measure, or an unknown backend: the sweep fails as a whole.
        plan.formatIds.clear();
        QCOMPARE(runSweep(plan).error.code, ErrorCode::BadInput);
        plan.formatIds = {"int8"};
        plan.backend = "tpu";
        const ProbeReport bad = runSweep(plan);
        QCOMPARE(bad.status, ProbeStatus::Failed);
        QCOMPARE(bad.error.code, ErrorCode::BadInput);
    }

    // ---- the CPU backend's vector kernels (cpu_simd.h), every level this CPU runs
    void simdLevelsAndDispatch() {
        QVERIFY(simdLevelCount() >= 1);
        QCOMPARE(QString(simdLevel(simdLevelCount() - 1).name), QString("portable"));
        QCOMPARE(QString(cpuSimdName()), QString(simdLevel(0).name));
        QVERIFY(!testing::setSimdOverride("sse9"));
        for (int i = 0; i < simdLevelCount(); ++i) {
            const SimdKernels& level = simdLevel(i);
            QVERIFY(testing::setSimdOverride(level.name));
            QCOMPARE(QString(cpuSimd(128).name), QString(level.name));
            // a width that does not divide head_dim falls to the next level down
            QVERIFY(36 % cpuSimd(36).width == 0);
            QCOMPARE(cpuSimd(36).width, 1);
            QVERIFY(72 % cpuSimd(72).width == 0);
        }
        QVERIFY(testing::setSimdOverride(""));
    }

    // The vector store writes the same bytes as kv_quant.h's scalar quantizeTokenVector (the
    // function the CUDA store is checked against) for every fp16 and bf16 bit pattern, zeros,
    // subnormals, NaN and infinity rows, at every level; fp8 with a small out-of-page scale on
    // one head (most codes saturate) and a large one on the other (most are subnormal).
    void vectorStoreIsByteIdentical_data() {
        QTest::addColumn<QString>("level");
        QTest::addColumn<QString>("format");
        QTest::addColumn<bool>("bf16");
        for (int i = 0; i < simdLevelCount(); ++i)
            for (const char* format :
                 {"fp16", "bf16", "int8", "fp8_e4m3", "fp8_e5m2-per-head", "int4-g32", "int4-g64",
                  "int4-g128", "int4-kivi", "int2-kivi"})
                for (bool bf16 : {false, true})
                    QTest::addRow("%s %s %s-in", simdLevel(i).name, format, bf16 ? "bf16" : "fp16")
                        << QString(simdLevel(i).name) << QString(format) << bf16;
    }
    void vectorStoreIsByteIdentical() {
        QFETCH(QString, level);
        QFETCH(QString, format);
        QFETCH(bool, bf16);
        QVERIFY(testing::setSimdOverride(level.toLatin1().constData()));
        const int heads = 2, dim = 128, blockSize = 32; // 32: KIVI's token group
        const PageLayout layout =
            makeLayout(fmt(format.toLatin1().constData()).format, dim, heads, blockSize).value();
        // Every format here has a vector store on the SIMD levels (else this compared the scalar
        // code with itself) and none on the portable one, KIVI's keys (per channel over a token
        // group) included.
        const bool vectorLevel = level != QLatin1String("portable");
        const bool kivi = layout.k.tokenGroup > 0;
        QCOMPARE(testing::storesThroughVector(layout.k, dim), vectorLevel);
        QCOMPARE(testing::storesThroughVector(layout.v, dim), vectorLevel);
        // Rows: every 16-bit pattern in order (65536 / 128 = 512 rows, so NaN and infinity rows
        // too), then a zero row, a negative-zero row, subnormals only, the largest finite
        // values, and rows of values that differ in the last bit.
        std::vector<std::uint16_t> bits;
        for (std::uint32_t b = 0; b < 65536; ++b)
            bits.push_back(std::uint16_t(b));
        auto addRow = [&](auto valueOf) {
            for (int c = 0; c < dim; ++c)
                bits.push_back(valueOf(c));
        };
        addRow([](int) { return std::uint16_t(0x0000); });
        addRow([](int) { return std::uint16_t(0x8000); });
        addRow([](int c) { return std::uint16_t((c % 2 ? 0x8000 : 0) | (c + 1)); });
        addRow([bf16](int c) {
            return std::uint16_t((c % 2 ? 0x8000 : 0) | (bf16 ? 0x7f7f : 0x7bff));
        });
        addRow([](int c) { return std::uint16_t(0x3c00 + c); });
        // Rows like activations (both signs, magnitudes 2^-8 .. 2^4, no zeros), so the INT4 /
        // INT2 groups, whose rows with a zero at a group's end go to the scalar code, store
        // most of these through the vector path; a row of one repeated value (a zero scale).
        std::uint32_t state = 12345;
        for (int r = 0; r < 122; ++r) // 640 rows in all: 320 tokens, whole KIVI groups
            addRow([&](int) {
                state = state * 1664525u + 1013904223u;
                const std::uint16_t magnitude =
                    bf16 ? std::uint16_t(0x3b80 + (state >> 20) % 0x600)
                         : std::uint16_t(0x1c00 + (state >> 20) % 0x3000);
                return std::uint16_t(((state >> 8) & 1 ? 0x8000 : 0) | magnitude);
            });
        addRow([](int) { return std::uint16_t(0x4100); });
        const std::int64_t tokens = std::int64_t(bits.size()) / (heads * dim);
        std::vector<std::int64_t> slotMap(static_cast<std::size_t>(tokens)); // "slots": Qt's
        for (std::int64_t t = 0; t < tokens; ++t)
            slotMap[std::size_t(t)] = t;
        const std::int64_t blocks = (tokens + blockSize - 1) / blockSize;
        std::vector<std::uint8_t> pool(std::size_t(blocks * layout.pageBytes), 0xA5);
        std::vector<std::uint8_t> expected = pool;
        const std::vector<float> scales = {0.0173f, 2.5f}; // per head
        StoreArgs args;
        args.k = args.v = bits.data();
        args.inputDtype = bf16 ? kInputBF16 : kInputF16;
        args.numTokens = tokens;
        args.slotMapping = slotMap.data();
        args.pool = pool.data();
        args.numBlocks = blocks;
        args.layout = layout;
        args.kScale = args.vScale = scales.data();
        QVERIFY(cpuStore(args, 2).ok());
        std::vector<float> row(static_cast<std::size_t>(dim));
        for (std::int64_t t = 0; t < tokens; ++t)
            for (int h = 0; h < heads; ++h) {
                const std::uint16_t* in = bits.data() + (t * heads + h) * dim;
                for (int c = 0; c < dim; ++c)
                    row[std::size_t(c)] = inputToFloat(in[c], args.inputDtype);
                std::uint8_t* keySide = kSide(expected.data(), layout, t / blockSize, h);
                const int offset = int(t % blockSize);
                if (!kivi)
                    quantizeTokenVector(keySide, layout.k, offset, row.data(),
                                        scales[std::size_t(h)]);
                quantizeTokenVector(keySide + vSideOffset(layout), layout.v, offset, row.data(),
                                    scales[std::size_t(h)]);
            }
        if (kivi) // the keys of each full token group, per channel
            for (std::int64_t t0 = 0; t0 + layout.k.tokenGroup <= tokens; t0 += layout.k.tokenGroup)
                for (int h = 0; h < heads; ++h) {
                    std::vector<float> keys;
                    for (int i = 0; i < layout.k.tokenGroup; ++i)
                        for (int c = 0; c < dim; ++c)
                            keys.push_back(
                                inputToFloat(bits[std::size_t(((t0 + i) * heads + h) * dim + c)],
                                             args.inputDtype));
                    std::uint8_t* keySide = kSide(expected.data(), layout, t0 / blockSize, h);
                    for (int c = 0; c < dim; ++c)
                        quantizeChannelRun(keySide, layout.k, int(t0 % blockSize),
                                           layout.k.tokenGroup, c, keys.data() + c, dim);
                }
        QVERIFY(testing::setSimdOverride(""));
        for (std::size_t i = 0; i < pool.size(); ++i)
            if (pool[i] != expected[i])
                QFAIL(qPrintable(QString("byte %1 (page %2): %3, expected %4")
                                     .arg(i)
                                     .arg(std::int64_t(i) / layout.pageBytes)
                                     .arg(pool[i])
                                     .arg(expected[i])));
    }

    // Decode at every level and on each kernel path (direct decoders, INT8 in integers at
    // head_dim 64, 96 and 128 (an odd count of 32-element chunks), the generic float tile,
    // widths 16 / 8 / 1 through head_dim) against FP64 on the same pages.
    void attentionOnEveryLevel_data() {
        QTest::addColumn<QString>("level");
        QTest::addColumn<QString>("format");
        QTest::addColumn<int>("headDim");
        QTest::addColumn<double>("bound"); // kernel vs FP64 on the same dequantized pages
        QTest::addColumn<int>("qHeads");
        QTest::addColumn<int>("kvHeads");
        const std::pair<const char*, int> cases[] = {{"fp16", 128},
                                                     {"bf16", 128},
                                                     {"fp32", 64},
                                                     {"fp8_e4m3", 128},
                                                     {"fp8_e5m2-per-head", 128},
                                                     {"int8", 128},
                                                     {"int8", 64},
                                                     {"int8", 80},
                                                     {"int8", 96},
                                                     {"int4-g32", 128},
                                                     {"int2-kivi", 128},
                                                     {"int4-kivi", 128},
                                                     {"fp16", 72},
                                                     {"int8", 72},
                                                     {"fp16", 36}};
        auto bound = [](const char* format) { return std::string(format) == "int8" ? 2e-4 : 1e-5; };
        // GQA 4 over 3 KV heads: one work item of 3 heads; then more KV heads than one item
        // takes (kSimdMaxHeadsPerItem), split 8 + 5 and 8 + 8 + 1, with GQA 2 and MHA.
        const struct {
            const char* format;
            int qHeads, kvHeads;
        } heads[] = {{"int8", 26, 13}, {"fp16", 17, 17}, {"int8", 17, 17}, {"int4-g32", 26, 13}};
        for (int i = 0; i < simdLevelCount(); ++i) {
            for (auto [format, dim] : cases)
                QTest::addRow("%s %s d%d", simdLevel(i).name, format, dim)
                    << QString(simdLevel(i).name) << QString(format) << dim << bound(format) << 12
                    << 3;
            for (const auto& h : heads)
                QTest::addRow("%s %s %dq/%dkv", simdLevel(i).name, h.format, h.qHeads, h.kvHeads)
                    << QString(simdLevel(i).name) << QString(h.format) << 64 << bound(h.format)
                    << h.qHeads << h.kvHeads;
        }
    }
    void attentionOnEveryLevel() {
        QFETCH(QString, level);
        QFETCH(QString, format);
        QFETCH(int, headDim);
        QFETCH(double, bound);
        QFETCH(int, qHeads);
        QFETCH(int, kvHeads);
        QVERIFY(testing::setSimdOverride(level.toLatin1().constData()));
        ProbePlan p = quickPlan(format.toLatin1().constData());
        p.model = smallLayer(qHeads, kvHeads, headDim);
        p.contexts = {517, 64, 1100}; // partial tiles, pages and partitions
        p.prefixTokens = 64;
        const ProbeResult r = runProbe(p);
        // INT4 / INT2 groups and KIVI keys decode through the level's own decoder on the SIMD
        // levels
        const PageLayout layout =
            makeLayout(p.format.format, headDim, kvHeads, p.blockSize).value();
        const bool groups = format.startsWith("int4-g") || format.endsWith("kivi");
        const bool decodesGroups =
            groups && level != QLatin1String("portable") && headDim % 32 == 0;
        QCOMPARE(testing::decodesThroughVector(layout.k, headDim), decodesGroups);
        QCOMPARE(testing::decodesThroughVector(layout.v, headDim), decodesGroups);
        QVERIFY(testing::setSimdOverride(""));
        QVERIFY2(r.ok(), r.error.message.c_str());
        QVERIFY2(r.storeCheck.ok(), r.storeCheck ? "" : r.storeCheck.error().message.c_str());
        QVERIFY2(r.kernelVsRefRelL2 <= bound, qPrintable(QString::number(r.kernelVsRefRelL2)));
    }

    void codecMaxima() {
        QCOMPARE(codecMax(makeLayout(fmt("fp8_e4m3").format, 128, 8, 16).value().k), 448.0);
        QCOMPARE(codecMax(makeLayout(fmt("fp8_e5m2").format, 128, 8, 16).value().k), 57344.0);
        QCOMPARE(codecMax(makeLayout(fmt("int8").format, 128, 8, 16).value().k), 127.0);
        QCOMPARE(codecMax(makeLayout(fmt("int4-g32").format, 128, 8, 16).value().k), 15.0);
        QCOMPARE(codecMax(makeLayout(fmt("int2-kivi").format, 128, 8, 32).value().k), 3.0);
        QVERIFY(std::isinf(codecMax(makeLayout(fmt("fp16").format, 128, 8, 16).value().k)));
    }

    void checkQuickPassesOnCpu() {
        const CheckReport rep = runCheck(CheckPlan{"cpu", 11, true, 0});
        QVERIFY2(rep.ok(), rep.error.message.c_str());
        for (const auto& c : rep.cases)
            QVERIFY2(c.passed, (c.name + ": " + c.detail).c_str());
        QVERIFY(rep.passed > 50);
        QCOMPARE(rep.failed, 0);
        QCOMPARE(runCheck(CheckPlan{"tpu", 1, true, 0}).error.code, ErrorCode::BadInput);
    }

    // ---- the check command's engine (kvprobe check) on the CPU
    void checkPassesOnCpu() {
        const CheckReport rep = runCheck(CheckPlan{"cpu", 3, false, 0});
        QVERIFY2(rep.ok(), rep.error.message.c_str());
        for (const auto& c : rep.cases)
            QVERIFY2(c.passed, (c.name + ": " + c.detail).c_str());
        QVERIFY(rep.passed > 100);
        QCOMPARE(rep.failed, 0);
    }
};

QTEST_GUILESS_MAIN(TestProbe)
#include "tst_probe.moc"
