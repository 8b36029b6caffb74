// Fuzzes the ledger, the planner and the speed model with scenarios built from the input bytes:
// a catalog model and GPU with extreme values (contexts up to 1G tokens, 100M target requests,
// layouts up to 64 GPUs, any KV format, block size and prefix). UBSan turns any signed overflow
// into an abort; the invariants below turn a wrong answer into one: bytes are never negative,
// a plan that "fits" holds the users, and what the planner says fits, the ledger agrees with.
#include "core/io/catalog.h"
#include "core/ledger.h"
#include "core/planner.h"
#include "core/speed.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace {

using namespace kvl;

void check(bool ok) {
    if (!ok)
        std::abort();
}

// Mostly realistic values, sometimes the extremes the CLI and the scenario file accept.
std::int64_t tokens(FuzzedDataProvider& in) {
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
        return in.ConsumeIntegralInRange<std::int64_t>(1, 131072);
    case 1:
        return in.ConsumeIntegralInRange<std::int64_t>(1, core::kMaxContext);
    case 2:
        return core::kMaxContext;
    default:
        return std::int64_t{1} << in.ConsumeIntegralInRange<int>(0, 29);
    }
}

core::Scenario scenarioFrom(FuzzedDataProvider& in) {
    const auto& models = io::builtinModels();
    const auto& gpus = io::builtinGpus();
    core::Scenario s;
    s.model = models[in.ConsumeIntegralInRange<std::size_t>(0, models.size() - 1)];
    s.hardware.gpu = gpus[in.ConsumeIntegralInRange<std::size_t>(0, gpus.size() - 1)];
    s.hardware.gpuCount = 1 << in.ConsumeIntegralInRange<int>(0, 6);
    s.hardware.pipelineParallel = in.ConsumeIntegralInRange<int>(1, 16);
    s.hardware.dataParallel = in.ConsumeIntegralInRange<int>(1, 64);
    s.hardware.expertParallel = in.ConsumeBool();
    s.hardware.decodeContextParallel = 1 << in.ConsumeIntegralInRange<int>(0, 3);
    s.hardware.memoryUtilization = in.ConsumeFloatingPointInRange<double>(0.01, 1.0);
    if (in.ConsumeBool())
        s.hardware.kvMemoryBytes =
            in.ConsumeIntegralInRange<std::int64_t>(0, std::int64_t{1} << 50);
    if (in.ConsumeBool())
        s.hardware.activationBytes =
            in.ConsumeIntegralInRange<std::int64_t>(0, std::int64_t{1} << 40);
    const auto dtypes = core::allDtypes();
    s.levers.quant.enabled = in.ConsumeBool();
    s.levers.quant.format = core::KvFormat::defaultFor(
        dtypes[in.ConsumeIntegralInRange<std::size_t>(0, dtypes.size() - 1)]);
    s.levers.attention.enabled = in.ConsumeBool();
    s.levers.attention.mode =
        static_cast<core::AttentionMode>(in.ConsumeIntegralInRange<int>(0, 3));
    s.levers.attention.gqaKvHeads = in.ConsumeIntegralInRange<int>(1, 128);
    s.levers.paging.enabled = in.ConsumeBool();
    s.levers.paging.blockSize = in.ConsumeBool() ? 0 : 1 << in.ConsumeIntegralInRange<int>(0, 10);
    s.levers.prefix.enabled = in.ConsumeBool();
    s.levers.prefix.sharedTokens = tokens(in);
    s.levers.prefix.sharingRequests = in.ConsumeIntegralInRange<std::int64_t>(0, 1000);
    s.workload.context = tokens(in);
    s.workload.maxModelLen = in.ConsumeBool() ? 0 : tokens(in);
    s.workload.maxNumBatchedTokens = in.ConsumeBool() ? 0 : tokens(in);
    s.workload.targetRequests = in.ConsumeIntegralInRange<std::int64_t>(0, core::kMaxRequests);
    s.workload.concurrency = in.ConsumeIntegralInRange<std::int64_t>(0, core::kMaxRequests);
    return s;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    const core::Scenario s = scenarioFrom(in);
    if (s.validate())
        return 0; // an invalid scenario is a message, checked by the file fuzzers

    const core::LedgerResult r = core::computeLedger(s);
    check(r.kvBytesPerToken >= 0 && r.kvBytesPerRequest >= 0 && r.kvBytesPerRequestPerGpu >= 0);
    check(r.availableKvBytes >= 0 && r.numGpuBlocks >= 0 && r.gpuKvCacheTokens >= 0);
    check(r.maxRequestsAtContext >= 0 && r.weightsBytesPerGpu >= 0);
    check(r.stateBytesPerRequest >= 0 && r.paddingBytesPerRequest >= 0);
    check(std::isfinite(r.maxConcurrency) && r.maxConcurrency >= 0);

    if (s.workload.targetRequests > 0) {
        const core::GpusNeeded g = core::computeGpusNeeded(s, s.workload.targetRequests);
        check(g.kvBytes >= 0 && g.totalBytes >= 0 && g.weightsBytes >= 0);
    }

    if (!r.refused && r.error.empty()) {
        const std::int64_t batch =
            std::max<std::int64_t>(1, std::min(r.maxRequestsAtContext, s.workload.concurrency));
        const core::DecodeStep d = core::decodeStep(s, batch, s.workload.context);
        check(std::isfinite(d.stepMs) && d.stepMs >= 0);
    }

    // The planner on this GPU kind, small enough to keep the fuzzer fast.
    core::PlanRequest req;
    req.base = s;
    req.users = in.ConsumeIntegralInRange<std::int64_t>(1, core::kMaxRequests);
    req.context = s.workload.context;
    req.gpus = {s.hardware.gpu};
    req.maxGpus = in.ConsumeIntegralInRange<int>(1, 16);
    req.gpusPerNode = 8;
    const core::PlanResult plan = core::planDeployments(req);
    check(plan.gpus.size() == 1);
    for (const core::Deployment& d : plan.gpus.front().layouts) {
        if (!d.fits)
            continue;
        const std::int64_t n = std::int64_t{d.layout.tp} * d.layout.pp * d.layout.dp;
        check(n >= 1 && n <= req.maxGpus);
        check(d.clusterRequests >= req.users);
        check(d.requestsPerReplica <= d.requestsMemoryHolds);
        check(d.kvBytesPerGpu >= 0 && d.kvBytesPerGpu <= d.kvPoolBytesPerGpu);
        check(std::isfinite(d.decodeStepMs) && d.decodeStepMs >= 0);
    }
    return 0;
}
