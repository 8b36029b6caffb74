// The SIMT emulator (gpu_probe/emu) and the CUDA kernels it runs: its primitives on small test
// kernels written in the kernels' own dialect (cuda/dialect.cuh), the sm_80 software fp8
// conversion against NVIDIA's model of the sm_89 instruction, and the real decode and store
// kernels with bugs planted in them (emu::Fault): a missing __syncthreads, an off-by-one page
// index, an off-by-one slot. Each planted bug must make the emulated run fail, and the same run
// without it must pass: the emulator catches that class of bug in the real kernel code.
#include "gpu_probe/backend.h"
#include "gpu_probe/kv_quant.h"
#include "gpu_probe/ops.h"
#include "gpu_probe/run/probe.h"

#include <QtTest>

#define KVL_EMULATED_CUDA 1
#include "gpu_probe/cuda/dialect.cuh"
#include "gpu_probe/cuda/kv_codecs.cuh"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace kvl;
using namespace kvl::probe;
using kvl::probe::emulated::gptr;
using kvl::probe::emulated::gstore;
using kvl::probe::emulated::launchKernel;
using kvl::probe::emulated::ldg;

namespace {

// ---- test kernels

// out[i] = shuffles of lane ids: xor 1, down 3 (width 8), up 2, idx 5 (width 16).
__global__ void shuffleKernel(gptr<int> out) {
    const int lane = int(threadIdx.x);
    const unsigned all = 0xffffffffu;
    gstore(out + lane * 4 + 0, __shfl_xor_sync(all, lane, 1));
    gstore(out + lane * 4 + 1, __shfl_down_sync(all, lane, 3, 8));
    gstore(out + lane * 4 + 2, __shfl_up_sync(all, lane, 2));
    gstore(out + lane * 4 + 3, __shfl_sync(all, lane, 5, 16));
}

// Thread 32 (warp 1) reads what thread 0 (warp 0) wrote to shared memory; with `barrier`
// false the __syncthreads between them is missing.
__global__ void producerConsumerKernel(gptr<float> out, int barrier) {
    KVL_SHARED_ARRAY(float, buf, 1);
    const int t = int(threadIdx.x);
    if (t == 0)
        buf[0] = 1.5f;
    if (barrier)
        __syncthreads();
    if (t == 32)
        gstore(out, buf[0]);
}

__global__ void readKernel(gptr<const float> in, gptr<float> out, int offset) {
    gstore(out + threadIdx.x, ldg(in + int(threadIdx.x) + offset));
}

__global__ void misalignedKernel(gptr<const std::uint8_t> in, gptr<float> out) {
    const uint4 v = ldg(emulated::gcast<const uint4>(in + 4));
    gstore(out, float(v.x));
}

// Warps meeting at two different __syncthreads (`deadlock` 0), or lanes 32-47 at a barrier
// while 48-63 wait for them in a __syncwarp (`deadlock` 1).
__global__ void badBarrierKernel(gptr<float> out, int deadlock) {
    if (threadIdx.x < (deadlock ? 48u : 32u))
        __syncthreads();
    else if (deadlock)
        __syncwarp();
    else
        __syncthreads();
    gstore(out + threadIdx.x, 1.0f);
}

__global__ void exitedLaneKernel(gptr<int> out) {
    if (threadIdx.x == 31)
        return;
    gstore(out + threadIdx.x, __shfl_xor_sync(0xffffffffu, int(threadIdx.x), 1));
}

__global__ void uninitialisedSharedKernel(gptr<float> out) {
    KVL_DYNAMIC_SHARED(float, smem);
    gstore(out + threadIdx.x, smem[threadIdx.x]);
}

// A device buffer the emulator knows about.
struct DeviceArray {
    explicit DeviceArray(std::size_t bytes) : bytes(bytes), data(bytes ? bytes : 1) {
        emu::registerAllocation(data.data(), bytes);
    }
    ~DeviceArray() { emu::unregisterAllocation(data.data()); }
    template <class T> T* as() { return reinterpret_cast<T*>(data.data()); }
    std::size_t bytes;
    std::vector<std::uint8_t> data;
};

// A small run on the emulated backend: store (checked byte by byte), attention vs FP64.
ProbePlan emulatedPlan(const QString& format, int headDim, int kvHeads, int group, int blockSize,
                       std::vector<std::int64_t> contexts, std::int64_t prefix,
                       std::uint64_t seed) {
    ProbePlan plan;
    plan.backend = "emulated-cuda";
    plan.model = checkModel(kvHeads * group, kvHeads, headDim);
    plan.format = parseProbeFormat(format.toStdString()).value();
    plan.blockSize = blockSize;
    plan.contexts = std::move(contexts);
    plan.prefixTokens = prefix;
    plan.measureSpeed = false;
    plan.measureQuality = true;
    plan.qualityRequests = int(plan.contexts.size());
    plan.checkStore = true;
    plan.keepPool = true;
    plan.threads = 1;
    plan.seed = seed;
    return plan;
}

// Why a run fails the check, or "" when it passes (the check's own criteria).
std::string failure(const ProbeResult& r) {
    if (!r.ok())
        return r.error.message;
    if (!r.storeCheck)
        return r.storeCheck.error().message;
    if (!(r.kernelVsRefRelL2 <= 1e-3))
        return "kernel vs FP64 rel L2 " + std::to_string(r.kernelVsRefRelL2);
    return {};
}

struct FaultGuard {
    explicit FaultGuard(emu::Fault f) { emu::injectFault(f); }
    ~FaultGuard() { emu::injectFault(emu::Fault::None); }
};

} // namespace

