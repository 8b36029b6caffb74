#include "gpu_probe/io/probe_json.h"

#include "gpu_probe/io/results_schema.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <unistd.h>

namespace kvl::probe {

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

// --- the emitter ------------------------------------------------------------------------------

namespace {

// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates, nothing
// above U+10FFFF), or 0.
std::size_t utf8Length(std::string_view s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    const std::size_t n = c < 0x80                 ? 1
                          : c >= 0xC2 && c <= 0xDF ? 2
                          : c >= 0xE0 && c <= 0xEF ? 3
                          : c >= 0xF0 && c <= 0xF4 ? 4
                                                   : 0;
    if (n == 0 || i + n > s.size())
        return 0;
    for (std::size_t k = 1; k < n; ++k)
        if ((b(k) & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F) || // overlong, surrogate
        (c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) > 0x8F))   // overlong, > U+10FFFF
        return 0;
    return n;
}

void appendString(std::string& out, std::string_view s) {
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        const char c = s[i];
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
                out += buf;
            } else if (const std::size_t n = utf8Length(s, i); n == 0) {
                out += "\xEF\xBF\xBD"; // U+FFFD for a byte that is not UTF-8
            } else {
                out.append(s.substr(i, n));
                i += n;
                continue;
            }
        }
        ++i;
    }
    out += '"';
}

} // namespace

void JsonWriter::newline() {
    m_out += '\n';
    m_out.append(2 * m_stack.size(), ' ');
}

void JsonWriter::beforeValue() {
    if (m_afterKey) {
        m_afterKey = false;
        return;
    }
    if (!m_stack.empty()) {
        if (m_stack.back().count++ > 0)
            m_out += ',';
        newline();
    }
}

JsonWriter& JsonWriter::beginObject() {
    beforeValue();
    m_out += '{';
    m_stack.push_back({true, 0});
    return *this;
}

JsonWriter& JsonWriter::beginArray() {
    beforeValue();
    m_out += '[';
    m_stack.push_back({false, 0});
    return *this;
}

JsonWriter& JsonWriter::endObject() {
    return close('}');
}

JsonWriter& JsonWriter::endArray() {
    return close(']');
}

JsonWriter& JsonWriter::close(char bracket) {
    const Level l = m_stack.back();
    m_stack.pop_back();
    if (l.count > 0)
        newline();
    m_out += bracket;
    return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
    if (m_stack.back().count++ > 0)
        m_out += ',';
    newline();
    appendString(m_out, name);
    m_out += ": ";
    m_afterKey = true;
    return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
    beforeValue();
    appendString(m_out, s);
    return *this;
}

JsonWriter& JsonWriter::value(bool b) {
    beforeValue();
    m_out += b ? "true" : "false";
    return *this;
}

JsonWriter& JsonWriter::value(std::int64_t v) {
    beforeValue();
    m_out += std::to_string(v);
    return *this;
}

JsonWriter& JsonWriter::value(double d) {
    if (!std::isfinite(d))
        return null(); // JSON has no NaN or infinity
    beforeValue();
    char buf[32];
    // Shortest text that reads back as the same double, locale-independent.
    const auto r = std::to_chars(buf, buf + sizeof buf, d);
    m_out.append(buf, r.ptr);
    return *this;
}

JsonWriter& JsonWriter::null() {
    beforeValue();
    m_out += "null";
    return *this;
}

std::string JsonWriter::finish() {
    m_out += '\n';
    return std::move(m_out);
}

// --- the documents, driven by the field tables ------------------------------------------------

