#include "help_text.h"

#include <QCoreApplication>

namespace kvl::app {

namespace {
QString tr(const char* text) {
    return QCoreApplication::translate("kvl::app::Help", text);
}

QString row(const QString& what, const QString& formula, const QString& source) {
    return QStringLiteral("<tr><td><b>%1</b></td><td>%2</td><td><i>%3</i></td></tr>")
        .arg(what, formula, source);
}

// The formulas table, a row a quantity; each text goes through tr() when shown.
struct FormulaRow {
    const char* what;
    const char* formula;
    const char* source;
};

constexpr FormulaRow kFormulaRows[] = {
    {"KV heads per GPU",
     "max(1, KV heads / TP): with fewer KV heads than GPUs "
     "the heads are replicated, not split; MLA keeps its one "
     "latent on every TP rank (divided by DCP)",
     "vLLM QKVParallelLinear"},
    {"KV bytes per token",
     "2 x layers x KV heads x head_dim x bytes per element, plus the scales of the "
     "format (per token-head: 2 x KV heads x scale bytes per layer); MLA: layers x "
     "(kv_lora_rank + qk_rope_head_dim) x bytes",
     "vLLM docs: Quantized KV Cache; kv_cache_interface.py"},
    {"Page (block) bytes",
     "block size B x one layer's bytes per token per GPU (page_size_bytes); a pool "
     "block spans one layer of every KV cache group",
     "kv_cache_interface.py"},
    {"KV cache groups",
     "layers of one spec (full, sliding window W, chunked C, MLA, Mamba state) share "
     "a group; every group has the same number of layers, padded with empty slots, "
     "and all groups draw blocks from one pool",
     "kv_cache_utils.py get_kv_cache_groups"},
    {"Blocks per request",
     "ceil(context / B) per full-attention layer slot; sliding and chunked layers "
     "keep only their window (plus the tokens in flight); Mamba layers one state "
     "(more with prefix caching's align / all modes)",
     "SlidingWindowManager, MambaManager"},
    {"KV per request",
     "blocks per request x bytes per block (paged), or max_model_len x bytes per "
     "token (contiguous: every request reserves the maximum)",
     "vLLM PagedAttention"},
    {"Prefix sharing",
     "a shared prefix of P tokens is stored once per sharing group: each further "
     "request saves floor(P / B) full blocks",
     "vLLM automatic prefix caching"},
    {"Memory for KV (the pool)",
     "GPU memory x gpu_memory_utilization - weights per GPU - activation peak - "
     "non-torch memory - CUDA graphs (estimated until set); "
     "num_gpu_blocks = floor(pool / bytes per block)",
     "vLLM gpu_worker.determine_available_memory"},
    {"GPU KV cache size",
     "int(maximum concurrency x max_model_len) tokens; older vLLM printed "
     "num_gpu_blocks x B / groups, shown beside it",
     "kv_cache_utils.py"},
    {"Maximum concurrency",
     "num_gpu_blocks / the blocks one max_model_len request is admitted with",
     "get_max_concurrency_for_kv_cache_config"},
    {"Requests that fit",
     "the most requests of the context whose blocks (shared prefix blocks once per "
     "group) fit in the pool; vLLM runs at most max_num_seqs of them per replica",
     "KV Ledger; vLLM scheduler"},
    {"Per GPU, per replica, cluster",
     "per replica = per GPU x TP x PP (bytes; requests are per replica); cluster = "
     "per replica x DP. KV per token x context = KV per request in every scope "
     "(contiguous, or paged at whole blocks)",
     "View > Figures"},
};
} // namespace

QString formulasHtml() {
    QString h = QStringLiteral("<table cellspacing='0' cellpadding='5' border='1'>");
    h += QStringLiteral("<tr><th>%1</th><th>%2</th><th>%3</th></tr>")
             .arg(tr("Quantity"), tr("Formula"), tr("Source"));
    for (const FormulaRow& r : kFormulaRows)
        h += row(tr(r.what), tr(r.formula), tr(r.source));
    h += QStringLiteral("</table>");
    return h;
}

} // namespace kvl::app
