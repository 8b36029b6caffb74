#include "gpu_probe/results_io.h"

#include "core/io/json.h"
#include "gpu_probe/probe_json.h"

#include <cmath>
#include <limits>

namespace kvl::probe {

using io::Json;

namespace {

struct Failure {
    std::string message;
};

constexpr std::int64_t kMaxBytes = std::int64_t(1) << 56; // 64 PiB: beyond any pool
constexpr std::int64_t kMaxCount = std::int64_t(1) << 40;
constexpr std::size_t kMaxRows = 100000;

std::string typeName(const Json& j) {
    switch (j.type()) {
    case Json::Type::Null:
        return "null";
    case Json::Type::Bool:
        return "a boolean";
    case Json::Type::Number:
        return j.dump(-1);
    case Json::Type::String: {
        std::string s = j.dump(-1);
        return "string " + (s.size() > 40 ? s.substr(0, 37) + "..." : s);
    }
    case Json::Type::Array:
        return "an array";
    case Json::Type::Object:
        return "an object";
    }
    return "a value";
}

// Typed fields of one object; every failure names "<source>: <prefix><field>".
class Fields {
public:
    Fields(const Json& obj, std::string where) : m_obj(obj), m_where(std::move(where)) {}

    [[noreturn]] void fail(std::string_view field, const std::string& problem) const {
        throw Failure{m_where + std::string(field) + " " + problem};
    }
    const Json* get(std::string_view key) const { return m_obj.find(key); }
    const Json& need(std::string_view key) const {
        const Json* v = get(key);
        if (!v)
            fail(key, "is missing");
        return *v;
    }

    std::string str(std::string_view key, bool required) const {
        const Json* v = required ? &need(key) : get(key);
        if (!v || v->isNull())
            return {};
        if (!v->isString())
            fail(key, "must be a string, got " + typeName(*v));
        if (v->asString().size() > 4096)
            fail(key, "is longer than 4096 characters");
        return v->asString();
    }
    bool boolean(std::string_view key, bool required, bool def = false) const {
        const Json* v = required ? &need(key) : get(key);
        if (!v || v->isNull())
            return def;
        if (!v->isBool())
            fail(key, "must be true or false, got " + typeName(*v));
        return v->asBool();
    }
    std::int64_t integer(std::string_view key, bool required, std::int64_t lo, std::int64_t hi,
                         const char* what = "a count") const {
        const Json* v = required ? &need(key) : get(key);
        if (!v || v->isNull())
            return 0;
        const auto i = v->isNumber() ? v->asInt64() : std::nullopt;
        if (!i)
            fail(key, std::string("must be an integer (") + what + "), got " + typeName(*v));
        if (*i < lo)
            fail(key, lo == 0 ? "must not be negative, got " + typeName(*v)
                              : "must be at least " + std::to_string(lo) + ", got " + typeName(*v));
        if (*i > hi)
            fail(key, "must be at most " + std::to_string(hi) + ", got " + typeName(*v));
        return *i;
    }
    std::int64_t bytes(std::string_view key, bool required) const {
        return integer(key, required, 0, kMaxBytes, "bytes");
    }
    // A finite number >= lo (kvprobe writes null for a non-finite value: read as NaN).
    double number(std::string_view key, bool required, double lo = 0,
                  double hi = std::numeric_limits<double>::max()) const {
        const Json* v = required ? &need(key) : get(key);
        if (!v)
            return 0;
        if (v->isNull())
            return std::numeric_limits<double>::quiet_NaN();
        if (!v->isNumber())
            fail(key, "must be a number, got " + typeName(*v));
        const double d = v->asDouble();
        if (!std::isfinite(d) || d < lo || d > hi)
            fail(key, "must be a number " +
                          (hi < std::numeric_limits<double>::max()
                               ? "in [" + Json(lo).dump(-1) + ", " + Json(hi).dump(-1) + "]"
                               : ">= " + Json(lo).dump(-1)) +
                          ", got " + typeName(*v));
        return d;
    }
    const Json::Array* array(std::string_view key, bool required) const {
        const Json* v = required ? &need(key) : get(key);
        if (!v || v->isNull())
            return nullptr;
        if (!v->isArray())
            fail(key, "must be an array, got " + typeName(*v));
        if (v->asArray().size() > kMaxRows)
            fail(key, "has more than " + std::to_string(kMaxRows) + " entries");
        return &v->asArray();
    }

