// Issue 9's "done when": for each real config.json in tests/io/data, `kvledger ledger --config F
// --kv-memory-bytes N --max-model-len M --tp T --kv-dtype D --json` reports what current vLLM
// (v1, the hybrid KV cache manager) computes: the block size, num_gpu_blocks, the maximum
// concurrency and "GPU KV cache size" (gpu_kv_cache_tokens), or its refusal to start with the
// estimated max model length. And `kvledger ledger --model qwen3-14b --kv-memory-gib 6.51
// --max-model-len 32768` reproduces LMCache issue 1739's log.
//
// Every expected number is worked out by hand in the row's comment from vLLM's own rules, not
// from KV Ledger's code:
//   page per layer   B x kv_heads_per_rank x (K + V head size) x dtype bytes
//                    (vllm/v1/kv_cache_interface.py, AttentionSpec.real_page_size_bytes);
//                    MLA: B x (kv_lora_rank + qk_rope_head_dim) x dtype bytes;
//                    Mamba / GDN: conv + SSM state (vllm/model_executor/layers/mamba/
//                    mamba_utils.py), the conv state in the model dtype
//   hybrid blocks    B = 16 x cdiv(mamba page, 16 x one token's attention page), the Mamba page
//                    padded to B x that (vllm/platforms/interface.py, _align_hybrid_block_size);
//                    other page sizes unified by scaling the smaller block
//                    (kv_cache_utils.unify_kv_cache_spec_page_size)
//   groups           group size = the smallest per-type layer count, or the largest when it is
//                    below 1.5 x the smallest; each type split into cdiv(n, size) groups
//                    (_get_kv_cache_groups_uniform_page_size)
//   bytes per block  group size x page; num_blocks = N // bytes per block
//   blocks / request full cdiv(M, B); sliding cdiv(min(W - 1 + F, M), B) + 1; chunked
//                    cdiv(min(C + F, M), B); Mamba in vLLM's default "align" mode 2
//                    (max_memory_usage_bytes), where F = 2 x 8192 = 16,384 in-flight tokens
//                    (an H100: max_num_batched_tokens 8192, async scheduling, PP 1;
//                    VllmConfig.max_in_flight_tokens)
//   concurrency      c = num_blocks / sum of the blocks per request; tokens = int(c x M)
//                    (kv_cache_utils.get_max_concurrency_for_kv_cache_config)
//   refusal          needed = bytes per block x blocks per request > N - bytes per block (the
//                    null block); the estimate is the largest M that fits
//                    (_check_enough_kv_cache_memory, _estimate_max_model_len_from_groups)
// The GPU is the default H100 80GB (compute capability 9.0: FLASH_ATTN for attention,
// FLASH_ATTN_MLA (block 16) for bf16 MLA, FLASHMLA (block 64) for fp8 MLA).

#include "tests/cli/cli_run.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <sstream>

namespace {

constexpr qint64 GiB = qint64(1) << 30;

using kvl::test::Run;
using kvl::test::run;

QString fixture(const QString& name) {
    return QStringLiteral(KVL_SOURCE_DIR "/tests/io/data/") + name;
}

} // namespace

class TestConfigs : public QObject {
    Q_OBJECT
private slots:
    void ledgerMatchesVllm_data();
    void ledgerMatchesVllm();
    void mambaSeqsRefusal();
    void nemotronH56b_data();
    void nemotronH56b();
    void requestsYouCanRun_data();
    void requestsYouCanRun();
    void lmcache1739();
};