class TestEmulatedCuda : public QObject {
    Q_OBJECT

private slots:
    void backendIsListedAndSaysWhatItProves() {
        bool found = false;
        for (const BackendInfo& b : listBackends())
            if (b.name == "emulated-cuda") {
                found = true;
                QVERIFY(b.available);
                QVERIFY(b.details.find("proves") != std::string::npos);
                QVERIFY(b.details.find("cannot show timing") != std::string::npos);
            }
        QVERIFY(found);
        auto backend = makeBackend("emulated-cuda");
        QVERIFY(backend.ok());
        QVERIFY((*backend)->isEmulator());
    }

    // ---- the primitives

    void shufflesFollowCudaSemantics() {
        DeviceArray out(32 * 4 * sizeof(int));
        emu::setLaunchOptions({7, 1, 16});
        QCOMPARE(int(launchKernel("shuffle", &shuffleKernel, dim3(1), dim3(32), 0, nullptr,
                                  out.as<int>())),
                 int(cudaSuccess));
        for (int lane = 0; lane < 32; ++lane) {
            const int* r = out.as<int>() + lane * 4;
            QCOMPARE(r[0], lane ^ 1);
            // down within 8-lane segments: lanes past the segment keep their value
            QCOMPARE(r[1], (lane % 8) + 3 < 8 ? lane + 3 : lane);
            QCOMPARE(r[2], lane >= 2 ? lane - 2 : lane);
            QCOMPARE(r[3], (lane / 16) * 16 + 5);
        }
    }

    // Without the barrier the consumer warp reads poison (NaN) in some schedules; with it,
    // never. This is how a missing __syncthreads shows up.
    void missingBarrierShowsInSomeSeeds() {
        DeviceArray out(sizeof(float));
        int wrongWithout = 0, wrongWith = 0;
        for (std::uint64_t seed = 1; seed <= 8; ++seed)
            for (int barrier = 0; barrier < 2; ++barrier) {
                emu::setLaunchOptions({seed, 1, 16});
                QCOMPARE(int(launchKernel("producerConsumer", &producerConsumerKernel, dim3(1),
                                          dim3(64), 0, nullptr, out.as<float>(), barrier)),
                         int(cudaSuccess));
                (barrier ? wrongWith : wrongWithout) += out.as<float>()[0] != 1.5f;
            }
        QCOMPARE(wrongWith, 0);
        QVERIFY2(wrongWithout > 0, "the race never showed in 8 seeds");
        QVERIFY2(wrongWithout < 8, "the race showed in every seed: the schedule is not random");
    }