    const std::string& where() const { return m_where; }

private:
    const Json& m_obj;
    std::string m_where;
};

const Json& objectAt(const Json::Array& a, std::size_t i, const std::string& where) {
    if (!a[i].isObject())
        throw Failure{where + " must be an object, got " + typeName(a[i])};
    return a[i];
}

std::vector<QualityPoint> readQuality(const Json::Array& a, const std::string& where) {
    std::vector<QualityPoint> out;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const std::string w = where + "[" + std::to_string(i) + "]";
        const Fields f(objectAt(a, i, w), w + ".");
        QualityPoint p;
        p.context = f.integer("context", true, 1, kMaxCount, "tokens");
        p.relL2 = f.number("rel_l2_error", true);
        p.maxAbs = f.number("max_abs_error", false);
        p.top8 = f.number("top8_agreement", false, 0, 1);
        p.kernelVsRefRelL2 = f.number("kernel_vs_reference_rel_l2", false);
        out.push_back(p);
    }
    return out;
}

ProbeResult readResult(const Json& o, const std::string& where, const std::string& backend,
                       const std::string& device) {
    const Fields f(o, where + ".");
    ProbeResult r;
    r.backend = backend;
    r.device = device;
    const bool ok = f.boolean("ok", true);
    const std::string error = f.str("error", false);
    // A file does not say why a row failed: its code is Internal, its message the file's.
    r.status = ok ? ProbeStatus::Ok : ProbeStatus::Failed;
    r.error = ok ? Error{} : Error{ErrorCode::Internal, error};
    r.formatId = f.str("format", true);
    if (r.ok() && r.formatId.empty())
        f.fail("format", "must not be empty");
    r.formatLabel = f.str("format_label", false);
    if (r.formatLabel.empty())
        r.formatLabel = r.formatId;
    r.dtype = f.str("dtype", false);
    r.modelId = f.str("model", false);
    // A failed row may stop before the shapes are known: only successful rows need them.
    const bool need = r.ok();
    r.kvHeads = int(f.integer("kv_heads", need, 0, 1 << 20));
    r.qHeads = int(f.integer("q_heads", need, 0, 1 << 20));
    r.headDim = int(f.integer("head_dim", need, 0, 1 << 20));
    r.blockSize = int(f.integer("block_size", need, 0, 1 << 20));
    r.batch = int(f.integer("batch", need, 0, 1 << 24));
    r.context = f.integer("context", need, 0, kMaxCount, "tokens");
    r.prefixTokens = f.integer("prefix_tokens", false, 0, kMaxCount, "tokens");
    if (const Json* layers = f.get("layers"); layers && !layers->isNull()) {
        if (f.integer("layers", false, 0, 1 << 20) > 1)
            f.fail("layers", "must be 1 (kvprobe measures one layer), got " + typeName(*layers));
    }
    if (r.ok()) {
        for (const char* k : {"kv_heads", "q_heads", "head_dim", "block_size", "batch", "context"})
            if (f.integer(k, true, 1, kMaxCount) < 1)
                f.fail(k, "must be positive");
    }
    r.pageBytes = f.bytes("page_bytes", need);
    r.predictedPoolBytes = f.bytes("predicted_pool_bytes", need);
    r.poolBytes = f.bytes("pool_bytes", need);
    r.allocatedPoolBytes = f.bytes("allocated_pool_bytes", false);
    if (r.allocatedPoolBytes == 0)
        r.allocatedPoolBytes = r.poolBytes;
    r.devicePoolBytes = f.bytes("device_pool_bytes", false);
    r.deviceAccountKind = f.str("device_account", false);
    r.allocatorGranularity = f.bytes("allocator_granularity_bytes", false);
    r.memoryErrorPct = f.number("memory_error_pct", false, -1e9, 1e9);
    r.pagesUsed = f.integer("pages_used", need, 0, kMaxCount, "pages");
    r.pagesSaved = f.integer("pages_saved", need, 0, kMaxCount, "pages");

    // Speed fields come together (kvprobe writes them only when speed was measured).
    if (f.get("attention_ms")) {
        r.speedMeasured = true;
        r.copyGBs = f.number("copy_gbs", false);
        r.storeMs = f.number("store_ms", false);
        r.storeBytes = f.bytes("store_bytes", false);
        r.storeGBs = f.number("store_gbs", false);
        r.storePctOfCopy = f.number("store_pct_of_copy", false);
        r.attentionMs = f.number("attention_ms", true);
        r.attentionBytes = f.bytes("attention_bytes", false);
        r.tokensPerS = f.number("tokens_per_s", false);
        r.attentionGBs = f.number("attention_gbs", false);
        r.attentionPctOfCopy = f.number("pct_of_copy", false);
    }
    if (f.get("rel_l2_error")) {
        r.qualityMeasured = true;
        r.dataSource = f.str("data", false);
        if (r.dataSource.empty())
            r.dataSource = "synthetic";
        r.relL2 = f.number("rel_l2_error", true);
        r.maxAbs = f.number("max_abs_error", false);
        r.top8 = f.number("top8_agreement", false, 0, 1);
        r.kernelVsRefRelL2 = f.number("kernel_vs_reference_rel_l2", false);
        r.kRelL2 = f.number("k_rel_l2_error", false);
        r.vRelL2 = f.number("v_rel_l2_error", false);
        r.kMaxAbs = f.number("k_max_abs_error", false);
        r.vMaxAbs = f.number("v_max_abs_error", false);
    }
    if (const Json::Array* q = f.array("quality_vs_context", false))
        r.qualityVsContext = readQuality(*q, where + ".quality_vs_context");
    if (const Json::Array* notes = f.array("notes", false)) {
        for (std::size_t i = 0; i < notes->size(); ++i) {
            if (!(*notes)[i].isString())
                f.fail("notes[" + std::to_string(i) + "]",
                       "must be a string, got " + typeName((*notes)[i]));
            r.notes.push_back((*notes)[i].asString());
        }
    }
    return r;
}

ProbeReport parse(std::string_view text, const std::string& source) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        throw Failure{source + ": empty file"};
    auto parsed = io::parseJson(text);
    if (auto* e = std::get_if<io::JsonError>(&parsed))
        throw Failure{source + ": not valid JSON: " + e->message};
    const Json& doc = std::get<Json>(parsed);
    if (!doc.isObject())
        throw Failure{source + ": not a kvprobe results file: the top level is " + typeName(doc) +
                      ", not an object"};
    const Fields top(doc, source + ": ");
    const Json* tool = doc.find("tool");
    if (!tool || !tool->isString() || tool->asString() != "kvprobe")
        throw Failure{source + ": not a kvprobe results file (\"tool\" is " +
                      (tool ? typeName(*tool) : std::string("missing")) +
                      ", expected \"kvprobe\")"};
    ProbeReport rep;
    rep.source = source;
    rep.tool = "kvprobe";
    const Json& sv = top.need("schema_version");
    const auto v = sv.isNumber() ? sv.asInt64() : std::nullopt;
    if (!v || *v < 1)
        top.fail("schema_version", "must be a positive integer, got " + typeName(sv));
    if (*v > kSchemaVersion)
        top.fail("schema_version", "is " + std::to_string(*v) + ", newer than this build reads (" +
                                       std::to_string(kSchemaVersion) +
                                       "): update KV Ledger to open it");
    rep.schemaVersion = int(*v);
    rep.command = top.str("command", true);
    if (rep.command == "info" || rep.command == "check")
        throw Failure{source + ": a `kvprobe " + rep.command +
                      "` file has no measurements: open the JSON of `kvprobe run --json` or "
                      "`kvprobe bench --json`"};
    if (rep.command != "run" && rep.command != "bench")
        top.fail("command", "must be \"run\" or \"bench\", got " + typeName(top.need("command")));
    rep.backend = top.str("backend", true);
    rep.device = top.str("device", false);
    rep.date = top.str("date", false);
    rep.host = top.str("host", false);
    rep.copyGBs = top.number("copy_bandwidth_gbs", false);
    if (std::isnan(rep.copyGBs))
        rep.copyGBs = 0;
    if (std::string error = top.str("error", false); !error.empty())
        rep.fail(Error{ErrorCode::Internal, std::move(error)});
    const Json::Array* rows = top.array("results", true);
    if (!rows)
        top.fail("results", "must be an array, got null");
    for (std::size_t i = 0; i < rows->size(); ++i) {
        const std::string w = source + ": results[" + std::to_string(i) + "]";
        rep.rows.push_back(readResult(objectAt(*rows, i, w), w, rep.backend, rep.device));
    }
    if (const Json::Array* q = top.array("quality_vs_context", false)) {
        for (std::size_t i = 0; i < q->size(); ++i) {
            const std::string w = source + ": quality_vs_context[" + std::to_string(i) + "]";
            const Fields f(objectAt(*q, i, w), w + ".");
            std::string label = f.str("format_label", true);
            const Json::Array* pts = f.array("points", true);
            if (!pts)
                f.fail("points", "must be an array, got null");
            rep.qualityVsContext.emplace_back(std::move(label), readQuality(*pts, w + ".points"));
        }
    } else {
        // `run` keeps the sweep inside its one result.
        for (const auto& r : rep.rows)
            if (!r.qualityVsContext.empty())
                rep.qualityVsContext.emplace_back(r.formatLabel, r.qualityVsContext);
    }
    if (rep.rows.empty() && rep.ok())
        throw Failure{source + ": has no measurements (\"results\" is empty)"};
    return rep;
}

} // namespace

std::variant<ProbeReport, std::string> parseProbeReport(std::string_view text,
                                                        const std::string& source) {
    try {
        return parse(text, source);
    } catch (const Failure& f) {
        return f.message;
    } catch (const std::exception& e) {
        return source + ": could not be read: " + e.what();
    } catch (...) {
        return source + ": could not be read";
    }
}

std::variant<ProbeReport, std::string> loadProbeReport(const std::string& path) {
    std::string text;
    if (auto e = io::readFile(path, text))
        return path + ": " + *e;
    const auto slash = path.find_last_of('/');
    return parseProbeReport(text, slash == std::string::npos ? path : path.substr(slash + 1));
}

std::string probeReportToJson(const ProbeReport& rep) {
    Json j = toJson(rep);
    if (!rep.date.empty())
        j.set("date", rep.date);
    if (!rep.host.empty())
        j.set("host", rep.host);
    return j.dump(2) + "\n";
}

} // namespace kvl::probe