void TestConfigs::ledgerMatchesVllm_data() {
    QTest::addColumn<QString>("config");
    QTest::addColumn<qint64>("kvMemory");    // --kv-memory-bytes N (per GPU)
    QTest::addColumn<qint64>("maxModelLen"); // --max-model-len M
    QTest::addColumn<int>("tp");
    QTest::addColumn<QString>("kvDtype");
    QTest::addColumn<int>("blockSize");
    QTest::addColumn<qint64>("numBlocks");
    QTest::addColumn<QString>("concurrency"); // max_concurrency, two decimals as vLLM prints it
    QTest::addColumn<qint64>("tokens");       // gpu_kv_cache_tokens (0: refused, not checked)
    QTest::addColumn<qint64>("estimate");     // refused: the estimated max model length; else 0

    // Gemma-3-27B: 62 layers, layer i full when (i + 1) % 6 == 0 (sliding_window_pattern 6):
    // 10 full + 52 sliding (W 1024); 16 KV heads of 128, bf16.
    // page 16 x 16 x 256 x 2 = 131,072 B; group size 10 (52 >= 15): 1 full + 6 sliding groups;
    // bytes per block 10 x 131,072 = 1,310,720; 20 GiB // that = 16,384 blocks.
    // per request: full cdiv(32768, 16) = 2048, sliding cdiv(min(1023 + 16384, 32768), 16) + 1
    // = 1088 + 1 = 1089, x 6 = 6534; 8582. c = 16384 / 8582 = 1.909 -> 1.91;
    // tokens int(1.909112 x 32768) = 62,557.
    QTest::addRow("gemma-3-27b") << "gemma-3-27b-it.json" << 20 * GiB << qint64(32768) << 1
                                 << "auto" << 16 << qint64(16384) << "1.91" << qint64(62557)
                                 << qint64(0);
    // Gemma-4-26B-A4B: 25 sliding (W 1024, 8 KV heads of 256) + 5 full (num_global_key_value
    // heads 2 of global_head_dim 512; attention_k_eq_v still stores K and V), bf16.
    // sliding page 16 x 8 x 512 x 2 = 131,072; full 16 x 2 x 1024 x 2 = 65,536 divides it, so the
    // full layers' block becomes 32 (page 131,072). Group size 5 (25 >= 7.5): 1 full + 5
    // sliding groups; bytes per block 5 x 131,072 = 655,360; 16 GiB // that = 26,214.
    // per request: full cdiv(65536, 32) = 2048, sliding (1088 + 1) x 5 = 5445; 7493.
    // c = 26214 / 7493 = 3.4985 -> 3.50; tokens int(3.498465 x 65536) = 229,275.
    QTest::addRow("gemma-4-26b-a4b")
        << "configs/gemma-4-26b-a4b.json" << 16 * GiB << qint64(65536) << 1 << "auto" << 16
        << qint64(26214) << "3.50" << qint64(229275) << qint64(0);
    // Gemma-4-31B-IT-NVFP4 at TP 2: the checkpoint's kv_cache_scheme is fp8, so "auto" stores
    // fp8 (1 byte). 50 sliding (16 / 2 = 8 KV heads of 256) + 10 full (4 / 2 = 2 of 512).
    // sliding page 16 x 8 x 512 x 1 = 65,536; full 16 x 2 x 1024 x 1 = 32,768 -> block 32.
    // Group size 10: 1 full + 5 sliding groups; bytes per block 10 x 65,536 = 655,360;
    // 10 GiB // that = 16,384. per request: full cdiv(131072, 32) = 4096, sliding 1089 x 5 =
    // 5445; 9541. c = 16384 / 9541 = 1.7172 -> 1.72; tokens int(1.717220 x 131072) = 225,079.
    QTest::addRow("gemma-4-31b nvfp4, fp8 KV from the checkpoint, tp 2")
        << "configs/gemma-4-31b-it-nvfp4.json" << 10 * GiB << qint64(131072) << 2 << "auto" << 16
        << qint64(16384) << "1.72" << qint64(225079) << qint64(0);
    // gpt-oss-20b: 24 layers alternating sliding (W 128) / full, 8 KV heads of 64, bf16.
    // page 16 x 8 x 128 x 2 = 32,768; group size 12: 2 groups; bytes per block 393,216;
    // 4 GiB // that = 10,922. per request: full cdiv(131072, 16) = 8192, sliding
    // cdiv(min(127 + 16384, 131072), 16) + 1 = 1032 + 1 = 1033; 9225.
    // c = 10922 / 9225 = 1.1840 -> 1.18; tokens int(1.183957 x 131072) = 155,183.
    QTest::addRow("gpt-oss-20b") << "gpt-oss-20b.json" << 4 * GiB << qint64(131072) << 1 << "auto"
                                 << 16 << qint64(10922) << "1.18" << qint64(155183) << qint64(0);
    // The same at 3 GiB: num_blocks 3 GiB // 393,216 = 8192. needed 393,216 x 9225 =
    // 3,627,417,600 B > 3 GiB - 393,216 = 3,220,832,256 (the null block held back): refused.
    // The estimate: 393,216 x (cdiv(L, 16) + 1033) <= 3,220,832,256 holds up to 8191 blocks,
    // cdiv(L, 16) <= 7158, L = 7158 x 16 = 114,528.
    QTest::addRow("gpt-oss-20b refused at 3 GiB")
        << "gpt-oss-20b.json" << 3 * GiB << qint64(131072) << 1 << "auto" << 16 << qint64(8192)
        << "0.89" << qint64(0) << qint64(114528);
    // gpt-oss-120b at TP 2: 18 sliding + 18 full, 8 / 2 = 4 KV heads of 64.
    // page 16 x 4 x 128 x 2 = 16,384; group size 18; bytes per block 294,912;
    // 8 GiB // that = 29,127. per request 8192 + 1033 = 9225.
    // c = 29127 / 9225 = 3.1574 -> 3.16; tokens int(3.157398 x 131072) = 413,846.
    QTest::addRow("gpt-oss-120b tp 2")
        << "configs/gpt-oss-120b.json" << 8 * GiB << qint64(131072) << 2 << "auto" << 16
        << qint64(29127) << "3.16" << qint64(413846) << qint64(0);
    // Llama-4-Scout (RedHatAI FP8 re-upload; KV auto = bf16) at TP 4: no_rope_layers [] ->
    // every 4th layer NoPE full: 12 full + 36 chunked (C 8192); 8 / 4 = 2 KV heads of 128.
    // page 16 x 2 x 256 x 2 = 16,384; group size 12: 1 full + 3 chunked groups; bytes per block
    // 196,608; 8 GiB // that = 43,690. per request: full 8192, chunked
    // cdiv(min(8192 + 16384, 131072), 16) = 1536 x 3 = 4608; 12,800.
    // c = 43690 / 12800 = 3.4133 -> 3.41; tokens int(3.413281 x 131072) = 447,385.
    QTest::addRow("llama-4-scout tp 4")
        << "configs/llama-4-scout-17b-16e-instruct-fp8-dynamic.json" << 8 * GiB << qint64(131072)
        << 4 << "auto" << 16 << qint64(43690) << "3.41" << qint64(447385) << qint64(0);
    // Llama-4-Scout at its own 10,485,760 tokens, TP 1: page 16 x 8 x 256 x 2 = 65,536; bytes per
    // block 12 x 65,536 = 786,432; 30 GiB // that = 40,960. per request cdiv(10485760, 16) =
    // 655,360 + 4608 > 40,959 blocks: refused. Estimate: (30 GiB - 786,432) // 786,432 = 40,959
    // blocks; 40,959 - 4608 = 36,351 full blocks; L = 36,351 x 16 = 581,616.
    QTest::addRow("llama-4-scout refused at 10M tokens")
        << "configs/llama-4-scout-17b-16e-instruct-fp8-dynamic.json" << 30 * GiB << qint64(10485760)
        << 1 << "auto" << 16 << qint64(40960) << "0.06" << qint64(0) << qint64(581616);
    // Qwen3-Next-80B-A3B at TP 2: no layer_types, so vLLM's Qwen3NextConfig makes every 4th layer
    // full: 12 full (2 / 2 = 1 KV head of 256) + 36 gated delta net layers.
    // attention per token 1 x 512 x 2 = 1024 B; GDN state per rank: conv 3 x (2 x 16 x 128 +
    // 32 x 128) / 2 x 2 = 24,576, SSM 16 x 128 x 128 x 2 (bf16, no override) = 524,288;
    // 548,864 B. block 16 x cdiv(548864, 16 x 1024) = 16 x 34 = 544; page 544 x 1024 = 557,056
    // (the state padded to it). Group size 12: 1 attention + 3 state groups; bytes per block
    // 12 x 557,056 = 6,684,672; 20 GiB // that = 3212. per request: cdiv(131072, 544) = 241,
    // state 2 x 3 = 6; 247. c = 3212 / 247 = 13.004 -> 13.00;
    // tokens int(13.004049 x 131072) = 1,704,466.
    QTest::addRow("qwen3-next-80b tp 2")
        << "configs/qwen3-next-80b-a3b-instruct.json" << 20 * GiB << qint64(131072) << 2 << "auto"
        << 544 << qint64(3212) << "13.00" << qint64(1704466) << qint64(0);
    // Qwen3-Next at TP 1, 262,144 tokens in 4 GiB: per token 2 x 512 x 2 = 2048 B; state 3 x
    // 8192 x 2 + 32 x 128 x 128 x 2 = 1,097,728; block 16 x cdiv(1097728, 32768) = 544; page
    // 1,114,112; bytes per block 12 x that = 13,369,344; 4 GiB // that = 321. per request
    // cdiv(262144, 544) = 482 + 6 = 488; needed 6,524,239,872 > 4 GiB - 13,369,344: refused.
    // Estimate: (4 GiB - 13,369,344) // 13,369,344 = 320 blocks, 314 attention blocks,
    // L = 314 x 544 = 170,816.
    QTest::addRow("qwen3-next-80b refused at 262144")
        << "configs/qwen3-next-80b-a3b-instruct.json" << 4 * GiB << qint64(262144) << 1 << "auto"
        << 544 << qint64(321) << "0.66" << qint64(0) << qint64(170816);
    // Qwen3.5-27B: layer_types 16 full (4 KV heads of 256) + 48 linear attention; GDN 16 key /
    // 48 value heads of 128, conv 4; mamba_ssm_dtype float32.
    // per token 4 x 512 x 2 = 4096 B; state: conv 3 x (2 x 16 x 128 + 48 x 128) x 2 = 61,440,
    // SSM 48 x 128 x 128 x 4 = 3,145,728; 3,207,168 B. block 16 x cdiv(3207168, 65536) =
    // 16 x 49 = 784; page 784 x 4096 = 3,211,264. Group size 16: 4 groups; bytes per block
    // 16 x 3,211,264 = 51,380,224; 30 GiB // that = 626. per request cdiv(32768, 784) = 42 + 6
    // = 48. c = 626 / 48 = 13.0417 -> 13.04; tokens int(13.041667 x 32768) = 427,349.
    QTest::addRow("qwen3.5-27b") << "configs/qwen3.5-27b.json" << 30 * GiB << qint64(32768) << 1
                                 << "auto" << 784 << qint64(626) << "13.04" << qint64(427349)
                                 << qint64(0);
    // Qwen3.5-35B-A3B with an fp8 KV cache: 10 full (2 KV heads of 256) + 30 GDN (16 / 32 heads
    // of 128), SSM float32. per token 2 x 512 x 1 = 1024 B; state: conv 3 x 8192 x 2 (the model
    // dtype, not the KV dtype) = 49,152, SSM 32 x 128 x 128 x 4 = 2,097,152; 2,146,304 B.
    // block 16 x cdiv(2146304, 16384) = 16 x 131 = 2096; page 2096 x 1024 = 2,146,304 (no
    // padding). Group size 10: 4 groups; bytes per block 21,463,040; 12 GiB // that = 600.
    // per request cdiv(262144, 2096) = 126 + 6 = 132. c = 600 / 132 = 4.5455 -> 4.55;
    // tokens int(4.545455 x 262144) = 1,191,563.
    QTest::addRow("qwen3.5-35b-a3b fp8 KV")
        << "configs/qwen3.5-35b-a3b.json" << 12 * GiB << qint64(262144) << 1 << "fp8" << 2096
        << qint64(600) << "4.55" << qint64(1191563) << qint64(0);
    // Nemotron-H-56B at TP 2: hybrid_override_pattern 10 "*" (8 / 2 = 4 KV heads of 128) + 54
    // "M" + 54 "-" (no cache). Mamba2: 256 heads x 64 (intermediate 16,384), 8 groups, state
    // 256, conv 4; SSM float32 (vLLM's Nemotron-H default). per token 4 x 256 x 2 = 2048 B;
    // state per rank: conv 3 x (16384 + 2 x 8 x 256) / 2 x 2 = 61,440, SSM 128 x 64 x 256 x 4 =
    // 8,388,608; 8,450,048 B. block 16 x cdiv(8450048, 32768) = 16 x 258 = 4128; page 4128 x
    // 2048 = 8,454,144. Group size 10 (54 >= 15): 1 attention + 6 state groups; bytes per block
    // 84,541,440; 20 GiB // that = 254. per request cdiv(8192, 4128) = 2 + 2 x 6 = 14.
    // c = 254 / 14 = 18.1429 -> 18.14; tokens int(18.142857 x 8192) = 148,626.
    QTest::addRow("nemotron-h-56b tp 2 (Infinity in the config)")
        << "configs/nemotron-h-56b-base-8k.json" << 20 * GiB << qint64(8192) << 2 << "auto" << 4128
        << qint64(254) << "18.14" << qint64(148626) << qint64(0);
    // Nemotron-3-Nano-30B-A3B: 6 "*" (2 KV heads of 128) + 23 "M" + 23 "E"; Mamba2 64 heads x 64,
    // 8 groups, state 128; mamba_ssm_cache_dtype float32. per token 2 x 256 x 2 = 1024 B; state
    // conv 3 x (4096 + 2 x 8 x 128) x 2 = 36,864, SSM 64 x 64 x 128 x 4 = 2,097,152; 2,134,016.
    // block 16 x cdiv(2134016, 16384) = 16 x 131 = 2096; page 2,146,304. Group size 6 (23 >=
    // 9): 1 + 4 groups; bytes per block 12,877,824; 8 GiB // that = 667. per request
    // cdiv(262144, 2096) = 126 + 2 x 4 = 134. c = 667 / 134 = 4.9776 -> 4.98;
    // tokens int(4.977612 x 262144) = 1,304,851.
    QTest::addRow("nemotron-3-nano")
        << "configs/nvidia-nemotron-3-nano-30b-a3b-bf16.json" << 8 * GiB << qint64(262144) << 1
        << "auto" << 2096 << qint64(667) << "4.98" << qint64(1304851) << qint64(0);
    // DeepSeek-V3 (MLA) at TP 8, bf16: one latent of 512 + 64 per token and layer on every rank;
    // FLASH_ATTN_MLA keeps block 16. page 16 x 576 x 2 = 18,432; 61 layers, one group: bytes
    // per block 1,124,352; 40 GiB // that = 38,199. per request cdiv(163840, 16) = 10,240.
    // c = 38199 / 10240 = 3.7304 -> 3.73; tokens int(3.730371 x 163840) = 611,184.
    QTest::addRow("deepseek-v3 mla tp 8")
        << "deepseek-v3.json" << 40 * GiB << qint64(163840) << 8 << "auto" << 16 << qint64(38199)
        << "3.73" << qint64(611184) << qint64(0);
    // DeepSeek-V3 with fp8: FLASH_ATTN_MLA takes no fp8, FLASHMLA does, with block 64. page
    // 64 x 576 x 1 = 36,864; bytes per block 61 x that = 2,248,704; 40 GiB // that = 19,099.
    // per request cdiv(163840, 64) = 2560. c = 19099 / 2560 = 7.4605 -> 7.46;
    // tokens int(7.460547 x 163840) = 1,222,336.
    QTest::addRow("deepseek-v3 mla fp8 tp 8")
        << "deepseek-v3.json" << 40 * GiB << qint64(163840) << 8 << "fp8" << 64 << qint64(19099)
        << "7.46" << qint64(1222336) << qint64(0);
    // DeepSeek-V3.2 (sparse attention, index_topk 2048) at TP 8 with fp8: FlashMLA's sparse
    // kernels (block 64) store fp8 as fp8_ds_mla, 656 B per token, and every layer's indexer
    // keeps its own K cache, an MLAAttentionSpec of one 128 + 128 / 128 x 4 = 132-byte head
    // (DeepseekV32IndexerCache, model_executor/models/deepseek_v2.py). 122 MLA-type specs of one
    // block size: one UniformTypeKVCacheSpecs group, bytes per block 61 x 64 x (656 + 132) =
    // 3,076,352; 40 GiB // that = 13,961. per request cdiv(163840, 64) = 2560.
    // c = 13961 / 2560 = 5.4535 -> 5.45; tokens int(5.453516 x 163840) = 893,504.
    QTest::addRow("deepseek-v3.2 sparse mla fp8 tp 8 (indexer cache)")
        << "configs/deepseek-v3.2.json" << 40 * GiB << qint64(163840) << 8 << "fp8" << 64
        << qint64(13961) << "5.45" << qint64(893504) << qint64(0);
    // The same in bf16: 576 x 2 = 1152 B + the indexer's 132 (fp8 whatever the KV dtype);
    // bytes per block 61 x 64 x 1284 = 5,012,736; 40 GiB // that = 8568; c = 8568 / 2560 =
    // 3.3469 -> 3.35; tokens int(3.346875 x 163840) = 548,352.
    QTest::addRow("deepseek-v3.2 sparse mla bf16 tp 8 (indexer cache)")
        << "configs/deepseek-v3.2.json" << 40 * GiB << qint64(163840) << 8 << "auto" << 64
        << qint64(8568) << "3.35" << qint64(548352) << qint64(0);
    // Llama-3.3-70B at TP 4: 80 full layers, 8 / 4 = 2 KV heads of 128. page 16 x 2 x 256 x 2 =
    // 16,384; bytes per block 80 x that = 1,310,720; 20 GiB // that = 16,384. per request
    // cdiv(131072, 16) = 8192; c = 2.00; tokens 262,144.
    QTest::addRow("llama-3.3-70b tp 4")
        << "configs/llama-3.3-70b-instruct.json" << 20 * GiB << qint64(131072) << 4 << "auto" << 16
        << qint64(16384) << "2.00" << qint64(262144) << qint64(0);
    // Qwen3-8B: 36 full layers, 8 KV heads of 128. page 65,536; bytes per block 2,359,296;
    // 10 GiB // that = 4551. per request cdiv(40960, 16) = 2560. c = 1.7777 -> 1.78;
    // tokens int(1.777734 x 40960) = 72,816.
    QTest::addRow("qwen3-8b") << "configs/qwen3-8b.json" << 10 * GiB << qint64(40960) << 1 << "auto"
                              << 16 << qint64(4551) << "1.78" << qint64(72816) << qint64(0);
}

