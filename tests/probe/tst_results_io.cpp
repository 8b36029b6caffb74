// Reading kvprobe's results JSON back: what probe_json writes reads back field for field (a
// synthetic bench report and a real CPU run); foreign, future, ill-typed and measurement-free
// files are rejected with one line naming the file and the field; the seed corpus loads.
#include "core/io/json.h"
#include "gpu_probe/probe.h"
#include "gpu_probe/probe_json.h"
#include "gpu_probe/results_io.h"

#include <QtTest>

#include <cmath>
#include <fstream>
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
    QCOMPARE(b.ok(), a.ok());
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
    io::Json j = envelope("run", "cpu", "test cpu", 10.0);
    io::Json::Array a;
    a.push_back(toJson(sampleRow("int8", "INT8", 2, 512, true, true)));
    j.set("results", io::Json(std::move(a)));
    return j.dump(2);
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
    const auto p = s.find(from);
    if (p == std::string::npos)
        return "NOT FOUND: " + from;
    return s.replace(p, from.size(), to);
}

} // namespace

class TestResultsIo : public QObject {
    Q_OBJECT
private slots:
    void benchRoundTrip();
    void realRunRoundTrip();
    void rejects_data();
    void rejects();
    void corpusLoads_data();
    void corpusLoads();
    void label();
};

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
    failed.fail(Error{ErrorCode::OutOfMemory, "cuda: out of memory allocating 99999999999 bytes"});
    b.rows.push_back(failed);
    b.qualityVsContext = {
        {"FP16", {{1024, 1e-6, 1e-5, 1, 1e-7}}},
        {"INT8", {{1024, 0.0166, 0.04, 0.98, 1e-7}, {16384, 0.0193, 0.05, 0.96, 0}}}};
    io::Json j = toJson(b);
    j.set("date", "2026-11-29T10:21:22Z");
    j.set("host", "gpu-box");
    auto parsed = parseProbeReport(j.dump(2), "bench-h200.json");
    if (auto* e = std::get_if<std::string>(&parsed))
        QFAIL(e->c_str());
    const ProbeReport& r = std::get<ProbeReport>(parsed);
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
    QVERIFY(std::holds_alternative<ProbeReport>(again));
    const ProbeReport& r2 = std::get<ProbeReport>(again);
    QCOMPARE(r2.date, r.date);
    QCOMPARE(r2.rows.size(), r.rows.size());
    for (std::size_t i = 0; i < 3; ++i)
        compareRows(r.rows[i], r2.rows[i]);
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
    io::Json j = envelope("run", run.backend, run.device, run.copyGBs);
    io::Json::Array a;
    a.push_back(toJson(run));
    j.set("results", io::Json(std::move(a)));
    auto parsed = parseProbeReport(j.dump(2), "run.json");
    if (auto* e = std::get_if<std::string>(&parsed))
        QFAIL(e->c_str());
    const ProbeReport& r = std::get<ProbeReport>(parsed);
    QCOMPARE(r.rows.size(), std::size_t(1));
    ProbeResult expect = run;
    compareRows(expect, r.rows[0]);
    QCOMPARE(r.rows[0].device, run.device);
    QCOMPARE(r.rows[0].backend, std::string("cpu"));
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
        "schema_version is 7, newer than this build reads (1)");
    row("schema not a number", replaced(good, "\"schema_version\": 1", "\"schema_version\": \"1\""),
        "schema_version must be a positive integer");
    row("info file",
        "{\"tool\": \"kvprobe\", \"schema_version\": 1, \"command\": \"info\", \"backends\": []}",
        "`kvprobe info` file has no measurements");
    row("check file",
        "{\"tool\": \"kvprobe\", \"schema_version\": 1, \"command\": \"check\", \"passed\": 3}",
        "`kvprobe check` file has no measurements");
    row("unknown command", replaced(good, "\"command\": \"run\"", "\"command\": \"tune\""),
        "command must be \"run\" or \"bench\"");
    row("negative pool bytes", replaced(good, "\"pool_bytes\": 1234567168", "\"pool_bytes\": -5"),
        "results[0].pool_bytes must not be negative, got -5");
    row("fractional page bytes", replaced(good, "\"page_bytes\": 33792", "\"page_bytes\": 3.5"),
        "results[0].page_bytes must be an integer");
    row("batch as a string", replaced(good, "\"batch\": 2", "\"batch\": \"2\""),
        "results[0].batch must be an integer");
    row("zero context", replaced(good, "\"context\": 512", "\"context\": 0"),
        "results[0].context must be at least 1");
    row("missing pool bytes", replaced(good, "\"pool_bytes\": 1234567168,", ""),
        "results[0].pool_bytes is missing");
    row("ok not a boolean", replaced(good, "\"ok\": true", "\"ok\": 1"),
        "results[0].ok must be true or false");
    row("top-8 above 1", replaced(good, "\"top8_agreement\": 0.984", "\"top8_agreement\": 1.5"),
        "results[0].top8_agreement must be a number in [0, 1]");
    row("results not an array", replaced(good, "\"results\": [", "\"results\": \"none\", \"x\": ["),
        "results must be an array, got string \"none\"");
    row("missing results",
        "{\"tool\": \"kvprobe\", \"schema_version\": 1, \"command\": \"bench\", \"backend\": "
        "\"cpu\"}",
        "results is missing");
    row("empty results",
        "{\"tool\": \"kvprobe\", \"schema_version\": 1, \"command\": \"bench\", \"backend\": "
        "\"cpu\", \"results\": []}",
        "has no measurements");
    row("row not an object",
        "{\"tool\": \"kvprobe\", \"schema_version\": 1, \"command\": \"bench\", \"backend\": "
        "\"cpu\", \"results\": [42]}",
        "results[0] must be an object, got 42");
    row("bad quality point",
        replaced(good, "\"quality_vs_context\": [", "\"quality_vs_context\": [{\"context\": -1},"),
        "results[0].quality_vs_context[0].context must be at least 1");
    row("note not a string", replaced(good, "\"notes\": [", "\"notes\": [7, "),
        "results[0].notes[0] must be a string");
}

void TestResultsIo::rejects() {
    QFETCH(QByteArray, text);
    QFETCH(QString, expected);
    QVERIFY2(!text.startsWith("NOT FOUND"), text.constData());
    auto r =
        parseProbeReport(std::string_view(text.constData(), std::size_t(text.size())), "gpu.json");
    QVERIFY2(std::holds_alternative<std::string>(r), "accepted a bad file");
    const QString msg = QString::fromStdString(std::get<std::string>(r));
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
    if (auto* e = std::get_if<std::string>(&r))
        QFAIL(e->c_str());
    const ProbeReport& rep = std::get<ProbeReport>(r);
    QCOMPARE(QString::fromStdString(rep.command), command);
    QCOMPARE(int(rep.rows.size()), rows);
    QCOMPARE(rep.okRows(), rows);
    QCOMPARE(rep.source, file.toStdString());
    // Spot-check against the raw JSON: the first row's pool bytes and error.
    auto doc = io::parseJson(readText(path));
    const io::Json& first = std::get<io::Json>(doc).find("results")->asArray()[0];
    QCOMPARE(rep.rows[0].poolBytes, *first.find("pool_bytes")->asInt64());
    QCOMPARE(rep.rows[0].relL2, first.find("rel_l2_error")->asDouble());
    // The info file is recognised and refused.
    auto info = loadProbeReport(kCorpus + "info.json");
    QVERIFY(std::holds_alternative<std::string>(info));
    QVERIFY(std::get<std::string>(info).find("has no measurements") != std::string::npos);
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
