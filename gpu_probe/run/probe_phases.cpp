// The phases of one probe run (probe_run.h), in the order runProbe calls them.
#include "gpu_probe/run/probe_run.h"

#include "gpu_probe/cpu/read_stream.h"
#include "gpu_probe/io/npy.h"
#include "gpu_probe/ops.h"
#include "gpu_probe/reference.h"
#include "gpu_probe/run/synth.h"

#include <algorithm>
#include <cmath>

namespace kvl::probe {

namespace {

constexpr std::uint8_t kPoison = 0xA5;
// Uploads, downloads and fills go in pieces of this size, with the cancel flag polled between.
constexpr std::size_t kTransferChunk = std::size_t(64) << 20;
// Padding slots (-1) per request in check mode: the store must skip them.
constexpr int kCheckPaddingRows = 7;

Error badInput(std::string message) {
    return Error{ErrorCode::BadInput, std::move(message)};
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

template <class Fn> Status inChunks(ProbeRun& run, std::size_t bytes, Fn&& transfer) {
    for (std::size_t offset = 0; offset < bytes; offset += kTransferChunk) {
        if (run.cancelled())
            return cancelledError();
        if (Status done = transfer(offset, std::min(kTransferChunk, bytes - offset)); !done)
            return done;
    }
    return {};
}

Status uploadChunked(ProbeRun& run, void* dst, const void* src, std::size_t bytes) {
    return inChunks(run, bytes, [&](std::size_t offset, std::size_t n) {
        return run.backend->upload(static_cast<char*>(dst) + offset,
                                   static_cast<const char*>(src) + offset, n);
    });
}

Status downloadChunked(ProbeRun& run, void* dst, const void* src, std::size_t bytes) {
    return inChunks(run, bytes, [&](std::size_t offset, std::size_t n) {
        return run.backend->download(static_cast<char*>(dst) + offset,
                                     static_cast<const char*>(src) + offset, n);
    });
}

Status fillChunked(ProbeRun& run, void* dst, std::uint8_t byte, std::size_t bytes) {
    return inChunks(run, bytes, [&](std::size_t offset, std::size_t n) {
        return run.backend->fill(static_cast<char*>(dst) + offset, byte, n);
    });
}

// ---- plan

// The plan's own checks, before anything else: model, format, workload, repeats.
Status validatePlan(ProbeRun& run) {
    const ProbePlan& plan = run.plan;
    const core::ModelSpec& model = plan.model;
    ProbeResult& result = run.result;
    result.backend = plan.backend;
    result.formatId = plan.format.id;
    result.formatLabel = plan.format.label;
    result.dtype = std::string(core::dtypeName(plan.format.format.dtype));
    result.modelId = model.id;
    result.blockSize = plan.blockSize;
    result.prefixTokens = plan.prefixTokens;
    if (plan.format.id.empty())
        return badInput("no KV format given");
    if (auto invalid = model.validate())
        return badInput("model: " + *invalid);
    // A model the probe cannot measure is a value it cannot take, as an unknown one is: bad
    // input (kvprobe exits 2; gpu_probe/README.md's exit statuses), not a failed run (1).
    if (model.isMla())
        return Error{ErrorCode::BadInput,
                     "model " + model.id +
                         ": MLA latent caches are not probed (full-attention layers only)"};
    result.kvHeads = model.kvHeads;
    result.qHeads = model.qHeads;
    result.headDim = model.headDim;
    if (model.qHeads % model.kvHeads != 0 || model.qHeads / model.kvHeads > 64)
        return badInput("model: q heads must be a multiple of KV heads, at most 64 per KV head");
    run.contexts = plan.contexts;
    if (run.contexts.empty()) {
        if (plan.batch < 1 || plan.batch > 4096)
            return badInput("batch must be between 1 and 4096, got " + std::to_string(plan.batch));
        run.contexts.assign(std::size_t(plan.batch), plan.context);
    }
    for (std::int64_t context : run.contexts)
        if (context < 1 || context > (std::int64_t(1) << 24))
            return badInput("context must be between 1 and 16M tokens, got " +
                            std::to_string(context));
    if (plan.prefixTokens < 0)
        return badInput("prefix tokens must not be negative");
    if (plan.repeats < 1 || plan.repeats > 1000 || plan.warmup < 0 || plan.warmup > 100)
        return badInput("repeats must be 1-1000 and warm-up 0-100");
    run.paddingRows = plan.checkStore ? kCheckPaddingRows : 0;
    return {};
}

// Real K/V from two .npy files, judged by their headers alone: each shape against the layer, K's
// tokens against V's, the contexts clamped to their length. Nothing of the data is read here, so
// the memory guard weighs the run before a byte of it is loaded (issue 32: two 2 GiB files were
// read into 8.4 GB before the guard said the run needed 116 GB).
Status inspectRealKv(ProbeRun& run) {
    const ProbePlan& plan = run.plan;
    if (plan.kNpy.empty() && plan.vNpy.empty())
        return {};
    if (plan.kNpy.empty() || plan.vNpy.empty())
        return badInput("real K/V needs both --k-npy and --v-npy");
    auto keyHeader = readNpyHeader(plan.kNpy);
    if (!keyHeader)
        return keyHeader.error();
    auto valueHeader = readNpyHeader(plan.vNpy);
    if (!valueHeader)
        return valueHeader.error();
    const int heads = plan.model.kvHeads, dim = plan.model.headDim;
    if (Status fits = checkKvShape(keyHeader->shape, heads, dim, "K .npy"); !fits)
        return fits.error();
    if (Status fits = checkKvShape(valueHeader->shape, heads, dim, "V .npy"); !fits)
        return fits.error();
    const std::int64_t tokens = keyHeader->shape[0];
    if (tokens != valueHeader->shape[0])
        return Error{ErrorCode::BadFile, "K and V .npy files hold different token counts (K " +
                                             std::to_string(tokens) + ", V " +
                                             std::to_string(valueHeader->shape[0]) + ")"};
    run.npyTokens = tokens;
    const std::int64_t longest = *std::max_element(run.contexts.begin(), run.contexts.end());
    if (tokens < longest + run.paddingRows) {
        run.result.notes.push_back("context clamped to the " +
                                   std::to_string(tokens - run.paddingRows) +
                                   " tokens of the .npy files");
        for (auto& context : run.contexts)
            context = std::max<std::int64_t>(1, std::min(context, tokens - run.paddingRows));
    }
    return {};
}

// The real K/V's data, after the memory guard let the run go on: each file streamed in bounded
// pieces (loadNpy), its values checked finite.
Status loadRealKv(ProbeRun& run) {
    if (run.npyTokens == 0)
        return {};
    const ProbePlan& plan = run.plan;
    const int heads = plan.model.kvHeads, dim = plan.model.headDim;
    auto load = [&](const std::string& path, const char* what) -> Result<NpyArray> {
        auto file = loadNpy(path);
        if (!file)
            return file.error();
        // The guard weighed the header read a moment ago; a file replaced since is not run.
        if (file->shape.empty() || file->shape[0] != run.npyTokens)
            return Error{ErrorCode::BadFile, path + ": changed while it was read"};
        if (Status fits = checkKvShape(*file, heads, dim, what); !fits)
            return fits.error();
        return file;
    };
    auto keys = load(plan.kNpy, "K .npy");
    if (!keys)
        return keys.error();
    auto values = load(plan.vNpy, "V .npy");
    if (!values)
        return values.error();
    run.host.keys = std::move(keys->data);
    run.host.values = std::move(values->data);
    run.result.dataSource = "npy";
    return {};
}

// Pages, stream rows and the quality step's share, exactly as the later phases allocate them.
RunShape shapeOf(const ProbePlan& plan, const PageLayout& layout,
                 const std::vector<std::int64_t>& contexts, int paddingRows,
                 std::int64_t dataRowsHeld, const Backend& backend) {
    RunShape shape;
    const int blockSize = layout.blockSize;
    const std::int64_t longest = *std::max_element(contexts.begin(), contexts.end());
    const std::int64_t sharedBlocks =
        BlockManager::sharedBlocksFor(contexts, plan.prefixTokens, blockSize);
    shape.kvHeads = layout.kvHeads;
    shape.qHeads = plan.model.qHeads;
    shape.headDim = layout.headDim;
    shape.batch = int(contexts.size());
    shape.dataRows = longest + paddingRows;
    shape.dataRowsHeld = std::max(shape.dataRows, dataRowsHeld);
    shape.pages = BlockManager::pagesNeeded(contexts, plan.prefixTokens, blockSize);
    shape.pageBytes = layout.pageBytes;
    shape.maxPartitions = ceilDiv(longest, kPartitionTokens);
    for (std::size_t r = 0; r < contexts.size(); ++r) {
        const std::int64_t firstToken = r == 0 ? 0 : sharedBlocks * blockSize;
        shape.streamRows += contexts[r] - firstToken + paddingRows;
        shape.maxBlocksPerSeq = std::max(shape.maxBlocksPerSeq, ceilDiv(contexts[r], blockSize));
    }
    shape.maxBlocksPerSeq = std::max<std::int64_t>(shape.maxBlocksPerSeq, 1);
    if (plan.measureQuality) {
        shape.qualityRequests = std::clamp(plan.qualityRequests, 1, shape.batch);
        shape.qualityPages = sharedBlocks;
        for (int r = 0; r < shape.qualityRequests; ++r) {
            shape.qualityTokens += contexts[std::size_t(r)];
            shape.qualityPages += ceilDiv(contexts[std::size_t(r)], blockSize) - sharedBlocks;
        }
    }
    shape.checkStore = plan.checkStore;
    shape.measureSpeed = plan.measureSpeed;
    shape.deviceIsHost = backend.deviceIsHost();
    shape.granularity = backend.granularity();
    return shape;
}

// The whole run's host peak: the main run, or its largest quality-vs-context sub-run (each runs
// after the main run has released its buffers).
std::int64_t peakHostBytes(const ProbeRun& run, std::int64_t dataRowsHeld) {
    std::int64_t peak = estimateRunMemory(run.shape).hostBytes;
    for (std::int64_t context : run.plan.qualityContexts) {
        ProbePlan sub = run.plan;
        sub.prefixTokens = 0;
        sub.measureSpeed = false;
        sub.measureQuality = true;
        sub.qualityRequests = 1;
        sub.checkStore = false;
        const RunShape shape = shapeOf(sub, run.layout, {context}, 0, dataRowsHeld, *run.backend);
        peak = std::max(peak, estimateRunMemory(shape).hostBytes);
    }
    return peak;
}

// core's prediction for a uniform batch (for mixed lengths it does not apply).
Status predictPool(ProbeRun& run) {
    ProbeResult& result = run.result;
    result.pagesUsed = run.shape.pages;
    result.poolBytes = run.poolBytes();
    const bool uniform = std::all_of(run.contexts.begin(), run.contexts.end(),
                                     [&](std::int64_t c) { return c == run.longestContext; });
    if (!uniform) {
        result.predictedPoolBytes = result.poolBytes;
        result.notes.push_back(
            "requests of different lengths: core's per-scenario prediction does not apply");
        return {};
    }
    auto predicted =
        predictedPoolBytes(run.plan.model, run.plan.format.format, run.layout.blockSize,
                           run.batch(), run.longestContext, run.plan.prefixTokens);
    if (!predicted)
        return predicted.error();
    result.predictedPoolBytes = *predicted;
    return {};
}

} // namespace

void ProbeRun::report(double percent, const std::string& stage) const {
    if (progress)
        progress(std::clamp(percent, 0.0, 100.0), stage);
}

bool ProbeRun::cancelled() const {
    return cancelRequested(cancel);
}

Status prepareRun(ProbeRun& run) {
    run.report(0, "planning");
    if (Status valid = validatePlan(run); !valid)
        return valid;
    auto layout = makeLayout(run.plan.format.format, run.plan.model.headDim, run.plan.model.kvHeads,
                             run.plan.blockSize);
    if (!layout)
        return layout.error();
    run.layout = *layout;
    run.result.pageBytes = run.layout.pageBytes;
    auto backend = makeBackend(run.plan.backend);
    if (!backend)
        return backend.error();
    run.backend = std::move(*backend);
    run.backend->setCancel(run.cancel);
    run.backend->setThreads(run.plan.threads);
    run.backend->setSeed(run.plan.seed);
    run.result.device = run.backend->deviceName();
    if (Status inspected = inspectRealKv(run); !inspected)
        return inspected;
    const std::int64_t dataRowsHeld = run.npyTokens; // a loaded .npy is held whole
    run.longestContext = *std::max_element(run.contexts.begin(), run.contexts.end());
    run.result.batch = run.batch();
    run.result.context = run.longestContext;
    run.shape =
        shapeOf(run.plan, run.layout, run.contexts, run.paddingRows, dataRowsHeld, *run.backend);
    run.result.estimatedPeakHostBytes = peakHostBytes(run, dataRowsHeld);
    return predictPool(run);
}

Status planRun(ProbeRun& run) {
    if (Status prepared = prepareRun(run); !prepared)
        return prepared;
    const std::int64_t available =
        run.plan.hostMemoryLimitBytes > 0 ? run.plan.hostMemoryLimitBytes : hostAvailableBytes();
    if (Status fits = checkMemoryFits(run.result.estimatedPeakHostBytes, available); !fits)
        return fits;
    return loadRealKv(run);
}

// ---- allocate

namespace {

// Slots in stream order: the shared prefix once (request 0), then each request's own tokens,
// then its padding rows.
Status buildTokenStream(ProbeRun& run) {
    TokenStream& stream = run.stream;
    const int blockSize = run.layout.blockSize;
    const std::size_t requests = std::size_t(run.batch());
    stream.slots.reserve(std::size_t(run.shape.streamRows));
    stream.firstToken.assign(requests, 0);
    stream.firstRow.assign(requests, 0);
    stream.rowCount.assign(requests, 0);
    for (std::size_t r = 0; r < requests; ++r) {
        if (run.cancelled())
            return cancelledError();
        const std::int64_t firstToken = r == 0 ? 0 : run.allocation.sharedTokens;
        stream.firstToken[r] = firstToken;
        stream.firstRow[r] = std::int64_t(stream.slots.size());
        for (std::int64_t t = firstToken; t < run.contexts[r]; ++t)
            stream.slots.push_back(std::int64_t(run.allocation.block(int(r), t, blockSize)) *
                                       blockSize +
                                   t % blockSize);
        stream.slots.insert(stream.slots.end(), std::size_t(run.paddingRows), -1);
        stream.rowCount[r] = std::int64_t(stream.slots.size()) - stream.firstRow[r];
        stream.uniqueTokens += run.contexts[r] - firstToken;
    }
    return {};
}

// The pool first, poisoned, measured on its own (the device's account of it).
Status allocatePool(ProbeRun& run) {
    Backend& backend = *run.backend;
    const std::int64_t usedBefore = backend.deviceUsedBytes();
    if (Status allocated = run.device.pool.allocate(backend, std::size_t(run.poolBytes()));
        !allocated)
        return allocated;
    run.report(4, "poisoning the pool");
    if (Status poisoned =
            fillChunked(run, run.device.pool.get(), kPoison, std::size_t(run.poolBytes()));
        !poisoned)
        return poisoned;
    if (Status synced = backend.synchronize(); !synced)
        return synced;
    run.poolDeviceBytes = std::max<std::int64_t>(0, backend.deviceUsedBytes() - usedBefore);
    return {};
}

} // namespace

Status allocateRun(ProbeRun& run) {
    run.report(2, "allocating pages");
    run.blocks.emplace(run.shape.pages, run.layout.blockSize, run.plan.seed * 2654435761u + 1);
    auto allocation = run.blocks->allocate(run.contexts, run.plan.prefixTokens);
    if (!allocation)
        return allocation.error();
    run.allocation = std::move(*allocation);
    run.result.pagesSaved = run.allocation.pagesSaved;
    if (Status built = buildTokenStream(run); !built)
        return built;
    run.contextLens.assign(run.contexts.begin(), run.contexts.end());
    if (Status pool = allocatePool(run); !pool)
        return pool;
    const RunShape& shape = run.shape;
    const std::size_t rowElems = std::size_t(shape.kvHeads) * std::size_t(shape.headDim);
    const std::size_t streamRows = run.stream.slots.size();
    const std::size_t outputFloats =
        std::size_t(run.batch()) * std::size_t(shape.qHeads) * std::size_t(shape.headDim);
    DeviceState& device = run.device;
    for (auto [buffer, bytes] : {
             std::pair{&device.keys, streamRows * rowElems * 2},
             {&device.values, streamRows * rowElems * 2},
             {&device.slots, streamRows * 8},
             {&device.blockTables, run.allocation.blockTables.size() * 4},
             {&device.contextLens, run.contextLens.size() * 4},
             {&device.queries, outputFloats * 4},
             {&device.output, outputFloats * 4},
             {&device.scratch,
              std::size_t(attentionScratchFloats(run.batch(), shape.qHeads,
                                                 int(shape.maxPartitions), shape.headDim)) *
                  4},
             {&device.keyScale, std::size_t(shape.kvHeads) * 4},
             {&device.valueScale, std::size_t(shape.kvHeads) * 4},
         })
        if (Status allocated = buffer->allocate(*run.backend, bytes); !allocated)
            return allocated;
    return {};
}

// ---- fill

namespace {

Status generateKv(ProbeRun& run) {
    HostKv& host = run.host;
    SynthParams params;
    params.kvHeads = run.layout.kvHeads;
    params.qHeads = run.plan.model.qHeads;
    params.headDim = run.layout.headDim;
    params.seed = run.plan.seed;
    if (!run.plan.kNpy.empty()) { // loaded by the plan phase
        const std::size_t elems = std::size_t(run.shape.dataRows) * std::size_t(params.kvHeads) *
                                  std::size_t(params.headDim);
        host.keys.resize(elems);
        host.values.resize(elems);
        host.keyBits = toInputBits(host.keys, run.plan.bf16Input);
        host.valueBits = toInputBits(host.values, run.plan.bf16Input);
    } else {
        auto generated =
            synthKv(params, run.shape.dataRows, run.plan.bf16Input, run.plan.threads, run.cancel);
        if (!generated)
            return generated.error();
        host.keys = std::move(generated->k);
        host.values = std::move(generated->v);
        host.keyBits = std::move(generated->kBits);
        host.valueBits = std::move(generated->vBits);
    }
    host.queries = synthQueries(params, run.batch());
    return run.cancelled() ? Status(cancelledError()) : Status();
}

// Out-of-page scales, as vLLM computes k_scale / v_scale: amax / the format's max, per tensor
// or per KV head, over the tokens the requests hold.
Status scanScales(ProbeRun& run) {
    const int heads = run.layout.kvHeads, dim = run.layout.headDim;
    HostKv& host = run.host;
    host.keyScale.assign(std::size_t(heads), 1.0f);
    host.valueScale.assign(std::size_t(heads), 1.0f);
    if (!run.layout.k.outOfPageScale())
        return {};
    std::vector<float> keyMax(std::size_t(heads), 0.0f), valueMax(std::size_t(heads), 0.0f);
    for (std::int64_t t = 0; t < run.longestContext; ++t) {
        if (t % 1024 == 0 && run.cancelled())
            return cancelledError();
        for (int h = 0; h < heads; ++h)
            for (int c = 0; c < dim; ++c) {
                const std::size_t i =
                    (std::size_t(t) * std::size_t(heads) + std::size_t(h)) * std::size_t(dim) +
                    std::size_t(c);
                keyMax[std::size_t(h)] = std::max(keyMax[std::size_t(h)], std::fabs(host.keys[i]));
                valueMax[std::size_t(h)] =
                    std::max(valueMax[std::size_t(h)], std::fabs(host.values[i]));
            }
    }
    if (run.plan.format.format.granularity == core::Granularity::PerTensor) {
        std::fill(keyMax.begin(), keyMax.end(), *std::max_element(keyMax.begin(), keyMax.end()));
        std::fill(valueMax.begin(), valueMax.end(),
                  *std::max_element(valueMax.begin(), valueMax.end()));
    }
    const double formatMax = codecMax(run.layout.k);
    for (std::size_t h = 0; h < std::size_t(heads); ++h) {
        host.keyScale[h] = keyMax[h] > 0 ? float(keyMax[h] / formatMax) : 1.0f;
        host.valueScale[h] = valueMax[h] > 0 ? float(valueMax[h] / formatMax) : 1.0f;
    }
    return {};
}

// Request r contributes rows [firstToken_r, context_r) plus padding rows: contiguous in the
// generated data, so one upload per request and side.
Status uploadInputs(ProbeRun& run) {
    const std::size_t rowElems = std::size_t(run.layout.kvHeads) * std::size_t(run.layout.headDim);
    DeviceState& device = run.device;
    for (std::size_t r = 0; r < std::size_t(run.batch()); ++r) {
        const std::size_t source = std::size_t(run.stream.firstToken[r]) * rowElems;
        const std::size_t target = std::size_t(run.stream.firstRow[r]) * rowElems;
        const std::size_t bytes = std::size_t(run.stream.rowCount[r]) * rowElems * 2;
        if (Status sent = uploadChunked(run, device.keys.as<std::uint16_t>() + target,
                                        run.host.keyBits.data() + source, bytes);
            !sent)
            return sent;
        if (Status sent = uploadChunked(run, device.values.as<std::uint16_t>() + target,
                                        run.host.valueBits.data() + source, bytes);
            !sent)
            return sent;
    }
    const HostKv& host = run.host;
    for (auto [target, source, bytes] : {
             std::tuple{device.slots.get(), (const void*)run.stream.slots.data(),
                        run.stream.slots.size() * 8},
             {device.blockTables.get(), (const void*)run.allocation.blockTables.data(),
              run.allocation.blockTables.size() * 4},
             {device.contextLens.get(), (const void*)run.contextLens.data(),
              run.contextLens.size() * 4},
             {device.queries.get(), (const void*)host.queries.data(), host.queries.size() * 4},
             {device.keyScale.get(), (const void*)host.keyScale.data(), host.keyScale.size() * 4},
             {device.valueScale.get(), (const void*)host.valueScale.data(),
              host.valueScale.size() * 4},
         })
        if (Status sent = uploadChunked(run, target, source, bytes); !sent)
            return sent;
    return {};
}

} // namespace

Status fillRun(ProbeRun& run) {
    run.report(6, "generating K/V");
    if (Status generated = generateKv(run); !generated)
        return generated;
    run.report(9, "scanning fp8 scales");
    if (Status scanned = scanScales(run); !scanned)
        return scanned;
    run.report(10, "uploading K/V");
    return uploadInputs(run);
}

// ---- store

namespace {

Status storeOnce(ProbeRun& run) {
    if (Status stored = run.backend->store(run.storeArgs); !stored)
        return stored;
    return run.backend->synchronize();
}

// Every stored byte against the FP64 ideal, and nothing outside the written slots changed.
Status checkStoredPool(ProbeRun& run) {
    const std::size_t elems =
        run.stream.slots.size() * std::size_t(run.layout.kvHeads) * std::size_t(run.layout.headDim);
    run.hostPool.resize(std::size_t(run.poolBytes()));
    if (Status got =
            downloadChunked(run, run.hostPool.data(), run.device.pool.get(), run.hostPool.size());
        !got)
        return got;
    std::vector<std::uint16_t> keys(elems), values(elems);
    if (Status got = downloadChunked(run, keys.data(), run.device.keys.get(), elems * 2); !got)
        return got;
    if (Status got = downloadChunked(run, values.data(), run.device.values.get(), elems * 2); !got)
        return got;
    run.result.storeCheck = checkStore(
        run.hostPool.data(), run.poolBytes(), kPoison, run.layout, run.stream.slots.data(),
        std::int64_t(run.stream.slots.size()), keys.data(), values.data(), run.storeArgs.inputDtype,
        run.host.keyScale.data(), run.host.valueScale.data());
    return {};
}

} // namespace

Status storeRun(ProbeRun& run) {
    run.report(12, "storing K/V");
    StoreArgs& args = run.storeArgs;
    DeviceState& device = run.device;
    args.k = device.keys.as<std::uint16_t>();
    args.v = device.values.as<std::uint16_t>();
    args.inputDtype = run.plan.bf16Input ? kInputBF16 : kInputF16;
    args.numTokens = std::int64_t(run.stream.slots.size());
    args.slotMapping = device.slots.as<std::int64_t>();
    args.pool = device.pool.as<std::uint8_t>();
    args.numBlocks = run.shape.pages;
    args.layout = run.layout;
    args.kScale = device.keyScale.as<float>();
    args.vScale = device.valueScale.as<float>();
    if (Status valid = validateStore(args, run.stream.slots.data()); !valid)
        return valid;
    if (Status stored = storeOnce(run); !stored)
        return stored;
    if (!run.plan.checkStore)
        return {};
    run.report(16, "checking the store");
    return checkStoredPool(run);
}

Status timeStoreRun(ProbeRun& run) {
    if (!run.plan.measureSpeed)
        return {};
    Backend& backend = *run.backend;
    run.report(20, "timing a copy of the pool");
    {
        DeviceBuffer copy;
        if (Status allocated = copy.allocate(backend, std::size_t(run.poolBytes())); !allocated)
            return allocated;
        auto copyMs = backend.time(
            [&] {
                return backend.copy(copy.get(), run.device.pool.get(),
                                    std::size_t(run.poolBytes()));
            },
            run.plan.warmup, run.plan.repeats);
        if (!copyMs)
            return copyMs.error();
        run.copyMs = *copyMs;
    }
    // Decode's own yardstick where the backend has one (the CPU): a read-only pass over the
    // pool itself, the bytes decode reads, as they lie in memory.
    run.report(24, "timing a read stream over the pool");
    auto readGBs = readStreamGBs(backend, run.device.pool.get(), std::size_t(run.poolBytes()),
                                 run.plan.warmup, run.plan.repeats);
    if (readGBs)
        run.readGBs = *readGBs;
    else if (readGBs.error().code != ErrorCode::Unsupported)
        return readGBs.error();
    run.report(28, "timing the store");
    auto storeMs = backend.time([&] { return storeOnce(run); }, run.plan.warmup, run.plan.repeats);
    if (!storeMs)
        return storeMs.error();
    run.storeMs = *storeMs;
    return {};
}

// ---- attend

Status attendRun(ProbeRun& run) {
    run.report(45, "attention");
    AttentionArgs& args = run.attentionArgs;
    DeviceState& device = run.device;
    args.q = device.queries.as<float>();
    args.batch = run.batch();
    args.qHeads = run.shape.qHeads;
    args.blockTables = device.blockTables.as<std::int32_t>();
    args.maxBlocksPerSeq = run.allocation.maxBlocksPerSeq;
    args.contextLens = device.contextLens.as<std::int32_t>();
    args.pool = device.pool.as<std::uint8_t>();
    args.layout = run.layout;
    args.kScale = device.keyScale.as<float>();
    args.vScale = device.valueScale.as<float>();
    args.smScale = float(1.0 / std::sqrt(double(run.layout.headDim)));
    args.out = device.output.as<float>();
    args.scratch = device.scratch.as<float>();
    args.maxPartitions = int(run.shape.maxPartitions);
    AttentionArgs hostView = args; // validation reads host copies of the tables
    hostView.q = run.host.queries.data();
    if (Status valid = validateAttention(hostView, run.shape.pages,
                                         run.allocation.blockTables.data(), run.contextLens.data());
        !valid)
        return valid;
    // Poisoned with NaN: an element the kernel leaves unwritten cannot pass.
    if (Status poisoned = run.backend->fill(device.output.get(), 0xFF, device.output.bytes());
        !poisoned)
        return poisoned;
    if (Status attended = run.backend->attention(args); !attended)
        return attended;
    if (Status synced = run.backend->synchronize(); !synced)
        return synced;
    run.attentionOutput.resize(std::size_t(run.batch()) * std::size_t(args.qHeads) *
                               std::size_t(run.layout.headDim));
    if (Status got = run.backend->download(run.attentionOutput.data(), device.output.get(),
                                           run.attentionOutput.size() * 4);
        !got)
        return got;
    for (float x : run.attentionOutput)
        if (!std::isfinite(x))
            return Error{ErrorCode::Internal,
                         "attention left a non-finite (or unwritten) output element"};
    return {};
}

Status timeAttentionRun(ProbeRun& run) {
    if (!run.plan.measureSpeed)
        return {};
    run.report(50, "timing attention");
    auto attentionMs = run.backend->time([&] { return run.backend->attention(run.attentionArgs); },
                                         run.plan.warmup, run.plan.repeats);
    if (!attentionMs)
        return attentionMs.error();
    run.attentionMs = *attentionMs;
    // Timed launches run back to back: a pool the cache can hold much of reads partly from it.
    if (const std::int64_t cache = run.backend->cacheBytes();
        cache > 0 && run.poolBytes() < 4 * cache)
        run.result.notes.push_back(
            "pool under 4x the device's " + std::to_string(cache >> 20) +
            " MiB last-level cache: partly cache-resident when timed, bandwidth overstated");
    return {};
}

} // namespace kvl::probe