// Nemotron-H-56B (the catalog's nemotron-h-56b, its config.json naming no
// mamba_ssm_cache_dtype) in 40 GiB at max_model_len 8192, TP 1: an independent reading of
// vLLM v1 gave 31.5x where the ledger gives 18.14x. Both are vLLM's answer, under different
// assumptions; the rows say which.
//   Mamba page: conv 3 x (16384 + 2 x 8 x 256) x 2 = 122,880 B, SSM 256 x 64 x 256 x S
//   (S = 4 for float32: 16,777,216; 2 for float16: 8,388,608). Attention 4,096 B per token.
//   Block (Platform._align_hybrid_block_size): A x cdiv(page, A x 4096), where A is the
//   kernel alignment, max(FLASH_ATTN's MultipleOf(16), --block-size): float32 4128
//   (16 x 258), or 4160 (64 x 65) with --block-size 64; float16 2080 (16 x 130).
//   Groups: 10 attention + 54 Mamba layers, group size 10: 1 + 6 groups; bytes per block
//   10 x block x 4096; 40 GiB // that = 254 (4128), 252 (4160), 504 (2080).
//   Per request: attention cdiv(8192, block) (2, 2, 4) + per Mamba group 2 in mode "align"
//   (the default with prefix caching since vLLM 0.28, PR #50991) or 1 in mode "none"
//   (MambaSpec.max_memory_usage_bytes, vllm/v1/kv_cache_interface.py).
// So 18.14x = 254 / 14 is vLLM >= 0.28's default; 31.75x = 254 / 8 is mode "none" (0.27 and
// before, or --mamba-cache-mode none); the 31.5x read is mode "none" with a 64-token
// alignment (252 / 8), or float16 SSM state with "align" (504 / 16): float16 is what vLLM
// before 0.20 picked for NemotronH (PR #39032 made it float32).
void TestConfigs::nemotronH56b_data() {
    QTest::addColumn<QString>("version");
    QTest::addColumn<QStringList>("extra");
    QTest::addColumn<qint64>("blockSize");
    QTest::addColumn<qint64>("numBlocks");
    QTest::addColumn<qint64>("blocksPerRequest");
    QTest::addColumn<double>("concurrency");
    QTest::addRow("0.31 default (align: 2 state blocks per group)")
        << "0.31.0" << QStringList{} << qint64(4128) << qint64(254) << qint64(14) << 18.14;
    QTest::addRow("0.31 --mamba-cache-mode none")
        << "0.31.0" << QStringList{"--mamba-cache-mode", "none"} << qint64(4128) << qint64(254)
        << qint64(8) << 31.75;
    QTest::addRow("0.27 default (none)")
        << "0.27.0" << QStringList{} << qint64(4128) << qint64(254) << qint64(8) << 31.75;
    QTest::addRow("0.27 --block-size 64: the independent 31.5x")
        << "0.27.0" << QStringList{"--block-size", "64"} << qint64(4160) << qint64(252) << qint64(8)
        << 31.5;
    QTest::addRow("0.31 float16 SSM state with align: also 31.5x")
        << "0.31.0" << QStringList{"--mamba-ssm-cache-dtype", "float16"} << qint64(2080)
        << qint64(504) << qint64(16) << 31.5;
    QTest::addRow("0.19 default (float16 SSM, none)")
        << "0.19.0" << QStringList{} << qint64(2080) << qint64(504) << qint64(10) << 50.4;
    QTest::addRow("0.20 default (float32 SSM, none)")
        << "0.20.0" << QStringList{} << qint64(4128) << qint64(254) << qint64(8) << 31.75;
}

