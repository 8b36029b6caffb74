// Benchmark (not a test): the CPU probe's bandwidth as fractions of yardsticks measured in the
// same run, because the machine is shared and noisy.
//   - store and attention GB/s over a copy of the same size (the probe times that copy itself)
//     and over a read stream of the same size (timed here, same threads);
//   - paged (block 16, shuffled pages) vs contiguous (one page per request) attention time;
//   - INT8 vs FP16 attention time.
// usage: bench_probe [--batch N] [--context T] [--repeats R] [--json FILE]

#include "core/io/json.h"
#include "core/units.h"
#include "gpu_probe/probe.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

using namespace kvl;

namespace {

// Median GB/s of a multi-threaded sum over `bytes` (a read stream, as attention does).
double readStreamGBs(std::size_t bytes, int threads, int repeats) {
    std::vector<std::uint64_t> buf(bytes / 8 + 1);
    std::iota(buf.begin(), buf.end(), std::uint64_t{1});
    std::vector<double> secs;
    volatile std::uint64_t sink = 0;
    for (int r = 0; r < repeats + 1; ++r) {
        std::vector<std::uint64_t> partial(static_cast<std::size_t>(threads), 0);
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> pool;
        const std::size_t per = buf.size() / static_cast<std::size_t>(threads) + 1;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                const std::size_t lo = std::min(buf.size(), per * static_cast<std::size_t>(t));
                const std::size_t hi = std::min(buf.size(), lo + per);
                std::uint64_t s = 0;
                for (std::size_t i = lo; i < hi; ++i)
                    s += buf[i];
                partial[static_cast<std::size_t>(t)] = s;
            });
        for (auto& th : pool)
            th.join();
        const auto t1 = std::chrono::steady_clock::now();
        sink = sink + std::accumulate(partial.begin(), partial.end(), std::uint64_t{0});
        if (r > 0) // first pass warms the pages
            secs.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    std::sort(secs.begin(), secs.end());
    return double(bytes) / secs[secs.size() / 2] / 1e9;
}

probe::ProbeResult run(const std::string& format, int block, int batch, std::int64_t context,
                       int repeats) {
    probe::ProbePlan p;
    p.backend = "cpu";
    p.model = probe::defaultModel();
    p.format = probe::parseProbeFormat(format).value();
    p.blockSize = block;
    p.batch = batch;
    p.context = context;
    p.measureQuality = false;
    p.measureSpeed = true;
    p.warmup = 1;
    p.repeats = repeats;
    auto r = probe::runProbe(p);
    if (!r.ok())
        std::fprintf(stderr, "bench_probe: %s block %d: %s\n", format.c_str(), block,
                     r.error.message.c_str());
    return r;
}

} // namespace

int main(int argc, char** argv) {
    int batch = 8, repeats = 7;
    std::int64_t context = 4096;
    std::string jsonPath;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--batch")
            batch = std::max(1, std::atoi(argv[i + 1]));
        else if (a == "--context")
            context = std::clamp<std::int64_t>(std::atoll(argv[i + 1]), 16, 4096);
        else if (a == "--repeats")
            repeats = std::max(3, std::atoi(argv[i + 1]));
        else if (a == "--json")
            jsonPath = argv[i + 1];
    }
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // Contiguous = one page holding the whole request (block size = context).
    const int contiguousBlock = static_cast<int>(context);
    // Paged and contiguous runs alternate, three rounds, and the ratios are taken per round:
    // the machine's load drifts between rounds, far less within one.
    std::vector<double> pagedRatio16, pagedRatio8, int8Ratio;
    probe::ProbeResult fp16, fp16c, int8, int8c;
    for (int round = 0; round < 3; ++round) {
        fp16 = run("fp16", 16, batch, context, repeats);
        fp16c = run("fp16", contiguousBlock, batch, context, repeats);
        int8 = run("int8", 16, batch, context, repeats);
        int8c = run("int8", contiguousBlock, batch, context, repeats);
        if (!fp16.ok() || !fp16c.ok() || !int8.ok() || !int8c.ok())
            return 1;
        pagedRatio16.push_back(fp16.attentionMs / fp16c.attentionMs);
        pagedRatio8.push_back(int8.attentionMs / int8c.attentionMs);
        int8Ratio.push_back(int8.attentionMs / fp16.attentionMs);
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    const double readGBs =
        readStreamGBs(static_cast<std::size_t>(fp16.attentionBytes), threads, repeats);

    std::printf(
        "CPU probe, one Llama-3-8B layer (8 KV heads x 128), batch %d x %lld tokens, %d threads\n",
        batch, static_cast<long long>(context), threads);
    std::printf("  yardsticks: copy %.1f GB/s (probe, same run), read stream %.1f GB/s (%s)\n",
                fp16.copyGBs, readGBs, core::formatBytes(fp16.attentionBytes).c_str());
    std::printf("  %-22s %9s %9s %11s %12s\n", "", "ms", "GB/s", "of copy", "of read");
    auto row = [&](const char* name, double ms, double gbs, double copy) {
        std::printf("  %-22s %9.3f %9.2f %10.1f%% %11.1f%%\n", name, ms, gbs, 100 * gbs / copy,
                    100 * gbs / readGBs);
    };
    row("store fp16", fp16.storeMs, fp16.storeGBs, fp16.copyGBs);
    row("store int8", int8.storeMs, int8.storeGBs, int8.copyGBs);
    row("attention fp16 paged", fp16.attentionMs, fp16.attentionGBs, fp16.copyGBs);
    row("attention fp16 contig", fp16c.attentionMs, fp16c.attentionGBs, fp16c.copyGBs);
    row("attention int8 paged", int8.attentionMs, int8.attentionGBs, int8.copyGBs);
    const double pagedVsContig = median(pagedRatio16);
    const double pagedVsContigInt8 = median(pagedRatio8);
    const double int8VsFp16 = median(int8Ratio);
    std::printf("  (rows: the last of 3 alternating rounds; ratios: median over the rounds)\n");
    std::printf("  paged / contiguous attention time: fp16 %.3fx, int8 %.3fx (target <= 1.10x)\n",
                pagedVsContig, pagedVsContigInt8);
    std::printf("  int8 / fp16 attention time: %.3fx (bytes read: %.3fx)\n", int8VsFp16,
                double(int8.attentionBytes) / double(fp16.attentionBytes));
    if (!jsonPath.empty()) {
        nlohmann::ordered_json o;
        o["benchmark"] = "probe_cpu";
        o["batch"] = batch;
        o["context"] = static_cast<std::int64_t>(context);
        o["threads"] = threads;
        o["copy_gbs"] = fp16.copyGBs;
        o["read_stream_gbs"] = readGBs;
        o["store_fp16_over_copy"] = fp16.storeGBs / fp16.copyGBs;
        o["store_int8_over_copy"] = int8.storeGBs / int8.copyGBs;
        o["attention_fp16_over_copy"] = fp16.attentionGBs / fp16.copyGBs;
        o["attention_fp16_over_read"] = fp16.attentionGBs / readGBs;
        o["attention_int8_over_read"] = int8.attentionGBs / readGBs;
        o["paged_over_contiguous_fp16"] = pagedVsContig;
        o["paged_over_contiguous_int8"] = pagedVsContigInt8;
        o["int8_over_fp16_attention_time"] = int8VsFp16;
        std::ofstream(jsonPath) << io::dumpJson(o) << "\n";
    }
    return 0;
}