    void outOfBoundsReadIsReportedWithThreadAndBlock() {
        DeviceArray in(64 * sizeof(float)), out(64 * sizeof(float));
        emu::setLaunchOptions({1, 1, 16});
        const cudaError_t e = launchKernel("readKernel", &readKernel, dim3(1), dim3(64), 0, nullptr,
                                           in.as<const float>(), out.as<float>(), 1);
        QCOMPARE(int(e), int(cudaErrorIllegalAddress));
        const std::string& why = emu::lastLaunchError();
        QVERIFY2(why.find("readKernel: thread (63,0,0) of block (0,0,0)") != std::string::npos,
                 why.c_str());
        QVERIFY2(why.find("load of 4 bytes at tst_emulated_cuda.cpp:") != std::string::npos,
                 why.c_str());
        QVERIFY2(why.find("offset 256 of a 256-byte allocation (4 bytes past its end)") !=
                     std::string::npos,
                 why.c_str());
        // In bounds: no fault, the data arrives.
        for (int i = 0; i < 64; ++i)
            in.as<float>()[i] = float(i);
        QCOMPARE(int(launchKernel("readKernel", &readKernel, dim3(1), dim3(64), 0, nullptr,
                                  in.as<const float>(), out.as<float>(), 0)),
                 int(cudaSuccess));
        QCOMPARE(out.as<float>()[63], 63.0f);
    }

    void misalignedVectorLoadIsReported() {
        DeviceArray in(64), out(4);
        emu::setLaunchOptions({1, 1, 16});
        QCOMPARE(int(launchKernel("misaligned", &misalignedKernel, dim3(1), dim3(1), 0, nullptr,
                                  in.as<const std::uint8_t>(), out.as<float>())),
                 int(cudaErrorMisalignedAddress));
        QVERIFY(emu::lastLaunchError().find("misaligned (address % 16 = 4)") != std::string::npos);
    }

    void badBarriersAreErrorsNotHangs_data() {
        QTest::addColumn<int>("deadlock");
        QTest::addColumn<QString>("message");
        QTest::addColumn<QString>("more");
        QTest::addRow("two different __syncthreads")
            << 0
            << "of block (0,0,0): divergent __syncthreads: reached at "
               "tst_emulated_cuda.cpp:"
            << "and at tst_emulated_cuda.cpp:";
        QTest::addRow("barrier vs __syncwarp")
            << 1 << "deadlock: 48 thread(s) (first (0,0,0)) wait in __syncthreads at"
            << "; 16 thread(s) (first (48,0,0)) wait in a warp intrinsic at tst_emulated_cuda.cpp:";
    }
    void badBarriersAreErrorsNotHangs() {
        QFETCH(int, deadlock);
        QFETCH(QString, message);
        QFETCH(QString, more);
        DeviceArray out(64 * sizeof(float));
        emu::setLaunchOptions({1, 1, 16});
        QVERIFY(launchKernel("badBarrier", &badBarrierKernel, dim3(1), dim3(64), 0, nullptr,
                             out.as<float>(), deadlock) != cudaSuccess);
        const std::string& why = emu::lastLaunchError();
        QVERIFY2(why.find(message.toStdString()) != std::string::npos, why.c_str());
        QVERIFY2(why.find(more.toStdString()) != std::string::npos, why.c_str());
    }

    void shuffleFromAnExitedLaneIsReported() {
        DeviceArray out(32 * sizeof(int));
        emu::setLaunchOptions({1, 1, 16});
        QVERIFY(launchKernel("exitedLane", &exitedLaneKernel, dim3(1), dim3(32), 0, nullptr,
                             out.as<int>()) != cudaSuccess);
        QVERIFY2(emu::lastLaunchError().find("reads lane 31, which has exited") !=
                     std::string::npos,
                 emu::lastLaunchError().c_str());
    }

    void sharedMemoryStartsPoisoned() {
        DeviceArray out(32 * sizeof(float));
        emu::setLaunchOptions({1, 1, 16});
        QCOMPARE(int(launchKernel("uninitialised", &uninitialisedSharedKernel, dim3(1), dim3(32),
                                  32 * sizeof(float), nullptr, out.as<float>())),
                 int(cudaSuccess));
        for (int i = 0; i < 32; ++i)
            QVERIFY(std::isnan(out.as<float>()[i]));
    }