void TestConfigs::nemotronH56b() {
    QFETCH(QString, version);
    QFETCH(QStringList, extra);
    QFETCH(qint64, blockSize);
    QFETCH(qint64, numBlocks);
    QFETCH(qint64, blocksPerRequest);
    QFETCH(double, concurrency);
    const Run r = run(QStringList{"ledger", "--model", "nemotron-h-56b", "--gpu", "h100-80gb",
                                  "--kv-memory-gib", "40", "--context", "8192", "--vllm-version",
                                  version, "--json"} +
                      extra);
    const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QVERIFY2(!j.isEmpty(), qPrintable(r.err));
    QCOMPARE(j.value("block_size").toInteger(), blockSize);
    QCOMPARE(j.value("num_gpu_blocks").toInteger(), numBlocks);
    QCOMPARE(j.value("blocks_per_request").toInteger(), blocksPerRequest);
    QCOMPARE(j.value("max_concurrency").toDouble(), concurrency);
}

// vLLM 0.19+ (PR #38270, vllm/config/compilation.py) refuses a hybrid whose max_num_seqs
// exceeds the pool's blocks, with the number to lower it to; 0.18 capped the CUDA graphs
// silently and started. Qwen3.5-27B in 30 GiB: 626 blocks (ledgerMatchesVllm) against the
// H100's default 1024 (vLLM #49064 reports the same on Qwen3.6/3.8-27B).
void TestConfigs::mambaSeqsRefusal() {
    const QStringList base{"ledger",          "--config", fixture("configs/qwen3.5-27b.json"),
                           "--kv-memory-gib", "30",       "--max-model-len",
                           "32768",           "--json"};
    auto ledger = [&](const QStringList& extra) {
        const Run r = run(base + extra);
        return QJsonDocument::fromJson(r.out.toUtf8()).object();
    };
    const QJsonObject now = ledger({});
    QCOMPARE(now.value("num_gpu_blocks").toInteger(), qint64(626));
    QCOMPARE(now.value("error").toString(),
             QStringLiteral("vLLM refuses to start: max_num_seqs (1024) exceeds available Mamba "
                            "cache blocks (626). Each decode sequence requires one Mamba cache "
                            "block, so CUDA graph capture cannot proceed. Please lower "
                            "max_num_seqs to at most 626 or increase gpu_memory_utilization."));
    QVERIFY(now.value("vllm_refused").toBool());
    bool clamp = false;
    for (const auto& w : now.value("warnings").toArray())
        clamp = clamp || w.toString().contains(QStringLiteral("--max-num-seqs 626"));
    QVERIFY(clamp);
    QVERIFY(ledger({"--max-num-seqs", "626"}).value("error").isNull());
    QVERIFY(!ledger({"--max-num-seqs", "627"}).value("error").isNull());
    QVERIFY(ledger({"--vllm-version", "0.18.1"}).value("error").isNull());
}

