#include "gpu_probe/probe_json.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <unistd.h>

namespace kvl::probe {

using io::Json;

namespace {

Json num(double v) {
    return std::isfinite(v) ? Json(v) : Json(nullptr);
}
Json i64(std::int64_t v) {
    return Json(v);
}

} // namespace

std::string utcNow() {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string hostName() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0)
        return "unknown";
    return buf;
}

Json envelope(const std::string& command, const std::string& backend, const std::string& device,
              double copyGBs) {
    Json j(Json::Object{});
    j.set("tool", "kvprobe");
    j.set("schema_version", kSchemaVersion);
    j.set("command", command);
    j.set("backend", backend);
    j.set("device", device);
    j.set("date", utcNow());
    j.set("host", hostName());
    j.set("copy_bandwidth_gbs", num(copyGBs));
    return j;
}

Json toJson(const std::vector<QualityPoint>& q) {
    Json::Array a;
    for (const auto& p : q) {
        Json o(Json::Object{});
        o.set("context", i64(p.context));
        o.set("rel_l2_error", num(p.relL2));
        o.set("max_abs_error", num(p.maxAbs));
        o.set("top8_agreement", num(p.top8));
        o.set("kernel_vs_reference_rel_l2", num(p.kernelVsRefRelL2));
        a.push_back(std::move(o));
    }
    return Json(std::move(a));
}

Json toJson(const ProbeResult& r) {
    Json o(Json::Object{});
    o.set("ok", r.ok());
    o.set("error", r.error.message);
    o.set("format", r.formatId);
    o.set("format_label", r.formatLabel);
    o.set("dtype", r.dtype);
    o.set("model", r.modelId);
    o.set("kv_heads", r.kvHeads);
    o.set("q_heads", r.qHeads);
    o.set("head_dim", r.headDim);
    o.set("block_size", r.blockSize);
    o.set("batch", r.batch);
    o.set("context", i64(r.context));
    o.set("prefix_tokens", i64(r.prefixTokens));
    o.set("layers", 1);
    o.set("page_bytes", i64(r.pageBytes));
    o.set("predicted_pool_bytes", i64(r.predictedPoolBytes));
    o.set("pool_bytes", i64(r.poolBytes));
    o.set("allocated_pool_bytes", i64(r.allocatedPoolBytes));
    o.set("device_pool_bytes", i64(r.devicePoolBytes));
    o.set("device_account", r.deviceAccountKind);
    o.set("allocator_granularity_bytes", i64(r.allocatorGranularity));
    o.set("memory_error_pct", num(r.memoryErrorPct));
    o.set("pages_used", i64(r.pagesUsed));
    o.set("pages_saved", i64(r.pagesSaved));
    if (r.speedMeasured) {
        o.set("copy_gbs", num(r.copyGBs));
        o.set("store_ms", num(r.storeMs));
        o.set("store_bytes", i64(r.storeBytes));
        o.set("store_gbs", num(r.storeGBs));
        o.set("store_pct_of_copy", num(r.storePctOfCopy));
        o.set("attention_ms", num(r.attentionMs));
        o.set("attention_bytes", i64(r.attentionBytes));
        o.set("tokens_per_s", num(r.tokensPerS));
        o.set("attention_gbs", num(r.attentionGBs));
        o.set("pct_of_copy", num(r.attentionPctOfCopy));
    }
    if (r.qualityMeasured) {
        o.set("data", r.dataSource);
        o.set("rel_l2_error", num(r.relL2));
        o.set("max_abs_error", num(r.maxAbs));
        o.set("top8_agreement", num(r.top8));
        o.set("kernel_vs_reference_rel_l2", num(r.kernelVsRefRelL2));
        o.set("k_rel_l2_error", num(r.kRelL2));
        o.set("v_rel_l2_error", num(r.vRelL2));
        o.set("k_max_abs_error", num(r.kMaxAbs));
        o.set("v_max_abs_error", num(r.vMaxAbs));
    }
    o.set("quality_vs_context", toJson(r.qualityVsContext));
    Json::Array notes;
    for (const auto& n : r.notes)
        notes.emplace_back(n);
    o.set("notes", Json(std::move(notes)));
    return o;
}

Json toJson(const CheckReport& r) {
    Json j = envelope("check", r.backend, r.device, 0);
    j.set("passed", r.passed);
    j.set("failed", r.failed);
    j.set("error", r.error.message);
    Json::Array cases;
    for (const auto& c : r.cases) {
        Json o(Json::Object{});
        o.set("name", c.name);
        o.set("passed", c.passed);
        o.set("detail", c.detail);
        cases.push_back(std::move(o));
    }
    j.set("checks", Json(std::move(cases)));
    return j;
}

Json toJson(const ProbeReport& r) {
    Json j = envelope("bench", r.backend, r.device, r.copyGBs);
    j.set("error", r.error.message);
    Json::Array rows;
    for (const auto& x : r.rows)
        rows.push_back(toJson(x));
    j.set("results", Json(std::move(rows)));
    Json::Array q;
    for (const auto& [label, pts] : r.qualityVsContext) {
        Json o(Json::Object{});
        o.set("format_label", label);
        o.set("points", toJson(pts));
        q.push_back(std::move(o));
    }
    j.set("quality_vs_context", Json(std::move(q)));
    return j;
}

Json toJson(const std::vector<BackendInfo>& b) {
    Json::Array a;
    for (const auto& x : b) {
        Json o(Json::Object{});
        o.set("name", x.name);
        o.set("available", x.available);
        o.set("reason", x.reason);
        o.set("device", x.device);
        o.set("memory_bytes", i64(x.memoryBytes));
        o.set("details", x.details);
        a.push_back(std::move(o));
    }
    return Json(std::move(a));
}

} // namespace kvl::probe
