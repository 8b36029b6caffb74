// Reading kvprobe's results JSON back: what probe_json writes reads back field for field (every
// field of the schema table, a synthetic bench report and a real CPU run); foreign, future,
// ill-typed and measurement-free files are rejected with one line naming the file and the JSON
// path; the seed corpus loads; the emitter escapes, keeps integers exact and doubles bit-exact.
#include "core/io/json.h"
#include "gpu_probe/io/probe_json.h"
#include "gpu_probe/io/results_io.h"
#include "gpu_probe/io/results_schema.h"
#include "gpu_probe/run/probe.h"

#include <QtTest>

#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

using namespace kvl;
using namespace kvl::probe;

namespace {

ProbeResult sampleRow(const std::string& id, const std::string& label, int batch,
                      std::int64_t context, bool speed, bool quality) {
    ProbeResult r;
    r.status = ProbeStatus::Ok;
    r.backend = "cuda";
    r.device = "NVIDIA H200";
    r.formatId = id;
    r.formatLabel = label;
    r.dtype = "int8";
    r.modelId = "llama-3-8b";
    r.kvHeads = 8;
    r.qHeads = 32;
    r.headDim = 128;
    r.blockSize = 16;
    r.batch = batch;
    r.context = context;
    r.prefixTokens = 2048;
    r.pageBytes = 33792;
    r.predictedPoolBytes = 1'234'567'168;
    r.poolBytes = 1'234'567'168;
    r.allocatedPoolBytes = 1'235'222'528;
    r.devicePoolBytes = 1'237'319'680;
    r.deviceAccountKind = "cudaMemGetInfo delta";
    r.allocatorGranularity = 2 << 20;
    r.memoryErrorPct = 0.0531;
    r.pagesUsed = 36534;
    r.pagesSaved = 3968;
    if (speed) {
        r.speedMeasured = true;
        r.copyGBs = 4012.5;
        r.storeMs = 0.731;
        r.storeBytes = 987654321;
        r.storeGBs = 3301.25;
        r.storePctOfCopy = 82.27;
        r.attentionMs = 0.4096;
        r.attentionBytes = 1'200'000'000;
        r.tokensPerS = 78125;
        r.attentionGBs = 2929.6875;
        r.attentionPctOfCopy = 73.01;
    }
    if (quality) {
        r.qualityMeasured = true;
        r.dataSource = "synthetic";
        r.relL2 = 0.01658;
        r.maxAbs = 0.0421;
        r.top8 = 0.984;
        r.kernelVsRefRelL2 = 2.1e-7;
        r.kRelL2 = 0.0071;
        r.vRelL2 = 0.0068;
        r.kMaxAbs = 0.5;
        r.vMaxAbs = 0.25;
        r.qualityVsContext = {{1024, 0.0166, 0.04, 0.98, 1e-7}, {4096, 0.0182, 0.05, 0.97, 2e-7}};
    }
    r.notes = {"pool of 1 GiB", "second note"};
    return r;
}

void compareRows(const ProbeResult& a, const ProbeResult& b) {
    QCOMPARE(b.status, a.status);
    QCOMPARE(b.error.message, a.error.message);
    QCOMPARE(b.formatId, a.formatId);
    QCOMPARE(b.formatLabel, a.formatLabel);
    QCOMPARE(b.dtype, a.dtype);
    QCOMPARE(b.modelId, a.modelId);
    QCOMPARE(b.kvHeads, a.kvHeads);
    QCOMPARE(b.qHeads, a.qHeads);
    QCOMPARE(b.headDim, a.headDim);
    QCOMPARE(b.blockSize, a.blockSize);
    QCOMPARE(b.batch, a.batch);
    QCOMPARE(b.context, a.context);
    QCOMPARE(b.prefixTokens, a.prefixTokens);
    QCOMPARE(b.pageBytes, a.pageBytes);
    QCOMPARE(b.predictedPoolBytes, a.predictedPoolBytes);
    QCOMPARE(b.poolBytes, a.poolBytes);
    QCOMPARE(b.allocatedPoolBytes, a.allocatedPoolBytes);
    QCOMPARE(b.devicePoolBytes, a.devicePoolBytes);
    QCOMPARE(b.deviceAccountKind, a.deviceAccountKind);
    QCOMPARE(b.allocatorGranularity, a.allocatorGranularity);
    QCOMPARE(b.memoryErrorPct, a.memoryErrorPct);
    QCOMPARE(b.pagesUsed, a.pagesUsed);
    QCOMPARE(b.pagesSaved, a.pagesSaved);
    QCOMPARE(b.speedMeasured, a.speedMeasured);
    QCOMPARE(b.copyGBs, a.copyGBs);
    QCOMPARE(b.readGBs, a.readGBs);
    QCOMPARE(b.storeMs, a.storeMs);
    QCOMPARE(b.storeBytes, a.storeBytes);
    QCOMPARE(b.storeGBs, a.storeGBs);
    QCOMPARE(b.storePctOfCopy, a.storePctOfCopy);
    QCOMPARE(b.attentionMs, a.attentionMs);
    QCOMPARE(b.attentionBytes, a.attentionBytes);
    QCOMPARE(b.tokensPerS, a.tokensPerS);
    QCOMPARE(b.attentionGBs, a.attentionGBs);
    QCOMPARE(b.attentionPctOfCopy, a.attentionPctOfCopy);
    QCOMPARE(b.qualityMeasured, a.qualityMeasured);
    if (a.qualityMeasured)
        QCOMPARE(b.dataSource, a.dataSource);
    QCOMPARE(b.relL2, a.relL2);
    QCOMPARE(b.maxAbs, a.maxAbs);
    QCOMPARE(b.top8, a.top8);
    QCOMPARE(b.kernelVsRefRelL2, a.kernelVsRefRelL2);
    QCOMPARE(b.kRelL2, a.kRelL2);
    QCOMPARE(b.vRelL2, a.vRelL2);
    QCOMPARE(b.kMaxAbs, a.kMaxAbs);
    QCOMPARE(b.vMaxAbs, a.vMaxAbs);
    QCOMPARE(b.qualityVsContext.size(), a.qualityVsContext.size());
    for (std::size_t i = 0; i < a.qualityVsContext.size(); ++i) {
        QCOMPARE(b.qualityVsContext[i].context, a.qualityVsContext[i].context);
        QCOMPARE(b.qualityVsContext[i].relL2, a.qualityVsContext[i].relL2);
        QCOMPARE(b.qualityVsContext[i].maxAbs, a.qualityVsContext[i].maxAbs);
        QCOMPARE(b.qualityVsContext[i].top8, a.qualityVsContext[i].top8);
        QCOMPARE(b.qualityVsContext[i].kernelVsRefRelL2, a.qualityVsContext[i].kernelVsRefRelL2);
    }
    QCOMPARE(b.notes, a.notes);
}

std::string readText(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

const std::string kCorpus = std::string(KVL_SOURCE_DIR) + "/tests/fuzz/corpus/probe_results/";

// A valid one-row run document to break in one place per test row.
std::string goodRun() {
    return runJson(sampleRow("int8", "INT8", 2, 512, true, true));
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
    const auto p = s.find(from);
    if (p == std::string::npos)
        return "NOT FOUND: " + from;
    return s.replace(p, from.size(), to);
}

// A value for every member of `s` that no default equals, distinct per field (`k`), within
// the field's range: what the table-driven round trip writes and expects back.
template <class S> void fillDistinct(S& s, const auto& fields) {
    int k = 0;
    for (const auto& f : fields) {
        ++k;
        std::visit(
            [&](auto m) {
                using M = decltype(m);
                if constexpr (std::is_same_v<M, std::monostate>) {
                } else if constexpr (std::is_same_v<M, bool S::*>) {
                    s.*m = true;
                } else if constexpr (std::is_same_v<M, std::string S::*>) {
                    s.*m = "v-" + std::string(f.key) + " \"quoted\" \xC3\xA9";
                } else if constexpr (std::is_same_v<M, int S::*>) {
                    s.*m = 7 + k;
                } else if constexpr (std::is_same_v<M, std::int64_t S::*>) {
                    s.*m = (std::int64_t(1) << 33) + k; // beyond 32 bits, exact
                } else if constexpr (std::is_same_v<M, double S::*>) {
                    s.*m = 0.1 + k / 1024.0; // within [0, 1] for top8_agreement
                } else if constexpr (std::is_same_v<M, std::vector<QualityPoint> S::*>) {
                    QualityPoint p;
                    fillDistinct(p, schema::kPointFields);
                    p.context += k;
                    s.*m = {p, QualityPoint{1 + k, 0.5, 0.25, 0.75, 0.125}};
                } else if constexpr (std::is_same_v<M, std::vector<std::string> S::*>) {
                    s.*m = {"note " + std::string(f.key), "line\nbreak"};
                } else if constexpr (std::is_same_v<M, ProbeStatus S::*>) {
                    s.*m = ProbeStatus::Cancelled;
                } else if constexpr (std::is_same_v<M, Error S::*>) {
                    (s.*m).message = "v-" + std::string(f.key);
                    (s.*m).code = ErrorCode::Cancelled; // what a cancelled status reads back as
                }
            },
            f.member);
    }
}

// Whether `a` and `b` agree on the field (doubles bit for bit).
template <class S> bool sameField(const S& a, const S& b, const schema::Member<S>& member) {
    return std::visit(
        [&](auto m) {
            using M = decltype(m);
            if constexpr (std::is_same_v<M, std::monostate> || std::is_same_v<M, schema::OkOf>) {
                return true; // "ok" is the status, compared with "status"
            } else if constexpr (std::is_same_v<M, std::vector<QualityPoint> S::*>) {
                if ((a.*m).size() != (b.*m).size())
                    return false;
                for (std::size_t i = 0; i < (a.*m).size(); ++i)
                    for (const auto& f : schema::kPointFields)
                        if (!sameField((a.*m)[i], (b.*m)[i], f.member))
                            return false;
                return true;
            } else {
                return a.*m == b.*m;
            }
        },
        member);
}

// The keys of a written object.
std::set<std::string> keysOf(const nlohmann::json& o) {
    std::set<std::string> keys;
    for (const auto& [k, v] : o.items())
        keys.insert(k);
    return keys;
}

template <class S> std::set<std::string> tableKeys(const auto& fields, bool speed, bool quality) {
    std::set<std::string> keys;
    for (const auto& f : fields)
        if (f.group == schema::Group::Always || (f.group == schema::Group::Speed && speed) ||
            (f.group == schema::Group::Quality && quality))
            keys.insert(std::string(f.key));
    return keys;
}
} // namespace

class TestResultsIo : public QObject {
    Q_OBJECT
private slots:
    void everyTableFieldRoundTrips();
    void writerFormat();
    void writerStrings_data();
    void writerStrings();
    void writerDoubles_data();
    void writerDoubles();
    void benchRoundTrip();
    void readStreamRoundTrip_data();
    void readStreamRoundTrip();
    void realRunRoundTrip();
    void runStatusAtEveryLevel_data();
    void runStatusAtEveryLevel();
    void rejects_data();
    void rejects();
    void corpusLoads_data();
    void corpusLoads();
    void label();
};

// Table-driven: every field of the schema tables (rows, quality points, the envelope) gets a
// distinct value, is written by the emitter and read back by the reader, equal. Both iterate
// the same tables, so a field added to a table is covered here at once; and the written
// objects hold exactly the tables' keys, so nothing is written outside them.
void TestResultsIo::everyTableFieldRoundTrips() {
    ProbeResult full;
    fillDistinct(full, schema::kResultFields);
    full.formatId = "fp8_e5m2-per-head"; // the reader refuses a format it does not know
    full.status = ProbeStatus::Ok;
    full.error.code = ErrorCode::Internal; // a read row's code follows its status
    full.speedMeasured = full.qualityMeasured = true;
    full.backend = "be";
    full.device = "dev";
    ProbeResult bare; // a failed row: no shapes, no speed, no quality
    bare.status = ProbeStatus::Failed;
    bare.formatId = "int2-kivi";
    bare.formatLabel = "INT2";
    bare.error = makeError(ErrorCode::Internal, "cuda: out of memory");
    ProbeReport rep;
    fillDistinct(rep, schema::kReportFields);
    rep.backend = "be";
    rep.device = "dev";
    rep.rows = {full, bare};
    QualityPoint p;
    fillDistinct(p, schema::kPointFields);
    rep.qualityVsContext = {{"label one", {p}}, {"label two", {}}};

    const std::string text = probeReportToJson(rep);
    const auto back = parseProbeReport(text, "table.json");
    QVERIFY2(back, back ? "" : back.error().message.c_str());
    const ProbeReport& r = back.value();
    for (const auto& f : schema::kReportFields)
        QVERIFY2(sameField(rep, r, f.member), f.key.data());
    QCOMPARE(r.command, std::string("bench"));
    QCOMPARE(r.rows.size(), std::size_t(2));
    for (const auto& f : schema::kResultFields)
        QVERIFY2(sameField(full, r.rows[0], f.member), f.key.data());
    QVERIFY(r.rows[0].speedMeasured && r.rows[0].qualityMeasured);
    for (const auto& f : schema::kResultFields)
        QVERIFY2(sameField(bare, r.rows[1], f.member), f.key.data());
    QVERIFY(!r.rows[1].speedMeasured && !r.rows[1].qualityMeasured);
    QCOMPARE(r.qualityVsContext.size(), std::size_t(2));
    QCOMPARE(r.qualityVsContext[0].first, std::string("label one"));
    QCOMPARE(r.qualityVsContext[1].second.size(), std::size_t(0));
    for (const auto& f : schema::kPointFields)
        QVERIFY2(sameField(p, r.qualityVsContext[0].second.at(0), f.member), f.key.data());

    const nlohmann::json doc = io::parseJson(text, "table.json").value();
    std::set<std::string> top = tableKeys<ProbeReport>(schema::kReportFields, false, false);
    for (auto k : {schema::kTool, schema::kSchemaVersionKey, schema::kCommand, schema::kResults,
                   schema::kQualityVsContext})
        top.insert(std::string(k));
    QCOMPARE(keysOf(doc), top);
    QCOMPARE(keysOf(doc.at("results").at(0)),
             tableKeys<ProbeResult>(schema::kResultFields, true, true));
    QCOMPARE(keysOf(doc.at("results").at(1)),
             tableKeys<ProbeResult>(schema::kResultFields, false, false));
    QCOMPARE(keysOf(doc.at("results").at(0).at("quality_vs_context").at(0)),
             tableKeys<QualityPoint>(schema::kPointFields, false, false));
}

// The emitter's layout is nlohmann's dump(2): two-space indent, "key": value, empty
// containers on one line, a final newline.
void TestResultsIo::writerFormat() {
    JsonWriter w;
    w.beginObject();
    w.key("a").value(1);
    w.key("b").beginArray().value(true).null().beginObject().endObject().endArray();
    w.key("c").beginArray().endArray();
    w.key("d").beginObject().key("e").value("x").endObject();
    w.key("f").value(std::int64_t(9007199254740993));
    w.key("g").value(std::numeric_limits<std::int64_t>::min());
    w.endObject();
    const std::string text = w.finish();
    QCOMPARE(text, std::string("{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null,\n    {}\n  ],\n"
                               "  \"c\": [],\n  \"d\": {\n    \"e\": \"x\"\n  },\n"
                               "  \"f\": 9007199254740993,\n"
                               "  \"g\": -9223372036854775808\n}\n"));
    const nlohmann::json doc = io::parseJson(text, "w.json").value();
    QCOMPARE(io::dumpJson(doc, 2) + "\n", text); // byte for byte what nlohmann writes (keys sorted)
    QCOMPARE(doc.at("f").get<std::int64_t>(), std::int64_t(9007199254740993));
}

void TestResultsIo::writerStrings_data() {
    QTest::addColumn<QByteArray>("raw");
    QTest::addColumn<QByteArray>("written");
    QTest::addColumn<QByteArray>("readBack"); // empty: the raw bytes
    QTest::addRow("plain") << QByteArray("abc") << QByteArray(R"("abc")") << QByteArray();
    QTest::addRow("quote and backslash")
        << QByteArray(R"(a"b\c)") << QByteArray(R"("a\"b\\c")") << QByteArray();
    QTest::addRow("named escapes")
        << QByteArray("\b\f\n\r\t") << QByteArray(R"("\b\f\n\r\t")") << QByteArray();
    QTest::addRow("other controls")
        << QByteArray("\x01\x1f", 2) << QByteArray(R"("\u0001\u001f")") << QByteArray();
    QTest::addRow("NUL") << QByteArray("a\0b", 3) << QByteArray(R"("a\u0000b")") << QByteArray();
    QTest::addRow("slash and DEL kept")
        << QByteArray("/\x7f") << QByteArray("\"/\x7f\"") << QByteArray();
    QTest::addRow("utf-8 kept") << QByteArray("\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80")
                                << QByteArray("\"\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"")
                                << QByteArray();
    QTest::addRow("invalid byte replaced") << QByteArray("a\xFF"
                                                         "b")
                                           << QByteArray("\"a\xEF\xBF\xBD"
                                                         "b\"")
                                           << QByteArray("a\xEF\xBF\xBD"
                                                         "b");
    QTest::addRow("overlong replaced")
        << QByteArray("\xC0\xAF") << QByteArray("\"\xEF\xBF\xBD\xEF\xBF\xBD\"")
        << QByteArray("\xEF\xBF\xBD\xEF\xBF\xBD");
    QTest::addRow("surrogate replaced")
        << QByteArray("\xED\xA0\x80") << QByteArray("\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"")
        << QByteArray("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    QTest::addRow("truncated sequence")
        << QByteArray("\xE2\x82") << QByteArray("\"\xEF\xBF\xBD\xEF\xBF\xBD\"")
        << QByteArray("\xEF\xBF\xBD\xEF\xBF\xBD");
}

void TestResultsIo::writerStrings() {
    QFETCH(QByteArray, raw);
    QFETCH(QByteArray, written);
    QFETCH(QByteArray, readBack);
    JsonWriter w;
    w.beginArray().value(std::string_view(raw.constData(), std::size_t(raw.size()))).endArray();
    const std::string text = w.finish();
    QCOMPARE(QByteArray::fromStdString(text), "[\n  " + written + "\n]\n");
    // Whatever the bytes, the output is valid JSON that reads back.
    const auto doc = io::parseJson(text, "s.json");
    QVERIFY2(doc, doc ? "" : doc.error().message.c_str());
    QCOMPARE(QByteArray::fromStdString(doc->at(0).get<std::string>()),
             readBack.isEmpty() ? raw : readBack);
}

void TestResultsIo::writerDoubles_data() {
    QTest::addColumn<double>("value");
    QTest::addColumn<QByteArray>("written");
    QTest::addRow("0.1") << 0.1 << QByteArray("0.1");
    QTest::addRow("1/3") << 1.0 / 3.0 << QByteArray("0.3333333333333333");
    QTest::addRow("integral") << 78125.0 << QByteArray("78125");
    QTest::addRow("negative zero") << -0.0 << QByteArray("-0");
    QTest::addRow("1e-300") << 1e-300 << QByteArray("1e-300");
    QTest::addRow("denormal min") << 5e-324 << QByteArray("5e-324");
    QTest::addRow("max") << std::numeric_limits<double>::max()
                         << QByteArray("1.7976931348623157e+308");
    QTest::addRow("4.76 GiB") << 4.76 * 1073741824.0 << QByteArray("5111011082.24");
    QTest::addRow("NaN") << std::nan("") << QByteArray("null");
    QTest::addRow("+inf") << std::numeric_limits<double>::infinity() << QByteArray("null");
    QTest::addRow("-inf") << -std::numeric_limits<double>::infinity() << QByteArray("null");
}

void TestResultsIo::writerDoubles() {
    QFETCH(double, value);
    QFETCH(QByteArray, written);
    JsonWriter w;
    w.beginArray().value(value).endArray();
    const std::string text = w.finish();
    QCOMPARE(QByteArray::fromStdString(text), "[\n  " + written + "\n]\n");
    const nlohmann::json doc = io::parseJson(text, "d.json").value();
    if (std::isfinite(value))
        QVERIFY2(doc.at(0).get<double>() == value, text.c_str()); // bit-exact
    else
        QVERIFY(doc.at(0).is_null());
}

void TestResultsIo::benchRoundTrip() {
    ProbeReport b;
    b.backend = "cuda";
    b.device = "NVIDIA H200";
    b.copyGBs = 4012.5;
    b.rows.push_back(sampleRow("fp16", "FP16", 32, 16384, true, true));
    b.rows.push_back(sampleRow("int8", "INT8", 8, 32768, true, false));
    b.rows.push_back(sampleRow("int4-g128", "INT4 g128", 8, 8192, false, true));
    ProbeResult failed;
    failed.formatId = "int2-kivi";
    failed.formatLabel = "INT2 KIVI g32";
    failed.fail(
        makeError(ErrorCode::OutOfMemory, "cuda: out of memory allocating 99999999999 bytes"));
    b.rows.push_back(failed);
    b.qualityVsContext = {
        {"FP16", {{1024, 1e-6, 1e-5, 1, 1e-7}}},
        {"INT8", {{1024, 0.0166, 0.04, 0.98, 1e-7}, {16384, 0.0193, 0.05, 0.96, 0}}}};
    nlohmann::json j = io::parseJson(benchJson(b), "bench.json").value();
    j["date"] = "2026-11-29T10:21:22Z";
    j["host"] = "gpu-box";
    auto parsed = parseProbeReport(j.dump(2), "bench-h200.json");
    if (!parsed)
        QFAIL(parsed.error().message.c_str());
    const ProbeReport& r = parsed.value();
    QCOMPARE(r.source, std::string("bench-h200.json"));
    QCOMPARE(r.tool, std::string("kvprobe"));
    QCOMPARE(r.schemaVersion, kSchemaVersion);
    QCOMPARE(r.command, std::string("bench"));
    QCOMPARE(r.backend, std::string("cuda"));
    QCOMPARE(r.device, std::string("NVIDIA H200"));
    QCOMPARE(r.date, std::string("2026-11-29T10:21:22Z"));
    QCOMPARE(r.host, std::string("gpu-box"));
    QCOMPARE(r.copyGBs, 4012.5);
    QCOMPARE(r.rows.size(), b.rows.size());
    QCOMPARE(r.okRows(), 3);
    for (std::size_t i = 0; i < 3; ++i) {
        ProbeResult expect = b.rows[i];
        compareRows(expect, r.rows[i]);
    }
    QVERIFY(!r.rows[3].ok());
    QCOMPARE(r.rows[3].error.message, failed.error.message);
    QCOMPARE(r.rows[3].formatId, failed.formatId);
    QCOMPARE(r.qualityVsContext.size(), std::size_t(2));
    QCOMPARE(r.qualityVsContext[1].first, std::string("INT8"));
    QCOMPARE(r.qualityVsContext[1].second.size(), std::size_t(2));
    QCOMPARE(r.qualityVsContext[1].second[1].context, std::int64_t(16384));
    QCOMPARE(r.qualityVsContext[1].second[1].top8, 0.96);

    // And what we write ourselves reads back the same.
    auto again = parseProbeReport(probeReportToJson(r), "again.json");
    QVERIFY(again);
    const ProbeReport& r2 = again.value();
    QCOMPARE(r2.date, r.date);
    QCOMPARE(r2.rows.size(), r.rows.size());
    for (std::size_t i = 0; i < 3; ++i)
        compareRows(r.rows[i], r2.rows[i]);
}

// The read stream (read_gbs in a row, read_bandwidth_gbs in the envelope) reads back as written;
// 0 is "not measured" (CUDA, the emulator); a file from a kvprobe before it, without the keys,
// still loads, its read stream 0 and its copy intact.
void TestResultsIo::readStreamRoundTrip_data() {
    QTest::addColumn<double>("readGBs");
    QTest::addColumn<bool>("olderFile"); // the keys removed, as an older kvprobe wrote it
    QTest::addColumn<double>("expected");
    QTest::addRow("CPU run: measured") << 23.75 << false << 23.75;
    QTest::addRow("CUDA or emulator: not measured") << 0.0 << false << 0.0;
    QTest::addRow("older kvprobe: no keys, read as 0") << 23.75 << true << 0.0;
}

void TestResultsIo::readStreamRoundTrip() {
    QFETCH(double, readGBs);
    QFETCH(bool, olderFile);
    QFETCH(double, expected);
    ProbeResult row = sampleRow("int8", "INT8", 8, 4096, true, false);
    row.backend = "cpu";
    row.device = "AMD EPYC (2 threads)";
    row.copyGBs = 29.5;
    row.readGBs = readGBs;
    nlohmann::json j = io::parseJson(runJson(row), "run.json").value();
    QCOMPARE(j.at("read_bandwidth_gbs").get<double>(), readGBs);
    QCOMPARE(j.at("results").at(0).at("read_gbs").get<double>(), readGBs);
    if (olderFile) {
        j.erase("read_bandwidth_gbs");
        j.at("results").at(0).erase("read_gbs");
    }
    const auto back = parseProbeReport(j.dump(2), "run.json");
    QVERIFY2(back, back ? "" : back.error().message.c_str());
    QCOMPARE(back->readGBs, expected);
    QCOMPARE(back->rows.size(), std::size_t(1));
    QCOMPARE(back->rows[0].readGBs, expected);
    QVERIFY(back->rows[0].speedMeasured);
    QCOMPARE(back->rows[0].copyGBs, 29.5);
    QCOMPARE(back->copyGBs, 29.5);
}

void TestResultsIo::realRunRoundTrip() {
    ProbePlan p;
    p.model = defaultModel();
    p.format = parseProbeFormat("int8").value();
    p.batch = 2;
    p.context = 512;
    p.prefixTokens = 64;
    p.repeats = 1;
    p.threads = 1;
    p.qualityRequests = 1;
    const ProbeResult run = runProbe(p);
    QVERIFY2(run.ok(), run.error.message.c_str());
    auto parsed = parseProbeReport(runJson(run), "run.json");
    if (!parsed)
        QFAIL(parsed.error().message.c_str());
    const ProbeReport& r = parsed.value();
    QCOMPARE(r.rows.size(), std::size_t(1));
    ProbeResult expect = run;
    compareRows(expect, r.rows[0]);
    QCOMPARE(r.rows[0].device, run.device);
    QCOMPARE(r.rows[0].backend, std::string("cpu"));
}

void TestResultsIo::runStatusAtEveryLevel_data() {
    QTest::addColumn<int>("status");
    QTest::addRow("ok") << int(ProbeStatus::Ok);
    QTest::addRow("failed") << int(ProbeStatus::Failed);
    QTest::addRow("cancelled") << int(ProbeStatus::Cancelled);
}

void TestResultsIo::runStatusAtEveryLevel() {
    // A `run` document is one run: the top level says what its row says (a failed run said
    // "status": "ok" at the top level, issue 32 item 8), and the error is the row's.
    QFETCH(int, status);
    ProbeResult run = sampleRow("int8", "INT8", 2, 512, true, true);
    if (ProbeStatus(status) == ProbeStatus::Failed)
        run.fail(Error{ErrorCode::Internal, "pool of 1 B differs from core's prediction of 2 B"});
    else if (ProbeStatus(status) == ProbeStatus::Cancelled)
        run.fail(Error{ErrorCode::Cancelled, "cancelled"});
    const std::string text = runJson(run);
    auto parsed = parseProbeReport(text, "run.json");
    if (!parsed)
        QFAIL(parsed.error().message.c_str());
    QCOMPARE(int(parsed->status), status);
    QCOMPARE(parsed->error.message, run.error.message);
    QCOMPARE(parsed->rows.size(), std::size_t(1));
    QCOMPARE(int(parsed->rows[0].status), status);
    // The measurements of a run that failed its acceptance check are kept.
    QCOMPARE(parsed->rows[0].poolBytes, run.poolBytes);
}

void TestResultsIo::rejects_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("expected");
    const std::string good = goodRun();
    auto row = [](const char* name, const std::string& t, const char* expect) {
        QTest::addRow("%s", name) << QByteArray::fromStdString(t) << QString::fromUtf8(expect);
    };
    row("empty file", "", "empty file");
    row("not JSON", "{ \"tool\": \"kvprobe\", ", "not valid JSON");
    row("top-level array", "[1, 2, 3]", "not a kvprobe results file");
    row("foreign JSON (a scenario file)", "{\"kvledger_scenario\": 1, \"model\": \"llama-3-8b\"}",
        "\"tool\" is missing");
    row("foreign tool", replaced(good, "\"tool\": \"kvprobe\"", "\"tool\": \"nvbench\""),
        "expected \"kvprobe\"");
    row("future schema", replaced(good, "\"schema_version\": 1", "\"schema_version\": 7"),
        "schema_version: is 7, newer than this build reads (1)");
    row("schema not a number", replaced(good, "\"schema_version\": 1", "\"schema_version\": \"1\""),
        "schema_version: expected an integer, got string \"1\"");
    row("info file",
        "{\"tool\": \"kvprobe\", \"schema_version\": 1, \"command\": \"info\", \"backends\": []}",
        "`kvprobe info` file has no measurements");
    row("check file",
        "{\"tool\": \"kvprobe\", \"schema_version\": 1, \"command\": \"check\", \"passed\": 3}",
        "`kvprobe check` file has no measurements");
    row("unknown command", replaced(good, "\"command\": \"run\"", "\"command\": \"tune\""),
        "command: must be one of run, bench, got string \"tune\"");
    row("negative pool bytes", replaced(good, "\"pool_bytes\": 1234567168", "\"pool_bytes\": -5"),
        "results[0].pool_bytes: must be between 0 and 72057594037927936, got -5");
    row("fractional page bytes", replaced(good, "\"page_bytes\": 33792", "\"page_bytes\": 3.5"),
        "results[0].page_bytes: expected an integer, got 3.5");
    row("batch as a string", replaced(good, "\"batch\": 2", "\"batch\": \"2\""),
        "results[0].batch: expected an integer, got string \"2\"");
    row("zero context", replaced(good, "\"context\": 512", "\"context\": 0"),
        "results[0].context: must be between 1 and 1099511627776, got 0");
    row("missing pool bytes", replaced(good, "\"pool_bytes\": 1234567168,", ""),
        "results[0].pool_bytes: missing");
    row("ok not a boolean", replaced(good, "\"ok\": true", "\"ok\": 1"),
        "results[0].ok: expected true or false, got 1");
    row("top-8 above 1", replaced(good, "\"top8_agreement\": 0.984", "\"top8_agreement\": 1.5"),
        "results[0].top8_agreement: must be between 0 and 1, got 1.5");
    row("results not an array", replaced(good, "\"results\": [", "\"results\": \"none\", \"x\": ["),
        "gpu.json: results: expected an array, got string \"none\"");
    row("missing results",
        "{\"tool\": \"kvprobe\", \"schema_version\": 1, \"command\": \"bench\", \"backend\": "
        "\"cpu\"}",
        "gpu.json: results: missing");
    row("empty results",
        "{\"tool\": \"kvprobe\", \"schema_version\": 1, \"command\": \"bench\", \"backend\": "
        "\"cpu\", \"results\": []}",
        "has no measurements");
    row("row not an object",
        "{\"tool\": \"kvprobe\", \"schema_version\": 1, \"command\": \"bench\", \"backend\": "
        "\"cpu\", \"results\": [42]}",
        "gpu.json: results[0]: expected an object, got 42");
    row("bad quality point",
        replaced(good, "\"quality_vs_context\": [", "\"quality_vs_context\": [{\"context\": -1},"),
        "results[0].quality_vs_context[0].context: must be between 1 and 1099511627776, got -1");
    // It was plotted as FP16 (issue 32 item 9).
    row("unknown format", replaced(good, "\"format\": \"int8\"", "\"format\": \"int3\""),
        "gpu.json: results[0].format: must be one of fp16, bf16, fp32, ");
    row("unknown format, named as kvprobe never writes it",
        replaced(good, "\"format\": \"int8\"", "\"format\": \"INT8\""), ", got string \"INT8\"");
    row("note not a string", replaced(good, "\"notes\": [", "\"notes\": [7, "),
        "results[0].notes[0]: expected a string, got 7");
}

void TestResultsIo::rejects() {
    QFETCH(QByteArray, text);
    QFETCH(QString, expected);
    QVERIFY2(!text.startsWith("NOT FOUND"), text.constData());
    auto r =
        parseProbeReport(std::string_view(text.constData(), std::size_t(text.size())), "gpu.json");
    QVERIFY2(!r, "accepted a bad file");
    QCOMPARE(r.error().code, ErrorCode::BadFile);
    const QString msg = QString::fromStdString(r.error().message);
    QVERIFY2(msg.startsWith(QStringLiteral("gpu.json: ")), qPrintable(msg));
    QVERIFY2(!msg.contains(QLatin1Char('\n')), qPrintable(msg));
    QVERIFY2(msg.contains(expected), qPrintable(msg));
}

void TestResultsIo::corpusLoads_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("command");
    QTest::addColumn<int>("rows");
    QTest::addRow("kvprobe run --json") << "cpu-run-int8.json"
                                        << "run" << 1;
    QTest::addRow("kvprobe bench --quick --json") << "cpu-bench-quick.json"
                                                  << "bench" << 6;
}

void TestResultsIo::corpusLoads() {
    QFETCH(QString, file);
    QFETCH(QString, command);
    QFETCH(int, rows);
    const std::string path = kCorpus + file.toStdString();
    auto r = loadProbeReport(path);
    if (!r)
        QFAIL(r.error().message.c_str());
    const ProbeReport& rep = r.value();
    QCOMPARE(QString::fromStdString(rep.command), command);
    QCOMPARE(int(rep.rows.size()), rows);
    QCOMPARE(rep.okRows(), rows);
    QCOMPARE(rep.source, file.toStdString());
    // Spot-check against the raw JSON: the first row's pool bytes and error.
    const nlohmann::json doc = io::parseJson(readText(path), path).value();
    const nlohmann::json& first = doc.at("results").at(0);
    QCOMPARE(rep.rows[0].poolBytes, first.at("pool_bytes").get<std::int64_t>());
    QCOMPARE(rep.rows[0].relL2, first.at("rel_l2_error").get<double>());
    // The corpus predates the read stream: not measured, the copy as written.
    QVERIFY(!first.contains("read_gbs") && !doc.contains("read_bandwidth_gbs"));
    QCOMPARE(rep.readGBs, 0.0);
    for (const ProbeResult& row : rep.rows)
        QCOMPARE(row.readGBs, 0.0);
    QCOMPARE(rep.rows[0].copyGBs, first.at("copy_gbs").get<double>());
    // The info file is recognised and refused.
    auto info = loadProbeReport(kCorpus + "info.json");
    QVERIFY(!info);
    QVERIFY(info.error().message.find("has no measurements") != std::string::npos);
    // Files are read through io::readFile: a missing one names its path.
    auto missing = loadProbeReport(kCorpus + "nonexistent.json");
    QVERIFY(!missing);
    QCOMPARE(missing.error().code, ErrorCode::NotFound);
    QCOMPARE(missing.error().message, kCorpus + "nonexistent.json: no such file");
}

void TestResultsIo::label() {
    ProbeReport r;
    r.backend = "cuda";
    r.device = "NVIDIA H200";
    r.date = "2026-11-29T10:21:22Z";
    QCOMPARE(QString::fromStdString(r.label()), QStringLiteral("NVIDIA H200 · 2026-11-29"));
    r.device.clear();
    r.date.clear();
    QCOMPARE(QString::fromStdString(r.label()), QStringLiteral("cuda"));
}

QTEST_GUILESS_MAIN(TestResultsIo)
#include "tst_results_io.moc"