// Issue 29's one number: what vLLM runs is 0 when it refuses, else the requests that fit capped
// by max_num_seqs; the JSON keeps what the KV cache holds beside it.
void TestConfigs::requestsYouCanRun_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("why"); // "refused", "cap" (max_num_seqs) or "fit"
    QTest::addRow("gemma-3-27b at 128K on an H100: refused")
        << QStringList{"--model", "gemma-3-27b", "--context", "131072"} << "refused";
    // 256-token requests of 32 MiB: about 1,675 fit in 52.36 GiB, over max_num_seqs 1,024. (At
    // 1K it took the 2K shared prefix the default no longer assumes: 418 fit without it.)
    QTest::addRow("llama-3-8b at 256: max_num_seqs caps it")
        << QStringList{"--model", "llama-3-8b", "--context", "256"} << "cap";
    QTest::addRow("llama-3-8b at 32K: what fits")
        << QStringList{"--model", "llama-3-8b", "--context", "32768", "--max-model-len", "32768"}
        << "fit";
    QTest::addRow("max_num_seqs 7 caps it")
        << QStringList{"--model", "llama-3-8b", "--max-num-seqs", "7"} << "cap";
}

void TestConfigs::requestsYouCanRun() {
    QFETCH(QStringList, args);
    QFETCH(QString, why);
    const Run r = run(QStringList{"ledger", "--json"} + args);
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    const qint64 fit = o.value("max_requests_at_context").toInteger();
    const qint64 seqs = o.value("max_num_seqs").toInteger();
    const qint64 run = o.value("requests_you_can_run").toInteger();
    QVERIFY(fit > 0);
    if (why == QLatin1String("refused")) {
        QVERIFY(o.value("vllm_refused").toBool());
        QCOMPARE(run, qint64(0));
    } else if (why == QLatin1String("cap")) {
        QVERIFY(fit > seqs);
        QCOMPARE(run, seqs);
    } else {
        QVERIFY(fit < seqs);
        QCOMPARE(run, fit);
    }
    const Run text = kvl::test::run(QStringList{"ledger"} + args);
    QVERIFY2(text.out.contains(QStringLiteral("you can run   ")), qPrintable(text.out));
}