    void launchLimitsAreTheHardwares() {
        DeviceArray out(4096);
        emu::setLaunchOptions({1, 1, 16});
        QCOMPARE(int(launchKernel("uninitialised", &uninitialisedSharedKernel, dim3(1), dim3(32),
                                  64 * 1024, nullptr, out.as<float>())),
                 int(cudaErrorInvalidValue));
        QVERIFY(emu::lastLaunchError().find("cudaFuncSetAttribute") != std::string::npos);
        QCOMPARE(int(launchKernel("uninitialised", &uninitialisedSharedKernel, dim3(1, 70000),
                                  dim3(32), 0, nullptr, out.as<float>())),
                 int(cudaErrorInvalidConfiguration));
        QCOMPARE(int(launchKernel("uninitialised", &uninitialisedSharedKernel, dim3(1), dim3(2048),
                                  0, nullptr, out.as<float>())),
                 int(cudaErrorInvalidConfiguration));
    }

    // ---- the conversions the kernels use

    // sm_80's software fp8 decode gives the values sm_89's cvt instruction gives (as NVIDIA's
    // cuda_fp8.h models it on the host) for every code, bit for bit, and kv_quant.h's decoders
    // (the CPU backend's). NaN codes give NaN; their payload is not compared (CUDA's host model
    // of fp16 -> fp32 returns 0x7fffffff where the device's cvt shifts the payload).
    void softwareFp8MatchesTheInstruction_data() {
        QTest::addColumn<bool>("e4m3");
        QTest::addRow("e4m3") << true;
        QTest::addRow("e5m2") << false;
    }
    void softwareFp8MatchesTheInstruction() {
        QFETCH(bool, e4m3);
        for (unsigned b = 0; b < 256; ++b) {
            const unsigned pair = b | ((255u - b) << 8);
            const float2 sw = emulated::fp8x2ToFloat2(pair, e4m3);
            const __half2_raw hw = __nv_cvt_fp8x2_to_halfraw2(
                static_cast<__nv_fp8x2_storage_t>(pair), e4m3 ? __NV_E4M3 : __NV_E5M2);
            const float2 want = __half22float2(__half2(hw));
            for (const auto& [got, expected] : {std::pair{sw.x, want.x}, std::pair{sw.y, want.y}}) {
                if (std::isnan(expected))
                    QVERIFY(std::isnan(got));
                else
                    QCOMPARE(__float_as_uint(got), __float_as_uint(expected));
            }
            const float ref = e4m3 ? e4m3ToFloat(std::uint8_t(b)) : e5m2ToFloat(std::uint8_t(b));
            if (!std::isnan(ref))
                QCOMPARE(__float_as_uint(sw.x), __float_as_uint(ref));
            else
                QVERIFY(std::isnan(sw.x));
        }
    }

    void intCodesBecomeFloatsExactly() {
        for (unsigned q = 0; q < 256; ++q)
            QCOMPARE(emulated::codeToFloat(q), float(q));
    }

    // ---- the real kernels