namespace {

using namespace schema;

template <class S> void writeFields(JsonWriter& w, const S& s, const auto& fields);

void writePoints(JsonWriter& w, const std::vector<QualityPoint>& points) {
    w.beginArray();
    for (const auto& p : points) {
        w.beginObject();
        writeFields(w, p, kPointFields);
        w.endObject();
    }
    w.endArray();
}

template <class S> void writeMember(JsonWriter& w, const S& s, const Member<S>& member) {
    std::visit(
        [&](auto m) {
            using M = decltype(m);
            if constexpr (std::is_same_v<M, std::monostate>) {
                w.value(1); // "layers": kvprobe measures one layer
            } else if constexpr (std::is_same_v<M, std::vector<QualityPoint> S::*>) {
                writePoints(w, s.*m);
            } else if constexpr (std::is_same_v<M, std::vector<std::string> S::*>) {
                w.beginArray();
                for (const auto& text : s.*m)
                    w.value(text);
                w.endArray();
            } else if constexpr (std::is_same_v<M, OkOf>) {
                if constexpr (std::is_same_v<S, ProbeResult>)
                    w.value(s.*(m.member) == ProbeStatus::Ok);
            } else if constexpr (std::is_same_v<M, ProbeStatus S::*>) {
                w.value(probeStatusName(s.*m));
            } else if constexpr (std::is_same_v<M, Error S::*>) {
                w.value((s.*m).message);
            } else {
                w.value(s.*m);
            }
        },
        member);
}

template <class S> void writeFields(JsonWriter& w, const S& s, const auto& fields) {
    for (const auto& f : fields) {
        if constexpr (std::is_same_v<S, ProbeResult>) {
            if (bool ProbeResult::*flag = groupFlag(f.group); flag && !(s.*flag))
                continue;
        }
        w.key(f.key);
        writeMember(w, s, f.member);
    }
}

// tool, schema_version, command: the header of every document.
void writeHeader(JsonWriter& w, std::string_view command) {
    w.key(kTool).value(kToolName);
    w.key(kSchemaVersionKey).value(kSchemaVersion);
    w.key(kCommand).value(command);
}

// A run or bench report; `run` leaves the sweep inside its one row (no top-level
// quality_vs_context), as parseProbeReport expects.
std::string reportJson(const ProbeReport& rep) {
    JsonWriter w;
    w.beginObject();
    writeHeader(w, rep.command);
    writeFields(w, rep, kReportFields);
    w.key(kResults).beginArray();
    for (const auto& row : rep.rows) {
        w.beginObject();
        writeFields(w, row, kResultFields);
        w.endObject();
    }
    w.endArray();
    if (rep.command != "run") {
        w.key(kQualityVsContext).beginArray();
        for (const auto& [label, points] : rep.qualityVsContext) {
            w.beginObject();
            w.key(kFormatLabel).value(label);
            w.key(kPoints);
            writePoints(w, points);
            w.endObject();
        }
        w.endArray();
    }
    w.endObject();
    return w.finish();
}

// The envelope of info and check, which are not results files.
void writeEnvelope(JsonWriter& w, std::string_view command, const std::string& backend,
                   const std::string& device) {
    writeHeader(w, command);
    w.key("backend").value(backend);
    w.key("device").value(device);
    w.key("date").value(utcNow());
    w.key("host").value(hostName());
    w.key("copy_bandwidth_gbs").value(0.0);
}

} // namespace

std::string infoJson(const std::vector<BackendInfo>& backends, bool cudaCompiled) {
    JsonWriter w;
    w.beginObject();
    writeEnvelope(w, "info", "", "");
    w.key("backends").beginArray();
    for (const auto& b : backends) {
        w.beginObject();
        w.key("name").value(b.name);
        w.key("available").value(b.available);
        w.key("reason").value(b.reason);
        w.key("device").value(b.device);
        w.key("memory_bytes").value(b.memoryBytes);
        w.key("details").value(b.details);
        w.endObject();
    }
    w.endArray();
    w.key("cuda_compiled").value(cudaCompiled);
    w.endObject();
    return w.finish();
}

std::string checkJson(const CheckReport& r) {
    JsonWriter w;
    w.beginObject();
    writeEnvelope(w, "check", r.backend, r.device);
    w.key("passed").value(r.passed);
    w.key("failed").value(r.failed);
    w.key("status").value(probeStatusName(r.status));
    w.key("error").value(r.error.message);
    w.key("checks").beginArray();
    for (const auto& c : r.cases) {
        w.beginObject();
        w.key("name").value(c.name);
        w.key("passed").value(c.passed);
        w.key("detail").value(c.detail);
        w.endObject();
    }
    w.endArray();
    w.endObject();
    return w.finish();
}

std::string runJson(const ProbeResult& result) {
    ProbeReport rep;
    rep.command = "run";
    rep.backend = result.backend;
    rep.device = result.device;
    rep.date = utcNow();
    rep.host = hostName();
    rep.copyGBs = result.copyGBs;
    rep.readGBs = result.readGBs;
    // The document is this one run: its status is the run's at both levels (a failed run once
    // said "status": "ok" at the top and "failed" in its row).
    if (!result.ok()) {
        rep.status = result.status;
        rep.error = result.error;
    }
    rep.rows = {result};
    return reportJson(rep);
}

std::string benchJson(const ProbeReport& report) {
    ProbeReport rep = report;
    rep.command = "bench";
    rep.date = utcNow();
    rep.host = hostName();
    return reportJson(rep);
}

std::string probeReportToJson(const ProbeReport& report) {
    ProbeReport rep = report;
    rep.command = "bench";
    if (rep.date.empty())
        rep.date = utcNow();
    if (rep.host.empty())
        rep.host = hostName();
    return reportJson(rep);
}

} // namespace kvl::probe
