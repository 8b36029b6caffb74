// Reading kvprobe's results files with nlohmann-json, through the field tables of
// results_schema.h (the writer, probe_json.cpp, iterates the same tables). Compiled only
// where nlohmann-json is available (gpu_probe/CMakeLists.txt).
#include "gpu_probe/io/results_io.h"

#include "core/io/files.h"
#include "core/io/json_fields.h"
#include "gpu_probe/io/probe_json.h"
#include "gpu_probe/io/results_schema.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace kvl::probe {

namespace {

using io::Field;
using namespace schema;
template <class S> using Spec = schema::Field<S>;

template <class S> void readFields(const Field& obj, S& s, const auto& specs);

// An array of at most kMaxRows entries.
std::size_t checkedSize(const Field& a) {
    const std::size_t n = a.size();
    if (n > kMaxRows)
        a.fail("has more than " + std::to_string(kMaxRows) + " entries");
    return n;
}

std::string checkedText(const Field& f) {
    std::string s = f.string();
    if (s.size() > kMaxText)
        f.fail("is longer than " + std::to_string(kMaxText) + " characters");
    return s;
}

std::vector<QualityPoint> readPoints(const Field& a) {
    std::vector<QualityPoint> out;
    const std::size_t n = checkedSize(a);
    for (std::size_t i = 0; i < n; ++i) {
        QualityPoint p;
        readFields(a.at(i).object(), p, kPointFields);
        out.push_back(p);
    }
    return out;
}

// Whether the row read so far succeeded ("ok" is the first field of a row).
template <class S> bool okSoFar(const S& s) {
    if constexpr (std::is_same_v<S, ProbeResult>)
        return s.ok();
    else
        return true;
}

// One present member. null reads as the default (a number: NaN, which kvprobe writes as null).
template <class S> void readMember(const Field& f, const Spec<S>& spec, S& s) {
    std::visit(
        [&](auto m) {
            using M = decltype(m);
            if constexpr (std::is_same_v<M, double S::*>) {
                s.*m = f.isNull() ? std::numeric_limits<double>::quiet_NaN()
                                  : f.number(spec.lo, spec.hi);
                return;
            }
            if (f.isNull())
                return;
            if constexpr (std::is_same_v<M, std::monostate>) {
                // "layers": kvprobe measures one layer.
                if (f.integer(static_cast<std::int64_t>(spec.lo),
                              static_cast<std::int64_t>(spec.hi)) > 1)
                    f.fail("must be 1 (kvprobe measures one layer), got " + f.describe());
            } else if constexpr (std::is_same_v<M, bool S::*>) {
                s.*m = f.boolean();
            } else if constexpr (std::is_same_v<M, std::string S::*>) {
                s.*m = checkedText(f);
            } else if constexpr (std::is_same_v<M, int S::*> ||
                                 std::is_same_v<M, std::int64_t S::*>) {
                const auto lo = spec.positiveWhenOk && okSoFar(s)
                                    ? std::int64_t{1}
                                    : static_cast<std::int64_t>(spec.lo);
                s.*m = static_cast<std::remove_reference_t<decltype(s.*m)>>(
                    f.integer(lo, static_cast<std::int64_t>(spec.hi)));
            } else if constexpr (std::is_same_v<M, std::vector<QualityPoint> S::*>) {
                s.*m = readPoints(f);
            } else if constexpr (std::is_same_v<M, std::vector<std::string> S::*>) {
                const std::size_t n = checkedSize(f);
                for (std::size_t i = 0; i < n; ++i)
                    (s.*m).push_back(checkedText(f.at(i)));
            } else if constexpr (std::is_same_v<M, OkOf>) {
                if constexpr (std::is_same_v<S, ProbeResult>)
                    s.*(m.member) = f.boolean() ? ProbeStatus::Ok : ProbeStatus::Failed;
            } else if constexpr (std::is_same_v<M, ProbeStatus S::*>) {
                const std::string name = checkedText(f);
                bool known = false;
                for (const ProbeStatus st :
                     {ProbeStatus::Ok, ProbeStatus::Failed, ProbeStatus::Cancelled})
                    if (probeStatusName(st) == name) {
                        s.*m = st;
                        known = true;
                    }
                if (!known)
                    f.fail("must be one of ok, failed, cancelled, got " + f.describe());
            } else if constexpr (std::is_same_v<M, Error S::*>) {
                (s.*m).message = checkedText(f);
            }
        },
        spec.member);
}

template <class S> void readFields(const Field& obj, S& s, const auto& specs) {
    if constexpr (std::is_same_v<S, ProbeResult>) {
        // A group was measured when its marker key is there (kvprobe writes the group whole).
        for (const auto& spec : specs)
            if (spec.need == Need::Marker)
                s.*groupFlag(spec.group) = obj[spec.key].exists();
    }
    for (const auto& spec : specs) {
        if constexpr (std::is_same_v<S, ProbeResult>) {
            if (bool ProbeResult::*flag = groupFlag(spec.group); flag && !(s.*flag))
                continue;
        }
        const Field f = obj[spec.key];
        if (!f.exists()) {
            const bool required = spec.need == Need::Always || spec.need == Need::Marker ||
                                  (spec.need == Need::WhenOk && okSoFar(s));
            if (required)
                f.fail("missing");
            continue;
        }
        readMember(f, spec, s);
    }
}

ProbeResult readResult(const Field& row, const std::string& backend, const std::string& device) {
    ProbeResult r;
    r.backend = backend;
    r.device = device;
    readFields(row.object(), r, kResultFields);
    // The file keeps the status and the message; the code follows from the status.
    r.error.code = r.status == ProbeStatus::Cancelled ? ErrorCode::Cancelled : ErrorCode::Internal;
    if (r.ok() && r.formatId.empty())
        row["format"].fail("must not be empty");
    // A format this build does not know ("int3") has no colour, marker or byte size of its own:
    // drawn, it would pass for another format, so it is refused by name.
    if (!r.formatId.empty()) {
        std::string known;
        bool found = false;
        for (const ProbeFormat& format : allProbeFormats()) {
            found = found || format.id == r.formatId;
            known += (known.empty() ? "" : ", ") + format.id;
        }
        if (!found)
            row["format"].fail("must be one of " + known + ", got " + row["format"].describe());
    }
    if (r.formatLabel.empty())
        r.formatLabel = r.formatId;
    if (r.allocatedPoolBytes == 0)
        r.allocatedPoolBytes = r.poolBytes;
    if (r.dataSource.empty())
        r.dataSource = "synthetic";
    return r;
}

ProbeReport readReport(const Field& doc, const std::string& source) {
    const Field tool = doc[kTool];
    if (!tool.isString() || tool.string() != kToolName)
        doc.fail("not a kvprobe results file (\"tool\" is " +
                 (tool.exists() ? tool.describe() : std::string("missing")) +
                 ", expected \"kvprobe\")");
    ProbeReport rep;
    rep.source = source;
    rep.tool = std::string(kToolName);
    const Field version = doc[kSchemaVersionKey];
    const std::int64_t v = version.integer(1, 1'000'000);
    if (v > kSchemaVersion)
        version.fail("is " + std::to_string(v) + ", newer than this build reads (" +
                     std::to_string(kSchemaVersion) + "): update KV Ledger to open it");
    rep.schemaVersion = static_cast<int>(v);
    const Field command = doc[kCommand];
    rep.command = command.string();
    if (rep.command == "info" || rep.command == "check")
        doc.fail("a `kvprobe " + rep.command +
                 "` file has no measurements: open the JSON of `kvprobe run --json` or "
                 "`kvprobe bench --json`");
    if (rep.command != "run" && rep.command != "bench")
        command.failOneOf({"run", "bench"});
    readFields(doc, rep, kReportFields);
    for (double* gbs : {&rep.copyGBs, &rep.readGBs})
        if (std::isnan(*gbs))
            *gbs = 0;

    const Field rows = doc[kResults];
    const std::size_t n = checkedSize(rows);
    for (std::size_t i = 0; i < n; ++i)
        rep.rows.push_back(readResult(rows.at(i), rep.backend, rep.device));
    if (const Field q = doc[kQualityVsContext]; q.present()) {
        const std::size_t m = checkedSize(q);
        for (std::size_t i = 0; i < m; ++i) {
            const Field entry = q.at(i).object();
            std::string label = checkedText(entry[kFormatLabel]);
            rep.qualityVsContext.emplace_back(std::move(label), readPoints(entry[kPoints]));
        }
    } else {
        // `run` keeps the sweep inside its one result.
        for (const auto& r : rep.rows)
            if (!r.qualityVsContext.empty())
                rep.qualityVsContext.emplace_back(r.formatLabel, r.qualityVsContext);
    }
    // Files from before "status" say only the message.
    if (!doc["status"].exists() && !rep.error.message.empty())
        rep.status = ProbeStatus::Failed;
    rep.error.code =
        rep.status == ProbeStatus::Cancelled ? ErrorCode::Cancelled : ErrorCode::Internal;
    if (rep.rows.empty() && rep.ok())
        doc.fail("has no measurements (\"results\" is empty)");
    return rep;
}

} // namespace

Result<ProbeReport> parseProbeReport(std::string_view text, const std::string& source) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        return Error{ErrorCode::BadFile, source + ": empty file"};
    auto doc = io::parseJson(text, source);
    if (!doc)
        return doc.error();
    const io::Field root(doc.value(), source);
    if (!root.isObject())
        return Error{ErrorCode::BadFile,
                     source +
                         ": not a kvprobe results file: expected an object at the top "
                         "level, got " +
                         root.describe()};
    return io::guarded<ProbeReport>(source, [&] { return readReport(root, source); });
}

Result<ProbeReport> loadProbeReport(const std::string& path) {
    auto text = io::readFile(path);
    if (!text)
        return text.error();
    const auto slash = path.find_last_of('/');
    return parseProbeReport(text.value(),
                            slash == std::string::npos ? path : path.substr(slash + 1));
}

} // namespace kvl::probe