void TestConfigs::ledgerMatchesVllm() {
    QFETCH(QString, config);
    QFETCH(qint64, kvMemory);
    QFETCH(qint64, maxModelLen);
    QFETCH(int, tp);
    QFETCH(QString, kvDtype);
    QFETCH(int, blockSize);
    QFETCH(qint64, numBlocks);
    QFETCH(QString, concurrency);
    QFETCH(qint64, tokens);
    QFETCH(qint64, estimate);
    // --max-num-seqs 128: below every hybrid's Mamba blocks here, which vLLM 0.19+ requires
    // (mambaSeqsRefusal); the seqs change none of the figures checked.
    const Run r =
        run({"ledger", "--config", fixture(config), "--kv-memory-bytes", QString::number(kvMemory),
             "--max-model-len", QString::number(maxModelLen), "--tp", QString::number(tp),
             "--kv-dtype", kvDtype, "--max-num-seqs", "128", "--json"});
    // A refusal is a result, not bad input: exit 0 with "error" set.
    QCOMPARE(r.rc, 0);
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    QJsonParseError pe;
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8(), &pe).object();
    QCOMPARE(pe.error, QJsonParseError::NoError);
    QCOMPARE(o.value("block_size").toInt(), blockSize);
    QCOMPARE(o.value("max_model_len").toInteger(), maxModelLen);
    QCOMPARE(o.value("num_gpu_blocks").toInteger(), numBlocks);
    QCOMPARE(QString::number(o.value("max_concurrency").toDouble(), 'f', 2), concurrency);
    const QString error = o.value("error").toString();
    if (estimate == 0) {
        QVERIFY2(o.value("error").isNull(), qPrintable(error));
        QCOMPARE(o.value("gpu_kv_cache_tokens").toInteger(), tokens);
    } else {
        QVERIFY2(error.contains(QStringLiteral("To serve at least one request with the model's "
                                               "max seq len (%1)")
                                    .arg(maxModelLen)),
                 qPrintable(error));
        QVERIFY2(error.contains(
                     QStringLiteral("the estimated maximum model length is %1.").arg(estimate)),
                 qPrintable(error));
        // The JSON field the ledger adds for it (issue 9), where this build has it.
        if (o.contains("estimated_max_model_len"))
            QCOMPARE(o.value("estimated_max_model_len").toInteger(), estimate);
    }
}