    // Every path of the real kernels on shapes the check does not draw: head dims of the catalog
    // at their lane counts, the generic kernels (a misaligned block size, head_dim not a
    // multiple of 8), GQA chunks past 8 q heads, split-K over three partitions.
    void realKernelsPassOnTheEmulator_data() {
        QTest::addColumn<QString>("format");
        QTest::addColumn<int>("headDim");
        QTest::addColumn<int>("kvHeads");
        QTest::addColumn<int>("group");
        QTest::addColumn<int>("blockSize");
        QTest::addRow("fp16 d80 GQA 12 (two q chunks)") << "fp16" << 80 << 1 << 12 << 16;
        QTest::addRow("bf16 d112 GQA 3") << "bf16" << 112 << 2 << 3 << 16;
        QTest::addRow("fp8_e4m3 d160") << "fp8_e4m3" << 160 << 1 << 4 << 32;
        QTest::addRow("fp8_e5m2-per-head d192") << "fp8_e5m2-per-head" << 192 << 2 << 2 << 16;
        QTest::addRow("int8 d256 GQA 8") << "int8" << 256 << 1 << 8 << 64;
        QTest::addRow("int4-g32 d96") << "int4-g32" << 96 << 1 << 1 << 16;
        QTest::addRow("int4-kivi d80 (partial V group)") << "int4-kivi" << 80 << 1 << 2 << 32;
        QTest::addRow("generic: int8 B5 (rows not 8-aligned)") << "int8" << 128 << 2 << 2 << 5;
        QTest::addRow("generic: fp16 d36 (not a multiple of 8)") << "fp16" << 36 << 1 << 2 << 16;
        QTest::addRow("generic: int4-g32 B3") << "int4-g32" << 64 << 1 << 4 << 3;
        QTest::addRow("generic: int2-kivi d40") << "int2-kivi" << 40 << 1 << 1 << 32;
    }
    void realKernelsPassOnTheEmulator() {
        QFETCH(QString, format);
        QFETCH(int, headDim);
        QFETCH(int, kvHeads);
        QFETCH(int, group);
        QFETCH(int, blockSize);
        const ProbePlan plan =
            emulatedPlan(format, headDim, kvHeads, group, blockSize, {1100, 77}, 0, 5);
        const ProbeResult r = runProbe(plan);
        QVERIFY2(failure(r).empty(), failure(r).c_str());
        // The device's bytes are the CPU backend's.
        ProbePlan cpu = plan;
        cpu.backend = "cpu";
        const ProbeResult c = runProbe(cpu);
        QVERIFY(c.ok());
        QCOMPARE(r.poolSnapshot.size(), c.poolSnapshot.size());
        QVERIFY(r.poolSnapshot == c.poolSnapshot);
    }

    // Each bug planted in the real kernels fails the emulated run in at least one of a few
    // seeds; the same runs without it pass. `message` is what the failure says.
    void plantedBugsAreCaught_data() {
        QTest::addColumn<int>("fault");
        QTest::addColumn<QString>("format");
        QTest::addColumn<QString>("message");
        QTest::addRow("decode: no __syncthreads after staging the block table")
            << int(emu::Fault::DecodeSkipTableBarrier) << "fp16"
            << "";
        QTest::addRow("decode: no __syncthreads before merging the warps")
            << int(emu::Fault::DecodeSkipMergeBarrier) << "int8"
            << "";
        QTest::addRow("decode: page index of token t + 1")
            << int(emu::Fault::DecodePageOffByOne) << "int4-g32"
            << "";
        QTest::addRow("store: slot + 1") << int(emu::Fault::StoreSlotOffByOne) << "fp8_e4m3"
                                         << "";
    }
    void plantedBugsAreCaught() {
        QFETCH(int, fault);
        QFETCH(QString, format);
        int failed = 0;
        std::string example;
        for (std::uint64_t seed = 1; seed <= 3; ++seed) {
            // Two requests over a partition boundary, a shared prefix, a partial last page.
            const ProbePlan plan = emulatedPlan(format, 64, 2, 4, 16, {700, 530}, 40, seed);
            const ProbeResult clean = runProbe(plan);
            QVERIFY2(failure(clean).empty(), failure(clean).c_str());
            const FaultGuard planted{emu::Fault(fault)};
            const std::string why = failure(runProbe(plan));
            if (!why.empty()) {
                ++failed;
                example = why;
            }
        }
        QVERIFY2(failed > 0, "the planted bug passed every seed");
        qInfo("caught in %d of 3 seeds, e.g.: %s", failed, example.c_str());
    }

    // The check itself on the emulated backend: the shapes it draws for the emulator (split-K,
    // shared prefixes, partial pages) and every format x block size.
    void checkFailsWithAPlantedBug() {
        const FaultGuard planted{emu::Fault::DecodePageOffByOne};
        const CheckReport rep = runCheck(CheckPlan{"emulated-cuda", 3, true, 0});
        QVERIFY(rep.ok());
        QVERIFY(rep.failed > 0);
    }
};

QTEST_GUILESS_MAIN(TestEmulatedCuda)
#include "tst_emulated_cuda.moc"