// LMCache issue 1739: Qwen3-14B (40 layers, 8 KV heads of 128, bf16), 6.51 GiB of KV cache at
// 32,768 tokens. 6.51 GiB = round(6.51 x 2^30) = 6,990,059,274 B; bytes per block 40 x
// 16 x 8 x 256 x 2 = 2,621,440; 2666 blocks; per request cdiv(32768, 16) = 2048;
// c = 2666 / 2048 = 1.3018 -> 1.30x; tokens int(1.3018 x 32768) = 42,656.
void TestConfigs::lmcache1739() {
    const QStringList args{"ledger", "--model",         "qwen3-14b", "--kv-memory-gib",
                           "6.51",   "--max-model-len", "32768"};
    const Run text = run(args);
    QCOMPARE(text.rc, 0);
    QVERIFY2(text.out.contains(QStringLiteral("GPU KV cache size: 42,656 tokens")),
             qPrintable(text.out));
    QVERIFY2(text.out.contains(QStringLiteral("32,768 tokens per request: 1.30x")),
             qPrintable(text.out));
    const Run json = run(args + QStringList{"--json"});
    QCOMPARE(json.rc, 0);
    const QJsonObject o = QJsonDocument::fromJson(json.out.toUtf8()).object();
    QCOMPARE(o.value("gpu_kv_cache_tokens").toInteger(), qint64(42656));
    QCOMPARE(o.value("num_gpu_blocks").toInteger(), qint64(2666));
    QCOMPARE(o.value("max_concurrency").toDouble(), 1.30);
    QCOMPARE(o.value("available_kv_bytes").toInteger(), qint64(6990059274));
}

QTEST_GUILESS_MAIN(TestConfigs)
#include "tst_configs.moc"
