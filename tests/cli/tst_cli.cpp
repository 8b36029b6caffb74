// The `kvledger ledger / models / gpus` contract: JSON field names and values, exit codes,
// and one-line errors naming the option or field; --help generated from the option tables;
// the same --units everywhere. JSON is read back with QJsonDocument, an independent parser.

#include "tests/cli/cli_run.h"
#include "widgets/charts/chart_registry.h"

#include "core/io/catalog.h"
#include "core/io/scenario_args.h"
#include "core/io/scenario_file.h"
#include "core/kv_format.h"
#include "core/ledger.h"
#include "core/speed.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <QRegularExpression>
#include <QSet>

#include <algorithm>
#include <sstream>

#ifdef Q_OS_UNIX
#include <sys/stat.h>
#endif

namespace {

using kvl::test::Run;
using kvl::test::run;

// The rows below were worked by hand in the model's own dtype without a shared prefix; the
// default scenario has a 2K shared prefix (defaultIsWhatVllmRuns checks it), so they say so.
QStringList plain(QStringList args) {
    if (!args.contains(QStringLiteral("--kv-dtype")))
        args << QStringLiteral("--kv-dtype") << QStringLiteral("auto");
    if (!args.contains(QStringLiteral("--prefix-tokens")))
        args << QStringLiteral("--prefix-tokens") << QStringLiteral("0");
    return args;
}

QJsonObject ledgerJson(QStringList args) {
    args.prepend(QStringLiteral("ledger"));
    args.append(QStringLiteral("--json"));
    const Run r = run(args);
    if (r.rc != 0)
        qWarning() << "ledger failed:" << r.err;
    QJsonParseError pe;
    const auto doc = QJsonDocument::fromJson(r.out.toUtf8(), &pe);
    if (pe.error != QJsonParseError::NoError)
        qWarning() << "bad JSON:" << pe.errorString() << r.out.left(200);
    return doc.object();
}

QString writeFile(QTemporaryDir& dir, const QString& name, const QByteArray& text) {
    const QString path = dir.filePath(name);
    QFile f(path);
    f.open(QIODevice::WriteOnly);
    f.write(text);
    return path;
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void ggufCommand();
    void engineOption();
    void doneWhen();
    void fieldsPresent();
    void values_data();
    void values();
    void ladderInJson();
    void gpusNeededSeed_data();
    void gpusNeededSeed();
    void layersOverride();
    void badInput_data();
    void badInput();
    void badConfigFiles_data();
    void badConfigFiles();
    void catalogs();
    void table();
    void helpIsGenerated_data();
    void helpIsGenerated();
    void helpDefaultsAreTheRealOnes();
    void unitsSameEverywhere_data();
    void unitsSameEverywhere();
    void unexpectedArguments_data();
    void unexpectedArguments();
    void granularityFromCore_data();
    void granularityFromCore();
    void controlCharactersEscaped();
    void scenarioFromFifo();
    void windowArguments_data();
    void windowArguments();
    void readmeAgreesWithHelp();
    void v1Fields();
    void refusalIsAResult();
    void blockSizeVllmRefuses();
    void speedFields_data();
    void speedFields();
    void defaultIsWhatVllmRuns();
    void planLlama70b();
    void planJsonShape();
    void planInfeasible_data();
    void planInfeasible();
    void planDuplicateGpus();
    void saturatedFigures();
    void scenarioFileNamesTheField_data();
    void scenarioFileNamesTheField();
    void planBadInput_data();
    void planBadInput();
    void simulateJson();
    void simulateTable();
    void planWithRate();
    void simulateTrace_data();
    void simulateTrace();
    void simulateBadInput_data();
    void simulateBadInput();
    void didYouMean_data();
    void didYouMean();
    void tokenSuffixes_data();
    void tokenSuffixes();
    void thousandsInTextNotJson();
    void catalogTablesAligned_data();
    void catalogTablesAligned();
    void invalidLayoutIsAnError_data();
    void invalidLayoutIsAnError();
    void contextBoundedByModel_data();
    void contextBoundedByModel();
    void scopeOnEveryFigure_data();
    void scopeOnEveryFigure();
    void planNamesItsGpuAndFlagsSlowPlans_data();
    void planNamesItsGpuAndFlagsSlowPlans();
    void hybridLadderExplained_data();
    void hybridLadderExplained();
    void defaultHasNoSharedPrefix();
};

void TestCli::doneWhen() {
    // Issue 2: llama-3-8b fp16 at 32768 -> 131072 B/token and 4294967296 B/request.
    const auto o = ledgerJson({"--model", "llama-3-8b", "--kv-dtype", "fp16", "--context", "32768",
                               // beyond the model's 8K: asked for explicitly (issue 29, item 5)
                               "--max-model-len", "32768"});
    QCOMPARE(o.value("kv_bytes_per_token").toInteger(), qint64(131072));
    QCOMPARE(o.value("kv_bytes_per_request").toInteger(), qint64(4294967296));
}

void TestCli::fieldsPresent() {
    const auto o = ledgerJson({"--model", "llama-3-8b"});
    for (const char* k :
         {"kv_bytes_per_token", "kv_bytes_per_token_per_gpu", "kv_bytes_per_request",
          "weights_bytes", "available_kv_bytes", "num_gpu_blocks", "gpu_kv_cache_tokens",
          "max_concurrency", "max_requests_at_context", "ladder"})
        QVERIFY2(o.contains(QLatin1String(k)), k);
}

void TestCli::values_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("field");
    QTest::addColumn<qint64>("expected");
    // vLLM's startup log for Llama-3.1-8B on an H100 with max_model_len 16000: a 51.38 GiB KV
    // pool -> 26,306 blocks, 420,896 tokens.
    const QStringList worked{"--model", "llama-3.1-8b",    "--max-model-len",
                             "16000",   "--kv-memory-gib", "51.38"};
    QTest::addRow("worked example blocks") << worked << "num_gpu_blocks" << qint64(26306);
    QTest::addRow("worked example tokens") << worked << "gpu_kv_cache_tokens" << qint64(420896);
    QTest::addRow("kv memory bytes override")
        << QStringList{"--model", "llama-3-8b", "--kv-memory-bytes", "2097152000"}
        << "num_gpu_blocks" << qint64(1000);
    QTest::addRow("int8 per-token scales")
        << QStringList{"--model", "llama-3-8b", "--kv-dtype", "int8"} << "kv_bytes_per_token"
        << qint64(67584);
    QTest::addRow("fp8 alias") << QStringList{"--model", "llama-3-8b", "--kv-dtype", "fp8"}
                               << "kv_bytes_per_token" << qint64(65536);
    QTest::addRow("mha what-if") << QStringList{"--model", "llama-3-8b", "--attention", "mha"}
                                 << "kv_bytes_per_token" << qint64(524288);
    QTest::addRow("gqa:2 what-if") << QStringList{"--model", "llama-3-8b", "--attention", "gqa:2"}
                                   << "kv_bytes_per_token" << qint64(32768);
    QTest::addRow("mqa what-if") << QStringList{"--model", "llama-3-8b", "--attention", "mqa"}
                                 << "kv_bytes_per_token" << qint64(16384);
    QTest::addRow("tp 16 replicates 8 heads")
        << QStringList{"--model", "llama-3-70b", "--tp", "16"} << "kv_bytes_per_token_per_gpu"
        << qint64(2 * 80 * 1 * 128 * 2);
    QTest::addRow("tp 4 splits heads")
        << QStringList{"--model", "llama-3-70b", "--tp", "4"} << "kv_bytes_per_token_per_gpu"
        << qint64(2 * 80 * 2 * 128 * 2);
    QTest::addRow("block 32 rounding")
        << QStringList{"--model", "llama-3-8b", "--block-size", "32", "--context", "1000"}
        << "kv_bytes_per_request" << qint64(32 * 32 * 131072);
    QTest::addRow("no paging reserves max len")
        << QStringList{"--model", "llama-3-8b", "--no-paging", "--context", "1000"}
        << "kv_bytes_per_request" << qint64(8192) * 131072;
    QTest::addRow("prefix saves full blocks")
        << QStringList{"--model", "llama-3-8b", "--prefix-tokens", "2050", "--context", "8192"}
        << "shared_bytes_per_request_per_gpu" << qint64(128) * 16 * 131072;
    QTest::addRow("weights int4") << QStringList{"--model", "hypothetical-70b-mha",
                                                 "--weight-dtype", "int4"}
                                  << "weights_bytes" << qint64(37'187'500'000);
}

void TestCli::values() {
    QFETCH(QStringList, args);
    QFETCH(QString, field);
    QFETCH(qint64, expected);
    const auto o = ledgerJson(plain(args));
    QVERIFY2(o.contains(field), qPrintable(field));
    QCOMPARE(o.value(field).toInteger(), expected);
}

void TestCli::ladderInJson() {
    const auto o =
        ledgerJson({"--model", "llama-3-8b", "--kv-dtype", "int8", "--prefix-tokens", "2048"});
    const auto ladder = o.value("ladder").toArray();
    QCOMPARE(ladder.size(), 5);
    QCOMPARE(ladder.at(0).toObject().value("kv_bytes_per_token").toInteger(), qint64(524288));
    QCOMPARE(ladder.at(1).toObject().value("kv_bytes_per_token").toInteger(), qint64(131072));
    QCOMPARE(ladder.at(2).toObject().value("kv_bytes_per_token").toInteger(), qint64(67584));
    QCOMPARE(ladder.at(4).toObject().value("max_requests_at_context").toInteger(),
             o.value("max_requests_at_context").toInteger());
    for (int i = 1; i < ladder.size(); ++i)
        QVERIFY(ladder.at(i).toObject().value("max_requests_at_context").toInteger() >=
                ladder.at(i - 1).toObject().value("max_requests_at_context").toInteger());
}

void TestCli::gpusNeededSeed_data() {
    QTest::addColumn<QStringList>("extra");
    QTest::addColumn<int>("gpus");
    // A 70B MHA model, 8K x 10 requests: 5x H100; INT8 weights 4x; INT8 weights + INT8 KV 3x.
    QTest::addRow("fp16") << QStringList{"--weight-dtype", "fp16", "--kv-dtype", "fp16"} << 5;
    QTest::addRow("int8 weights") << QStringList{"--weight-dtype", "int8", "--kv-dtype", "fp16"}
                                  << 4;
    QTest::addRow("int8 both") << QStringList{"--weight-dtype", "int8", "--kv-dtype", "int8"} << 3;
}

void TestCli::gpusNeededSeed() {
    QFETCH(QStringList, extra);
    QFETCH(int, gpus);
    QStringList args{"--model", "hypothetical-70b-mha", "--gpu", "h100-80gb", "--context",
                     "8192",    "--target-requests",    "10"};
    args += extra;
    const auto o = ledgerJson(args);
    QCOMPARE(o.value("gpus_needed").toInt(), gpus);
}

void TestCli::layersOverride() {
    const auto base = ledgerJson({"--model", "llama-3-8b"});
    const auto plus = ledgerJson({"--model", "llama-3-8b", "--layers", "33"});
    QCOMPARE(plus.value("kv_bytes_per_token").toInteger(),
             base.value("kv_bytes_per_token").toInteger() / 32 * 33);
}

void TestCli::badInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    QTest::addRow("unknown model") << QStringList{"--model", "nope"} << "--model";
    QTest::addRow("unknown gpu") << QStringList{"--gpu", "v100"} << "--gpu";
    QTest::addRow("bad dtype") << QStringList{"--kv-dtype", "int3"} << "--kv-dtype";
    QTest::addRow("negative context") << QStringList{"--context", "-5"} << "--context";
    QTest::addRow("text context") << QStringList{"--context", "lots"} << "--context";
    QTest::addRow("absurd context") << QStringList{"--context", "99999999999999"} << "--context";
    QTest::addRow("zero tp") << QStringList{"--tp", "0"} << "--tp";
    QTest::addRow("util above 1") << QStringList{"--gpu-mem-util", "1.5"} << "--gpu-mem-util";
    QTest::addRow("util nan") << QStringList{"--gpu-mem-util", "nan"} << "--gpu-mem-util";
    QTest::addRow("missing value") << QStringList{"--context"} << "--context";
    QTest::addRow("bad attention") << QStringList{"--attention", "gqa:x"} << "--attention";
    QTest::addRow("gqa indivisible") << QStringList{"--attention", "gqa:5"} << "attention";
    QTest::addRow("both pools") << QStringList{"--kv-memory-gib", "1", "--kv-memory-bytes", "5"}
                                << "--kv-memory";
    QTest::addRow("unknown option") << QStringList{"--frobnicate"} << "--frobnicate";
    QTest::addRow("missing config")
        << QStringList{"--config", "/nonexistent/config.json"} << "config.json";
    QTest::addRow("int4 group not dividing")
        << QStringList{"--kv-dtype", "int4", "--kv-group-size", "48"} << "group size";
    // Issue 32, item 14: a KV pool larger than the GPU (80 GB H100 by default), and a KIVI
    // group larger than head_dim (128), name the option that set them.
    QTest::addRow("kv memory above the gpu")
        << QStringList{"--kv-memory-gib", "1048576"}
        << "--kv-memory-gib: must be at most the GPU's memory (79.18 GiB on H100 SXM 80GB), got "
           "1 PiB";
    QTest::addRow("kv memory bytes above the gpu")
        << QStringList{"--kv-memory-bytes", "85017821185"}
        << "--kv-memory-bytes: must be at most the GPU's memory";
    QTest::addRow("kivi group above head_dim")
        << QStringList{"--kv-dtype", "int4", "--kv-granularity", "kivi", "--kv-group-size", "4096"}
        << "--kv-group-size: must be at most head_dim 128 for KIVI, got 4096";
}

void TestCli::badInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    args.prepend(QStringLiteral("ledger"));
    const Run r = run(args);
    QCOMPARE(r.rc, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1); // one line
}

void TestCli::badConfigFiles_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("mentions");
    QTest::addRow("empty") << QByteArray() << "config.json";
    QTest::addRow("truncated") << QByteArray("{\"num_hidden_layers\": 32, \"num_attention")
                               << "config.json";
    QTest::addRow("not json") << QByteArray("hello") << "config.json";
    QTest::addRow("array") << QByteArray("[1,2,3]") << "config.json";
    QTest::addRow("wrong type")
        << QByteArray(R"({"num_hidden_layers": "32", "num_attention_heads": 32, "hidden_size": 4096,
                         "max_position_embeddings": 8192})")
        << "num_hidden_layers";
    QTest::addRow("zero heads")
        << QByteArray(R"({"num_hidden_layers": 32, "num_attention_heads": 0, "hidden_size": 4096,
                         "max_position_embeddings": 8192})")
        << "num_attention_heads";
    QTest::addRow("indivisible kv")
        << QByteArray(
               R"({"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 5,
                         "hidden_size": 4096, "max_position_embeddings": 8192})")
        << "num_key_value_heads";
}

void TestCli::badConfigFiles() {
    QFETCH(QByteArray, text);
    QFETCH(QString, mentions);
    QTemporaryDir dir;
    const QString path = writeFile(dir, QStringLiteral("config.json"), text);
    const Run r = run({"ledger", "--config", path});
    QCOMPARE(r.rc, 2);
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
}

void TestCli::catalogs() {
    Run r = run({"models", "--json"});
    QCOMPARE(r.rc, 0);
    const auto models = QJsonDocument::fromJson(r.out.toUtf8()).array();
    QVERIFY(models.size() >= 20);
    bool found = false;
    for (const auto& m : models)
        if (m.toObject().value("id").toString() == QLatin1String("llama-3-8b")) {
            found = true;
            QCOMPARE(m.toObject().value("kv_bytes_per_token").toInteger(), qint64(131072));
        }
    QVERIFY(found);
    r = run({"gpus", "--json"});
    QCOMPARE(r.rc, 0);
    const QJsonArray gpus = QJsonDocument::fromJson(r.out.toUtf8()).array();
    QCOMPARE(gpus.size(), qsizetype(kvl::io::builtinGpus().size()));
    // Each GPU is the object a scenario file keeps for it, every field included (the list
    // lacked the compute capability, the TFLOPS and the source).
    for (const kvl::core::GpuSpec& g : kvl::io::builtinGpus()) {
        kvl::core::Scenario s = kvl::io::defaultScenario();
        s.hardware.gpu = g;
        const QJsonObject saved =
            QJsonDocument::fromJson(QByteArray::fromStdString(kvl::io::scenarioToJson(s)))
                .object()
                .value("gpu")
                .toObject();
        const auto listed = std::find_if(gpus.begin(), gpus.end(), [&](const QJsonValue& v) {
            return v.toObject().value("id").toString() == QString::fromStdString(g.id);
        });
        QVERIFY2(listed != gpus.end(), g.id.c_str());
        QCOMPARE(listed->toObject(), saved);
        QVERIFY(saved.contains("compute_capability") && saved.contains("source"));
    }
    r = run({"models"});
    QVERIFY(r.out.contains(QLatin1String("llama-3.1-405b")));
}

void TestCli::table() {
    const Run r = run(plain({"ledger", "--model", "llama-3.1-8b", "--max-model-len", "16000",
                             "--kv-memory-gib", "51.38"}));
    QCOMPARE(r.rc, 0);
    QVERIFY2(r.out.contains(QLatin1String("GPU KV cache size: 420,896 tokens")), qPrintable(r.out));
    QVERIFY(
        r.out.contains(QLatin1String("Maximum concurrency for 16,000 tokens per request: 26.31x")));
}

namespace {
// The help with every run of white space made one space: wrapping may break a line anywhere.
QString flat(const QString& text) {
    return text.simplified();
}
} // namespace

void TestCli::helpIsGenerated_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<bool>("scenario");
    QTest::addColumn<QStringList>("own");
    QTest::addRow("global") << QStringList{"--help"} << true << QStringList{};
    QTest::addRow("help ledger") << QStringList{"help", "ledger"} << true
                                 << QStringList{"--json", "--units U"};
    QTest::addRow("ledger --help")
        << QStringList{"ledger", "--help"} << true << QStringList{"--json", "--units U"};
    QTest::addRow("ledger -h") << QStringList{"ledger", "-h"} << true
                               << QStringList{"--json", "--units U"};
    QTest::addRow("help export") << QStringList{"help", "export"} << true
                                 << QStringList{"--chart NAME",      "--out FILE",
                                                "--report FILE.pdf", "--scale F",
                                                "--size WxH",        "--units U",
                                                "--reference FILE",  "--probe-results FILE"};
    QTest::addRow("help --screenshot")
        << QStringList{"help", "--screenshot"} << true
        << QStringList{"--screenshot FILE.png", "--size WxH", "--tab T", "--theme T"};
    QTest::addRow("models --help")
        << QStringList{"models", "--help"} << false << QStringList{"--json"};
    QTest::addRow("gpus --help") << QStringList{"gpus", "--help"} << false << QStringList{"--json"};
}

void TestCli::helpIsGenerated() {
    // Every row of the scenario-option table is in the help with its description and its
    // default, read from io::defaultScenario(): the help cannot drift from the parser.
    QFETCH(QStringList, args);
    QFETCH(bool, scenario);
    QFETCH(QStringList, own);
    const Run r = run(args);
    QCOMPARE(r.rc, 0);
    QVERIFY(r.err.isEmpty());
    const QString help = flat(r.out);
    const kvl::core::Scenario base = kvl::io::defaultScenario();
    for (const auto& o : kvl::io::scenarioOptions()) {
        QString row =
            QStringLiteral("--") + QString::fromUtf8(o.name.data(), qsizetype(o.name.size()));
        if (!o.valueName.empty())
            row += QLatin1Char(' ') +
                   QString::fromUtf8(o.valueName.data(), qsizetype(o.valueName.size()));
        row += QLatin1Char(' ') +
               flat(QString::fromStdString(kvl::io::scenarioOptionDescription(o, base)));
        QCOMPARE(help.contains(row), scenario);
    }
    for (const QString& o : own)
        QVERIFY2(help.contains(o), qPrintable(o));
    // The export help and the overview name every chart of the registry with its formats.
    if (args.contains(QStringLiteral("export")) || args == QStringList{"--help"})
        for (const auto& c : kvl::widgets::chartSpecs()) {
            QVERIFY2(help.contains(QLatin1String(c.name)), c.name);
            QVERIFY(help.contains(kvl::widgets::formatSuffixes(c.formats)));
        }
    // The overview's chart list is a table: name, title and formats on one line, each column
    // apart from the next ("speed-concurrency" once ran into its title).
    if (args == QStringList{"--help"})
        for (const auto& c : kvl::widgets::chartSpecs()) {
            const QRegularExpression line(
                QStringLiteral("\\n  %1  +%2  +%3")
                    .arg(QRegularExpression::escape(QLatin1String(c.name)),
                         QRegularExpression::escape(kvl::widgets::chartTitle(c)),
                         QRegularExpression::escape(kvl::widgets::formatSuffixes(c.formats))));
            QVERIFY2(line.match(r.out).hasMatch(), c.name);
        }
}

void TestCli::helpDefaultsAreTheRealOnes() {
    const QString help = flat(run({"--help"}).out);
    const auto base = kvl::io::defaultScenario();
    QVERIFY(help.contains(
        QStringLiteral("--context N tokens per request (8192, 32K or 1M); at most the max model "
                       "len (default %1)")
            .arg(base.workload.context)));
    QVERIFY(!help.contains(QStringLiteral("32768"))); // the old, wrong default
    QVERIFY(
        help.contains(QStringLiteral("(default %1)").arg(QString::fromStdString(base.model.id))));
    QVERIFY(help.contains(
        QStringLiteral("(default %1)").arg(QString::fromStdString(base.hardware.gpu.id))));
    QVERIFY(help.contains(QStringLiteral("--block-size N"))); // auto: vLLM's choice
    QVERIFY(help.contains(QStringLiteral("(default auto)")));
    // What the help says is what a run without options computes.
    const auto o = ledgerJson({});
    QCOMPARE(o.value("context").toInteger(), base.workload.context);
    QCOMPARE(o.value("model").toString(), QString::fromStdString(base.model.id));
    QCOMPARE(o.value("block_size").toInt(), kvl::core::computeLedger(base).blockSize);
    QCOMPARE(o.value("block_size").toInt(), 16); // what vLLM picks for Llama on an H100
}

void TestCli::unitsSameEverywhere_data() {
    QTest::addColumn<QString>("units");
    QTest::addColumn<int>("rc");
    QTest::addColumn<QString>("suffix"); // of the figures in the table
    QTest::addRow("gib") << QStringLiteral("gib") << 0 << QStringLiteral("KiB");
    QTest::addRow("GiB") << QStringLiteral("GiB") << 0 << QStringLiteral("KiB");
    QTest::addRow("gb") << QStringLiteral("gb") << 0 << QStringLiteral(" KB");
    QTest::addRow("GB (export accepted it, ledger did not)")
        << QStringLiteral("GB") << 0 << QStringLiteral(" KB");
    QTest::addRow("TB") << QStringLiteral("TB") << 2 << QString();
}

void TestCli::unitsSameEverywhere() {
    // The export side of the same values is in tst_export (unitsSameAsLedger).
    QFETCH(QString, units);
    QFETCH(int, rc);
    QFETCH(QString, suffix);
    const Run r = run({"ledger", "--units", units});
    QCOMPARE(r.rc, rc);
    if (rc == 0)
        QVERIFY2(r.out.contains(QRegularExpression(QStringLiteral("KV per token +model "))) &&
                     r.out.contains(suffix),
                 qPrintable(r.out));
    else
        QCOMPARE(
            r.err,
            QStringLiteral("kvledger ledger: --units: expected gib or gb, got '%1'\n").arg(units));
}

void TestCli::unexpectedArguments_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    QTest::addRow("gpus --json extra") << QStringList{"gpus", "--json", "extra"} << "'extra'";
    QTest::addRow("models extra") << QStringList{"models", "extra"} << "'extra'";
    QTest::addRow("ledger extra") << QStringList{"ledger", "--model", "llama-3-8b", "extra"}
                                  << "'extra'";
    QTest::addRow("flag with a value") << QStringList{"ledger", "--json=yes"} << "--json";
    QTest::addRow("models option of ledger")
        << QStringList{"models", "--context", "5"} << "'--context'";
    QTest::addRow("export option in ledger")
        << QStringList{"ledger", "--chart", "memory"} << "'--chart'";
    QTest::addRow("help of no command") << QStringList{"help", "frobnicate"} << "'frobnicate'";
}

void TestCli::unexpectedArguments() {
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    const Run r = run(args);
    QCOMPARE(r.rc, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
}

void TestCli::granularityFromCore_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("format");
    QTest::addRow("int8 per-group")
        << QStringList{"--kv-dtype", "int8", "--kv-granularity", "per-group"}
        << QStringLiteral("INT8 g128 (fp16 scale+zero)");
    QTest::addRow("int8 kivi") << QStringList{"--kv-dtype", "int8", "--kv-granularity", "kivi"}
                               << QStringLiteral("INT8 KIVI K per-channel / V per-token g32 "
                                                 "(fp16 scale+zero)");
    QTest::addRow("int4 per-token-head")
        << QStringList{"--kv-dtype", "int4", "--kv-granularity", "per-token-head"}
        << QStringLiteral("INT4 per-token-head (fp16 scale+zero)");
    QTest::addRow("own group size after the granularity")
        << QStringList{"--kv-group-size", "64",         "--kv-granularity",
                       "per-group",       "--kv-dtype", "int8"}
        << QStringLiteral("INT8 g64 (fp16 scale+zero)");
}

void TestCli::granularityFromCore() {
    QFETCH(QStringList, args);
    QFETCH(QString, format);
    const auto o = ledgerJson(args);
    QCOMPARE(o.value("kv_format").toString(), format);
}

void TestCli::controlCharactersEscaped() {
    QTemporaryDir dir;
    const QString path =
        writeFile(dir, QStringLiteral("config.json"),
                  R"({"_name_or_path": "org/evil\u001b[2J\u0007name", "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
            "max_position_embeddings": 8192, "torch_dtype": "bfloat16"})");
    const Run r = run({"ledger", "--config", path});
    QVERIFY2(r.rc == 0, qPrintable(r.err));
    for (const QChar c : r.out)
        QVERIFY2(c == QLatin1Char('\n') || c.unicode() >= 0x20, qPrintable(r.out.left(80)));
    QVERIFY2(r.out.startsWith(QStringLiteral("evil\\x1b[2J\\x07name on 1 x ")),
             qPrintable(r.out.left(80)));
    // JSON carries the name as it is, escaped by the JSON writer.
    const auto o = ledgerJson({"--config", path});
    QCOMPARE(o.value("model_name").toString(), QStringLiteral("evil\x1b[2J\x07name"));
}

void TestCli::scenarioFromFifo() {
#ifdef Q_OS_UNIX
    QTemporaryDir dir;
    const QString fifo = dir.filePath(QStringLiteral("s.kvl.json"));
    QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
    const Run r = run({"ledger", "--scenario", fifo}); // returns: never opens the FIFO
    QCOMPARE(r.rc, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--scenario: ") + fifo +
                            QStringLiteral(": is a FIFO (named pipe), not a regular file")),
             qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
#else
    QSKIP("FIFOs are POSIX");
#endif
}

void TestCli::windowArguments_data() {
    QTest::addColumn<QStringList>("args"); // after QApplication took Qt's own options
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("error");
    QTest::addRow("none") << QStringList{"kvledger"} << QString() << QString();
    QTest::addRow("a file") << QStringList{"kvledger", "f.kvl.json"} << QStringLiteral("f.kvl.json")
                            << QString();
    QTest::addRow("two files") << QStringList{"kvledger", "a.kvl.json", "b.kvl.json"} << QString()
                               << QStringLiteral("unexpected argument 'b.kvl.json'");
    QTest::addRow("unknown option") << QStringList{"kvledger", "--frobnicate", "f.kvl.json"}
                                    << QString() << QStringLiteral("'--frobnicate'");
    QTest::addRow("scenario options are not the window's")
        << QStringList{"kvledger", "--context", "5"} << QString() << QStringLiteral("'--context'");
}

void TestCli::windowArguments() {
    QFETCH(QStringList, args);
    QFETCH(QString, file);
    QFETCH(QString, error);
    const auto r = kvl::app::parseWindowArguments(args);
    QCOMPARE(r.ok(), error.isEmpty());
    if (r.ok())
        QCOMPARE(r->positional.empty() ? QString() : QString::fromStdString(r->positional.front()),
                 file);
    else
        QVERIFY2(QString::fromStdString(r.error().message).contains(error),
                 r.error().message.c_str());
}

void TestCli::v1Fields() {
    // Gemma-2-9B: 21 sliding (4096) + 21 full layers -> two KV cache groups.
    const auto o = ledgerJson({"--model", "gemma-2-9b", "--kv-memory-gib", "20"});
    const auto mix = o.value("layer_mix").toObject();
    QCOMPARE(mix.value("sliding").toInt() + mix.value("full").toInt(), 42);
    const auto groups = o.value("kv_cache_groups").toArray();
    QCOMPARE(groups.size(), 2);
    qint64 blocks = 0;
    for (const auto& g : groups)
        blocks += g.toObject().value("admission_blocks").toInteger();
    QCOMPARE(o.value("blocks_per_request").toInteger(), blocks);
    const qint64 numBlocks = o.value("num_gpu_blocks").toInteger();
    QCOMPARE(numBlocks, qint64(20) * (1 << 30) / o.value("bytes_per_block").toInteger());
    // tokens = int(num_blocks / blocks_per_request x max_model_len), as vLLM main logs it.
    const qint64 maxLen = o.value("max_model_len").toInteger();
    QCOMPARE(o.value("gpu_kv_cache_tokens").toInteger(),
             qint64(double(numBlocks) / double(blocks) * double(maxLen)));
    QCOMPARE(o.value("gpu_kv_cache_tokens_legacy").toInteger(), numBlocks / 2 * 16);
    for (const char* k : {"estimated_max_model_len", "state_bytes_per_request", "in_flight_tokens",
                          "capacity_log_line", "layout", "max_num_seqs", "vllm_command"})
        QVERIFY2(o.contains(QLatin1String(k)), k);
    QVERIFY(
        o.value("capacity_log_line").toString().startsWith(QStringLiteral("GPU KV cache size: ")));
}

void TestCli::refusalIsAResult() {
    // vLLM refuses to start when one max_model_len request does not fit: a result, exit 0,
    // with vLLM's own estimate.
    const Run r =
        run(plain({"ledger", "--model", "llama-3.1-8b", "--kv-memory-gib", "10", "--json"}));
    QCOMPARE(r.rc, 0);
    const auto o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QVERIFY(o.value("vllm_refused").toBool());
    QVERIFY(
        o.value("error").toString().contains(QStringLiteral("estimated maximum model length is")));
    QCOMPARE(o.value("estimated_max_model_len").toInteger(), qint64(81904));
    // No request runs, so no speed is quoted, as the table says "none": the keys are there,
    // null (they were a speed for one request).
    QCOMPARE(o.value("requests_you_can_run").toInteger(), qint64(0));
    QCOMPARE(o.value("concurrency").toInteger(-1), qint64(0));
    for (const char* k : {"decode_step_ms", "tokens_per_s_per_user", "cluster_tokens_per_s",
                          "ttft_ms_estimate", "regime"})
        QVERIFY2(o.contains(QLatin1String(k)) && o.value(QLatin1String(k)).isNull(), k);
    // With --concurrency the user asked for a speed at that many requests: it is given.
    const Run asked = run(plain({"ledger", "--model", "llama-3.1-8b", "--kv-memory-gib", "10",
                                 "--concurrency", "4", "--json"}));
    const auto a = QJsonDocument::fromJson(asked.out.toUtf8()).object();
    QCOMPARE(a.value("concurrency").toInteger(), qint64(4));
    QVERIFY(a.value("decode_step_ms").toDouble() > 0);
}

void TestCli::blockSizeVllmRefuses() {
    const Run r = run({"ledger", "--block-size", "8"});
    QCOMPARE(r.rc, 2);
    QVERIFY2(r.err.startsWith(QStringLiteral("kvledger ledger: --block-size: vLLM has no attention "
                                             "backend for block size 8")),
             qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
    QCOMPARE(run({"ledger", "--block-size", "32"}).rc, 0);
}

void TestCli::speedFields_data() {
    QTest::addColumn<QStringList>("extra");
    QTest::addColumn<double>("kvBytesPerStep");
    // Llama-3.1-8B: 32 layers x 8 KV heads x 128 x K and V = 131072 B/token in BF16.
    // BF16 without a prefix: 32 requests x 8192 tokens (issue 11's 34.36 GB).
    QTest::addRow("bf16") << QStringList{"--kv-dtype", "auto", "--prefix-tokens", "0"}
                          << 32.0 * 8192 * 131072;
    // FP8 halves it (17.18 GB).
    QTest::addRow("fp8") << QStringList{"--kv-dtype", "fp8", "--prefix-tokens", "0"}
                         << 32.0 * 8192 * 65536;
    // The default scenario: BF16 and no shared prefix (issue 29, item 12).
    QTest::addRow("default: bf16, no shared prefix") << QStringList{} << 32.0 * 8192 * 131072;
    // A 2K prefix shared by all is read once per step, not once per request.
    QTest::addRow("bf16 + 2K shared prefix")
        << QStringList{"--prefix-tokens", "2K"} << (32.0 * (8192 - 2048) + 2048) * 131072;
    QTest::addRow("fp8 + 2K shared prefix")
        << QStringList{"--kv-dtype", "fp8", "--prefix-tokens", "2K"}
        << (32.0 * (8192 - 2048) + 2048) * 65536;
}

void TestCli::speedFields() {
    // Issue 11's done-when: decode_step_ms is the formula with its stated eta.
    QFETCH(QStringList, extra);
    QFETCH(double, kvBytesPerStep);
    const auto o = ledgerJson(QStringList{"--model", "llama-3.1-8b", "--gpu", "h100-80gb",
                                          "--context", "8192", "--concurrency", "32"} +
                              extra);
    const auto a = o.value("speed_assumptions").toObject();
    const double eta = a.value("eta_mem").toDouble();
    const double bw = a.value("bandwidth_gbs").toDouble();
    QCOMPARE(eta, 0.8);
    QCOMPARE(bw, 3350.0);
    // 16.06 GB of BF16 weights + the KV of the row, at 3350 GB/s x 0.8.
    const double bytes = 2.0 * 8'030'261'248.0 + kvBytesPerStep;
    QVERIFY2(std::abs(o.value("decode_step_ms").toDouble() - bytes / (bw * 1e9 * eta) * 1e3) < 1e-6,
             qPrintable(QString::number(o.value("decode_step_ms").toDouble(), 'f', 9)));
    QCOMPARE(o.value("regime").toString(), QStringLiteral("memory-bound"));
    QCOMPARE(o.value("concurrency").toInteger(), qint64(32));
    QVERIFY(std::abs(o.value("cluster_tokens_per_s").toDouble() -
                     32 * o.value("tokens_per_s_per_user").toDouble()) < 1e-6);
}

void TestCli::defaultIsWhatVllmRuns() {
    // Issue 13: the default scenario is one vLLM runs as printed (vLLM's defaults), the same
    // one the window's first launch shows; since issue 29 (item 12) it assumes no shared
    // prefix, so no block is counted as shared.
    const auto o = ledgerJson({});
    QCOMPARE(o.value("kv_bytes_per_token").toInteger(), qint64(32 * 8 * 128 * 2 * 2));
    QCOMPARE(o.value("shared_bytes_per_request_per_gpu").toInteger(), qint64(0));
    QCOMPARE(o.value("prefix_tokens").toInteger(), qint64(0));
    QVERIFY2(o.value("vllm_command").toString().contains(QStringLiteral("--kv-cache-dtype auto")),
             qPrintable(o.value("vllm_command").toString()));
    QVERIFY(!o.value("vllm_refused").toBool());
    QCOMPARE(o.value("context").toInteger(), qint64(4096));
}

void TestCli::planLlama70b() {
    // Issue 10's done-when.
    const Run r = run({"plan", "--model", "llama-3.1-70b", "--context", "32768", "--users", "50",
                       "--gpu", "h100-80gb", "--json"});
    QCOMPARE(r.rc, 0);
    const auto doc = QJsonDocument::fromJson(r.out.toUtf8()).object();
    const auto plans = doc.value("plans").toArray();
    QCOMPARE(plans.size(), 1);
    const auto p = plans.first().toObject();
    QVERIFY(p.value("fits").toBool());
    QCOMPARE(p.value("gpu").toString(), QStringLiteral("h100-80gb"));
    QVERIFY(p.value("gpus").toInt() <= 12);
    QCOMPARE(p.value("gpus").toInt(),
             p.value("tp").toInt() * p.value("pp").toInt() * p.value("dp").toInt());
    QCOMPARE(64 % p.value("tp").toInt(), 0); // vLLM: TP divides the attention heads
    QVERIFY(p.value("cluster_requests").toInteger() >= 50);
    const QString cmd = p.value("vllm_command").toString();
    QVERIFY(cmd.contains(QStringLiteral("--tensor-parallel-size %1").arg(p.value("tp").toInt())));
    QVERIFY(cmd.contains(QStringLiteral("--max-model-len 32768")));
}

void TestCli::planJsonShape() {
    const Run r = run({"plan", "--model", "llama-3.1-70b", "--context", "8192", "--users", "10",
                       "--gpu", "h100-80gb", "--gpu", "a10g", "--json"});
    QCOMPARE(r.rc, 0);
    const auto plans = QJsonDocument::fromJson(r.out.toUtf8()).object().value("plans").toArray();
    QCOMPARE(plans.size(), 2);
    for (const auto& v : plans) {
        const auto p = v.toObject();
        for (const char* k : {"gpu", "gpus", "fits", "alternatives"})
            QVERIFY2(p.contains(QLatin1String(k)), k);
        if (p.value("fits").toBool())
            for (const char* k : {"tp", "pp", "dp", "ep", "dcp", "requests_per_replica",
                                  "cluster_requests", "kv_bytes_per_gpu", "weights_bytes_per_gpu"})
                QVERIFY2(p.contains(QLatin1String(k)), k);
    }
    // Best first: the kinds that fit, by GPU count.
    QVERIFY(plans.first().toObject().value("fits").toBool());
}

void TestCli::planInfeasible_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("reason");
    QTest::addColumn<int>("nearestGpus");
    // Issue 32, item 5: 100,000 users of 32K on Llama-3.1-70B need more than 64 GPUs of any
    // kind; the reason names memory for the users and the most that fit, never the heads.
    // The deepest pipeline holds the most: 64 H100s give about 64 x 74 GB to KV after 141 GB
    // of weights, over 10.7 GB per 32K request (80 layers x 8 KV heads x 128 x 2 x 2 B): 412.
    // (With the 2K prefix every request shared before issue 29's item 12, a request held 30 of
    // its 32K tokens alone and 440 fit: 412 x 32 / 30. On B200s that prefix made two replicas
    // of PP 8 hold 1,048; without it one PP 16 replica holds the most.)
    QTest::addRow("b200")
        << QStringList{"--gpu", "b200"}
        << "memory for the users: at most 996 fit on 64 x B200 180GB as TP 4 x PP 16; 100,000 "
           "need more than 64 GPUs"
        << 64;
    QTest::addRow("h100")
        << QStringList{"--gpu", "h100-80gb"}
        << "memory for the users: at most 412 fit on 64 x H100 SXM 80GB as TP 4 x PP 16; 100,000 "
           "need more than 64 GPUs"
        << 64;
}

void TestCli::planInfeasible() {
    QFETCH(QStringList, args);
    QFETCH(QString, reason);
    QFETCH(int, nearestGpus);
    const Run r = run(QStringList{"plan", "--json", "--model", "llama-3.1-70b", "--context",
                                  "32768", "--users", "100000"} +
                      args);
    QCOMPARE(r.rc, 0);
    const auto p = QJsonDocument::fromJson(r.out.toUtf8())
                       .object()
                       .value("plans")
                       .toArray()
                       .first()
                       .toObject();
    QCOMPARE(p.value("fits"), QJsonValue(false));
    QVERIFY(p.value("gpus").isNull()); // no fake 0
    QCOMPARE(p.value("reason").toString(), reason);
    QVERIFY(!p.value("reason").toString().contains(QStringLiteral("heads")));
    const auto n = p.value("nearest").toObject();
    QCOMPARE(n.value("gpus").toInt(), nearestGpus);
    QCOMPARE(n.value("gpus").toInt(),
             n.value("tp").toInt() * n.value("pp").toInt() * n.value("dp").toInt());
    QCOMPARE(n.value("users").toInteger(),
             n.value("requests_per_replica").toInteger() * n.value("dp").toInteger());
    QVERIFY(n.value("users").toInteger() < 100000);
}

void TestCli::planDuplicateGpus() {
    // Issue 32, item 14: one plan per kind, however often --gpu names it.
    const Run r = run({"plan", "--json", "--users", "4", "--gpu", "h100-80gb", "--gpu", "a10g",
                       "--gpu", "h100-80gb"});
    QCOMPARE(r.rc, 0);
    const auto plans = QJsonDocument::fromJson(r.out.toUtf8()).object().value("plans").toArray();
    QCOMPARE(plans.size(), 2);
    QVERIFY(plans[0].toObject().value("gpu") != plans[1].toObject().value("gpu"));
}

void TestCli::saturatedFigures() {
    // Issue 32, item 7: DeepSeek-V3.2 at 1e9 tokens x 1e8 requests saturates the target's KV
    // bytes at INT64_MAX: JSON says null and lists it, the table says "over", never the
    // number.
    const QStringList args{"ledger",     "--model",           "deepseek-v3.2",
                           "--context",  "1000000000",        "--max-model-len",
                           "1000000000", "--target-requests", "100000000"};
    Run r = run(args + QStringList{"--json"});
    QCOMPARE(r.rc, 0);
    QVERIFY(!r.out.contains(QStringLiteral("9223372036854775807")));
    const auto o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QVERIFY(o.value("target_kv_bytes").isNull());
    QVERIFY(o.value("target_total_bytes").isNull());
    const auto saturated = o.value("saturated").toArray();
    QVERIFY(saturated.contains(QJsonValue(QStringLiteral("target_kv_bytes"))));
    QVERIFY(saturated.contains(QJsonValue(QStringLiteral("target_total_bytes"))));
    for (const auto& v : saturated) // each listed field is null where it stands at the top
        if (o.contains(v.toString()))
            QVERIFY2(o.value(v.toString()).isNull(), qPrintable(v.toString()));
    // An ordinary scenario saturates nothing.
    const auto plain = QJsonDocument::fromJson(run({"ledger", "--json"}).out.toUtf8()).object();
    QCOMPARE(plain.value("saturated").toArray().size(), 0);
    r = run(args);
    QCOMPARE(r.rc, 0);
    QVERIFY(!r.out.contains(QStringLiteral("9,223,372,036,854,775,807")));
    QVERIFY2(r.out.contains(QStringLiteral("over 9.22 EB")), qPrintable(r.out));
}

void TestCli::scenarioFileNamesTheField_data() {
    QTest::addColumn<QByteArray>("from");
    QTest::addColumn<QByteArray>("to");
    QTest::addColumn<QString>("message");
    // Issue 32, items 6, 10 and 14: the rules --block-size, --kv-memory-gib and the GPU's
    // figures obey, named as the file's field when the value came from a --scenario file.
    QTest::addRow("block size 7")
        << QByteArray("\"block_size\": 16") << QByteArray("\"block_size\": 7")
        << "s.kvl.json: levers.paging.block_size: vLLM has no attention backend for block size 7";
    QTest::addRow("bandwidth 0") << QByteArray("\"bandwidth_gbs\": 3350")
                                 << QByteArray("\"bandwidth_gbs\": 0")
                                 << "s.kvl.json: gpu.bandwidth_gbs: must be between 1 and 100000 "
                                    "GB/s, got 0";
    QTest::addRow("bandwidth denormal")
        << QByteArray("\"bandwidth_gbs\": 3350") << QByteArray("\"bandwidth_gbs\": 4.9e-324")
        << "s.kvl.json: gpu.bandwidth_gbs: must be between 1 and 100000 GB/s, got 4.94066e-324";
    QTest::addRow("kv memory above the gpu")
        << QByteArray("\"kv_memory_bytes\": null")
        << QByteArray("\"kv_memory_bytes\": 100000000000000")
        << "s.kvl.json: hardware.kv_memory_bytes: must be at most the GPU's memory (79.18 GiB on "
           "H100 SXM 80GB), got 90.95 TiB";
}

void TestCli::scenarioFileNamesTheField() {
    QFETCH(QByteArray, from);
    QFETCH(QByteArray, to);
    QFETCH(QString, message);
    QFile good(QStringLiteral(KVL_SOURCE_DIR "/tests/fuzz/corpus/scenario_file/default.kvl.json"));
    QVERIFY(good.open(QIODevice::ReadOnly));
    QByteArray text = good.readAll();
    QVERIFY2(text.contains(from), from.constData());
    text.replace(from, to);
    QTemporaryDir dir;
    const QString path = writeFile(dir, QStringLiteral("s.kvl.json"), text);
    const Run r = run({"ledger", "--scenario", path});
    QCOMPARE(r.rc, 2);
    QVERIFY2(r.err.startsWith(QStringLiteral("kvledger ledger: --scenario: ")), qPrintable(r.err));
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
}

void TestCli::planBadInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    // Issue 32, item 14: plan sizes each kind's pool from its memory; a fixed one is refused,
    // not ignored.
    QTest::addRow("kv memory")
        << QStringList{"plan", "--users", "4", "--kv-memory-gib", "10"}
        << "kvledger plan: --kv-memory-gib: plan sizes each GPU's KV pool from its memory";
    QTest::addRow("no users") << QStringList{"plan"} << "--users: missing";
    QTest::addRow("zero users") << QStringList{"plan", "--users", "0"}
                                << "--users: must be between 1";
    QTest::addRow("unknown gpu") << QStringList{"plan", "--users", "4", "--gpu", "h999"}
                                 << "unknown GPU 'h999'";
    // Issue 30: plan --rate needs an SLO, and the SLO a rate.
    QTest::addRow("rate without slo") << QStringList{"plan", "--users", "4", "--rate", "2"}
                                      << "kvledger plan: --rate: needs --slo-ttft-ms";
    QTest::addRow("slo without rate") << QStringList{"plan", "--users", "4", "--slo-tpot-ms", "50"}
                                      << "kvledger plan: --slo-tpot-ms: needs --rate";
    QTest::addRow("absurd rate") << QStringList{"plan", "--users",       "4",  "--rate",
                                                "-3",   "--slo-ttft-ms", "100"}
                                 << "--rate: expected requests per second";
    QTest::addRow("prompt beyond context")
        << QStringList{"plan", "--users",         "4",    "--rate", "1", "--slo-ttft-ms",
                       "100",  "--prompt-tokens", "20000"}
        << "--prompt-tokens: prompts up to 20,000 tokens reach the max model length";
    QTest::addRow("bad rank") << QStringList{"plan", "--users", "4", "--rank", "speed"}
                              << "--rank: expected gpus or throughput";
}

void TestCli::planBadInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    const Run r = run(args);
    QCOMPARE(r.rc, 2);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
}

void TestCli::readmeAgreesWithHelp() {
    // README's "The command line", with docs/command-line.md's "Options in detail" that it
    // points to, names only options kvledger's help lists, and every option and chart the help
    // lists.
    auto sectionOf = [](const char* file, const char* heading) {
        QFile f(QStringLiteral(KVL_SOURCE_DIR "/") + QLatin1String(file));
        if (!f.open(QIODevice::ReadOnly))
            return QString();
        const QString text = QString::fromUtf8(f.readAll());
        const qsizetype from = text.indexOf(QLatin1String(heading));
        if (from < 0)
            return QString();
        const qsizetype to = text.indexOf(QStringLiteral("\n## "), from + 1);
        return text.mid(from, to < 0 ? -1 : to - from);
    };
    const QString readmeSection = sectionOf("README.md", "## The command line");
    const QString detail = sectionOf("docs/command-line.md", "## Options in detail");
    QVERIFY(!readmeSection.isEmpty());
    QVERIFY(!detail.isEmpty());
    QVERIFY(readmeSection.contains(QLatin1String("docs/command-line.md")));
    QString section = readmeSection + QLatin1Char('\n') + detail;
    QStringList lines = section.split(QLatin1Char('\n'));
    lines.erase(
        std::remove_if(lines.begin(), lines.end(),
                       [](const QString& l) { return l.startsWith(QLatin1String("kvprobe")); }),
        lines.end());
    section = lines.join(QLatin1Char('\n'));
    QString help;
    for (const char* c : {"ledger", "plan", "simulate", "models", "gpus", "export", "--screenshot"})
        help += run({"help", c}).out;
    static const QRegularExpression option(QStringLiteral("(?<![\\w-])--[a-z][a-z-]*"));
    QSet<QString> inReadme;
    for (auto it = option.globalMatch(section); it.hasNext();)
        inReadme.insert(it.next().captured());
    // The options the help lists: the first name of each of its option lines.
    static const QRegularExpression listed(QStringLiteral("^  (?:-h, )?(--[a-z][a-z-]*)"),
                                           QRegularExpression::MultilineOption);
    QSet<QString> inHelp;
    for (auto it = listed.globalMatch(help); it.hasNext();)
        inHelp.insert(it.next().captured(1));
    QVERIFY(inHelp.size() > 30);
    for (const QString& o : inReadme)
        QVERIFY2(inHelp.contains(o),
                 qPrintable(o + QStringLiteral(" is in the README, not in --help")));
    for (const QString& o : inHelp)
        QVERIFY2(inReadme.contains(o),
                 qPrintable(o + QStringLiteral(" is in --help, not in the README")));
    for (const auto& c : kvl::widgets::chartSpecs())
        QVERIFY2(section.contains(QStringLiteral("`%1`").arg(QLatin1String(c.name))), c.name);
}

namespace {

QJsonObject simulated(QStringList args) {
    args.prepend(QStringLiteral("simulate"));
    args.append(QStringLiteral("--json"));
    const Run r = run(args);
    if (r.rc != 0)
        qWarning() << "simulate failed:" << r.err;
    return QJsonDocument::fromJson(r.out.toUtf8()).object();
}

} // namespace

// Issue 30: kvledger simulate. At a rate so low that requests never meet, TTFT is the speed
// model's prefill of one prompt (computed here from core, not from the JSON).
void TestCli::simulateJson() {
    const auto o = simulated({"--rate", "0.001", "--requests", "5", "--prompt-tokens", "1000",
                              "--output-tokens", "20", "--prefix-tokens", "0"});
    QCOMPARE(o.value("kind").toString(), QStringLiteral("simulation"));
    QVERIFY(o.value("assumptions").toString().contains(QStringLiteral("roofline")));
    const auto per = o.value("per_replica").toObject();
    QCOMPARE(per.value("completed").toInteger(), 5);
    QCOMPARE(per.value("output_tokens").toInteger(), 100);
    const double ttft = kvl::core::prefillMsEstimate(kvl::io::defaultScenario(), 1000);
    const double got =
        o.value("latency_ms").toObject().value("ttft").toObject().value("p50").toDouble();
    QVERIFY2(std::abs(got - ttft) < 1e-6 * ttft, qPrintable(QString::number(got)));
    QCOMPARE(o.value("workload").toObject().value("arrivals").toString(),
             QStringLiteral("poisson"));
    const auto series = o.value("series").toObject();
    QVERIFY(series.value("t_s").toArray().size() >= 2);
    QCOMPARE(series.value("blocks_in_use").toObject().keys(),
             QStringList{QStringLiteral("0 full_attention")});
    // The SLO: goodput and the sustainable rate (none above the lowest: a prefill alone takes
    // longer than 1 ms).
    const auto slo = simulated({"--rate", "2", "--requests", "200", "--slo-ttft-ms", "1"})
                         .value("slo")
                         .toObject();
    QCOMPARE(slo.value("attainment").toDouble(), 0.0);
    QVERIFY(slo.value("sustainable_rate_rps").isNull());
    const auto ok = simulated({"--rate", "2", "--requests", "400", "--slo-ttft-ms", "2000",
                               "--slo-tpot-ms", "100"})
                        .value("slo")
                        .toObject();
    QCOMPARE(ok.value("attainment").toDouble(), 1.0);
    QVERIFY(ok.value("sustainable_rate_rps").toDouble() > 2);
    // A closed loop and its cluster figures with DP.
    const auto c = simulated({"--concurrency", "8", "--requests", "40", "--dp", "2"});
    // The 8 clients split over the 2 replicas; one replica is simulated.
    QCOMPARE(c.value("workload").toObject().value("concurrency").toInteger(), 8);
    QCOMPARE(c.value("workload").toObject().value("concurrency_per_replica").toInteger(), 4);
    QCOMPARE(c.value("per_replica").toObject().value("peak_running").toInteger(), 4);
    const auto half = simulated({"--rate", "6", "--requests", "50", "--dp", "3"});
    QCOMPARE(half.value("workload").toObject().value("rate_per_replica").toDouble(), 2.0);
    QCOMPARE(c.value("cluster").toObject().value("throughput_rps").toDouble(),
             2 * c.value("per_replica").toObject().value("throughput_rps").toDouble());
}

// plan --rate: every layout shown carries its simulation, and the order meets-first.
void TestCli::planWithRate() {
    const Run r =
        run({"plan", "--users", "8", "--context", "8192", "--gpu", "h100-80gb", "--gpu",
             "a100-40gb", "--rate", "0.05", "--slo-ttft-ms", "400", "--requests", "40", "--json"});
    QCOMPARE(r.rc, 0);
    const auto plans = QJsonDocument::fromJson(r.out.toUtf8()).object().value("plans").toArray();
    QCOMPARE(plans.size(), 2);
    // A lone 8K prompt takes ~0.2 s on an H100 (989 TFLOP/s) and ~0.7 s on an A100 (312).
    QCOMPARE(plans[0].toObject().value("gpu").toString(), QStringLiteral("h100-80gb"));
    QCOMPARE(plans[0].toObject().value("slo").toObject().value("meets").toBool(), true);
    QCOMPARE(plans[1].toObject().value("slo").toObject().value("meets").toBool(), false);
    const Run t = run({"plan", "--users", "8", "--gpu", "h100-80gb", "--rate", "0.05",
                       "--slo-ttft-ms", "400", "--requests", "40"});
    QVERIFY2(t.out.contains(QLatin1String("meets the SLO")), qPrintable(t.out));
    QVERIFY(t.out.startsWith(QLatin1String("At 0.05 req/s, TTFT <= 400 ms")));
}

void TestCli::simulateTable() {
    // The default scenario shares no prefix (issue 29, item 12): --prefix-share names its length.
    const Run r = run({"simulate", "--rate", "3", "--requests", "300", "--slo-ttft-ms", "500",
                       "--prefix-tokens", "2048", "--prefix-share", "0.5", "--dp", "4"});
    QCOMPARE(r.rc, 0);
    QVERIFY(r.err.isEmpty());
    for (const char* s : {"Simulation", "per replica", "cluster", "Latency (ms)", "TTFT", "TPOT",
                          "End to end", "Goodput (replica)", "Sustainable rate", "Shared prefix",
                          "2,048 tokens, 50% of requests", "300 served of 300"})
        QVERIFY2(r.out.contains(QLatin1String(s)), s);
}

void TestCli::simulateTrace_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("rc");
    QTest::addColumn<QString>("says");
    QTest::addRow("csv") << "t.csv"
                         << QByteArray("arrival_s,prompt_tokens,output_tokens,prefix_id\n"
                                       "0,1000,10,1\n0.5,2000,20,\n# a comment\n\n1.0,500,5,1\n")
                         << 0 << "3 served of 3";
    QTest::addRow("jsonl") << "t.jsonl"
                           << QByteArray("{\"arrival_s\": 0, \"prompt_tokens\": 100, "
                                         "\"output_tokens\": 4}\n{\"arrival_s\": 0.1, "
                                         "\"prompt_tokens\": 200, \"output_tokens\": 8, "
                                         "\"prefix_id\": 3, \"prefix_tokens\": 64}")
                           << 0 << "2 served of 2";
    QTest::addRow("csv bad number") << "b.csv"
                                    << QByteArray("arrival_s,prompt_tokens,output_tokens\n"
                                                  "0,100,4\n1,lots,4\n")
                                    << 2 << "b.csv:3: prompt_tokens must be a whole number";
    QTest::addRow("csv out of order")
        << "o.csv" << QByteArray("arrival_s,prompt_tokens,output_tokens\n5,100,4\n4,100,4\n") << 2
        << "o.csv:3: arrival_s 4 is before the previous line's 5";
    QTest::addRow("csv columns") << "c.csv"
                                 << QByteArray("arrival_s,prompt_tokens,output_tokens\n0,1\n") << 2
                                 << "c.csv:2: expected 3 columns";
    QTest::addRow("csv header") << "h.csv" << QByteArray("arrival,prompt_tokens,output_tokens\n")
                                << 2 << "h.csv:1: unknown column \"arrival\"";
    QTest::addRow("jsonl syntax")
        << "s.jsonl"
        << QByteArray("{\"arrival_s\": 0, \"prompt_tokens\": 100, \"output_tokens\": 4}\n{oops\n")
        << 2 << "s.jsonl:2: not valid JSON";
    QTest::addRow("jsonl zero output")
        << "z.jsonl"
        << QByteArray("{\"arrival_s\": 0, \"prompt_tokens\": 100, \"output_tokens\": 0}") << 2
        << "z.jsonl:1: output_tokens must be from 1 to 16,777,216, got 0";
    QTest::addRow("jsonl unknown field")
        << "u.jsonl" << QByteArray("{\"arrival\": 0}") << 2 << "u.jsonl:1: unknown field";
    QTest::addRow("empty") << "e.csv" << QByteArray("\n\n") << 2 << "holds no requests";
}

void TestCli::simulateTrace() {
    QFETCH(QString, name);
    QFETCH(QByteArray, text);
    QFETCH(int, rc);
    QFETCH(QString, says);
    QTemporaryDir dir;
    const QString path = writeFile(dir, name, text);
    const Run r = run({"simulate", "--trace", path, "--prefix-tokens", "0"});
    QCOMPARE(r.rc, rc);
    if (rc == 0) {
        QVERIFY2(r.out.contains(says), qPrintable(r.out));
        return;
    }
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.startsWith(QStringLiteral("kvledger simulate: --trace: ")), qPrintable(r.err));
}

// Issue 29, item 11: a typo gets the catalog or option name it most likely meant, on the one
// line of the error (exit 2); a name with nothing close gets no guess.
void TestCli::didYouMean_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("says");
    QTest::addRow("gpu prefix") << QStringList{"ledger", "--gpu", "h100"}
                                << "--gpu: unknown GPU 'h100'; did you mean h100-80gb, "
                                   "h100-nvl-94gb or h100-pcie-80gb? (kvledger gpus lists them)";
    QTest::addRow("gpu typo") << QStringList{"ledger", "--gpu", "b2000"}
                              << "unknown GPU 'b2000'; did you mean b200?";
    QTest::addRow("model prefix") << QStringList{"ledger", "--model", "llama-3-8"}
                                  << "unknown model 'llama-3-8'; did you mean llama-3-8b,";
    QTest::addRow("model case") << QStringList{"ledger", "--model", "Qwen3-32"}
                                << "did you mean qwen3-32b, qwen3-4b or qwen3-8b?";
    QTest::addRow("option prefix") << QStringList{"ledger", "--contex", "5"}
                                   << "unknown option '--contex'; did you mean --context? (see "
                                      "kvledger ledger --help)";
    QTest::addRow("option swap") << QStringList{"ledger", "--contxet", "5"}
                                 << "did you mean --context?";
    QTest::addRow("plan's own option")
        << QStringList{"plan", "--user", "5"} << "did you mean --users?";
    QTest::addRow("plan gpu") << QStringList{"plan", "--users", "5", "--gpu", "h200x"}
                              << "--gpu: unknown GPU 'h200x'; did you mean h200?";
    QTest::addRow("nothing close") << QStringList{"ledger", "--gpu", "zzzzzz"}
                                   << "unknown GPU 'zzzzzz' (kvledger gpus lists them)";
}

void TestCli::didYouMean() {
    QFETCH(QStringList, args);
    QFETCH(QString, says);
    const Run r = run(args);
    QCOMPARE(r.rc, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains(says), qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
}

void TestCli::simulateBadInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    QTest::addRow("no arrivals") << QStringList{} << "--rate: missing";
    QTest::addRow("rate zero") << QStringList{"--rate", "0"} << "--rate: expected requests";
    QTest::addRow("rate absurd") << QStringList{"--rate", "1e12"} << "--rate: expected requests";
    QTest::addRow("rate text") << QStringList{"--rate", "fast"} << "--rate: expected";
    QTest::addRow("rate and concurrency")
        << QStringList{"--rate", "1", "--concurrency", "4"} << "exclude each other";
    QTest::addRow("trace and rate")
        << QStringList{"--trace", "x.csv", "--rate", "1"} << "--trace: a trace brings";
    QTest::addRow("prompt absurd")
        << QStringList{"--rate", "1", "--prompt-tokens", "1e99"} << "--prompt-tokens: expected N";
    QTest::addRow("prompt beyond max model len")
        << QStringList{"--rate", "1", "--prompt-tokens", "9000"}
        << "--prompt-tokens: prompts up to 9,000 tokens reach the max model length (8,192)";
    QTest::addRow("output dist") << QStringList{"--rate", "1", "--output-tokens", "lognormal:100"}
                                 << "--output-tokens";
    QTest::addRow("requests zero")
        << QStringList{"--rate", "1", "--requests", "0"} << "--requests: must be between 1";
    QTest::addRow("duration nan") << QStringList{"--rate", "1", "--duration", "nan"}
                                  << "--duration: expected seconds";
    QTest::addRow("share without prefix")
        << QStringList{"--rate", "1", "--prefix-tokens", "0", "--prefix-share", "0.5"}
        << "--prefix-share: needs --prefix-tokens";
    QTest::addRow("slo negative") << QStringList{"--rate", "1", "--slo-ttft-ms", "-1"}
                                  << "--slo-ttft-ms: expected milliseconds";
    QTest::addRow("seed text") << QStringList{"--rate", "1", "--seed", "x"} << "--seed";
    QTest::addRow("burst without rate")
        << QStringList{"--concurrency", "2", "--burstiness", "2"} << "--burstiness";
    QTest::addRow("clients over dp") << QStringList{"--concurrency", "5", "--dp", "2"}
                                     << "--concurrency: 5 clients do not split evenly over 2";
    QTest::addRow("missing trace")
        << QStringList{"--trace", "/nonexistent/t.csv"} << "--trace: /nonexistent/t.csv";
    // The scheduler simulated is vLLM's: another engine is refused, not silently ignored.
    QTest::addRow("engine sglang") << QStringList{"--engine", "sglang", "--rate", "1"}
                                   << "--engine: the traffic simulation follows vLLM v1's";
    QTest::addRow("engine llama.cpp")
        << QStringList{"--engine", "llamacpp", "--rate", "1"} << "llama.cpp's are not simulated";
}

void TestCli::simulateBadInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    args.prepend(QStringLiteral("simulate"));
    const Run r = run(args);
    QCOMPARE(r.rc, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
}

// Issue 31: `kvledger gguf FILE` reads a header (a GGUF v3 with one q8_0 tensor of 64 x 2
// values: 4 blocks of 34 bytes) and refuses a file that is not a GGUF in one line naming it.
void TestCli::ggufCommand() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QByteArray b("GGUF");
    auto u32 = [&](quint32 v) { b.append(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](quint64 v) { b.append(reinterpret_cast<const char*>(&v), 8); };
    auto str = [&](const QByteArray& t) {
        u64(quint64(t.size()));
        b.append(t);
    };
    u32(3);
    u64(1); // tensors
    u64(2); // metadata
    str("general.architecture");
    u32(8);
    str("qwen3");
    str("qwen3.block_count");
    u32(4);
    u32(28);
    str("w");
    u32(2);
    u64(64);
    u64(2);
    u32(8); // q8_0
    u64(0);
    while (b.size() % 32)
        b.append('\0');
    b.append(QByteArray(136, '\x22'));
    const QString path = dir.filePath(QStringLiteral("m.gguf"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(b);
    f.close();
    auto r = run({"gguf", path, "--json"});
    QCOMPARE(r.rc, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(o["architecture"].toString(), QStringLiteral("qwen3"));
    QCOMPARE(o["block_count"].toInteger(), 28);
    QCOMPARE(o["weight_bytes"].toInteger(), 136);
    QCOMPARE(o["bits_per_weight"].toDouble(), 8.5);

    const QString bad = dir.filePath(QStringLiteral("bad.gguf"));
    QFile g(bad);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write(b.left(40));
    g.close();
    r = run({"gguf", bad});
    QCOMPARE(r.rc, 2);
    QVERIFY2(r.err.startsWith(QStringLiteral("kvledger gguf: ") + bad + QStringLiteral(": ")),
             qPrintable(r.err));
    QCOMPARE(r.err.count(u'\n'), 1);
}

// Issue 31: --engine names its choices when the value is not one; the engines' ledger is a
// different document from vLLM's, with the engine's lines.
void TestCli::engineOption() {
    auto r = run({"ledger", "--engine", "tgi"});
    QCOMPARE(r.rc, 2);
    QCOMPARE(r.err,
             QStringLiteral("kvledger ledger: --engine: expected vllm, sglang, trtllm or llamacpp, "
                            "got 'tgi'\n"));
    r = run({"ledger", "--engine", "llamacpp", "--model", "llama-3.1-8b", "--ctx-size", "8192",
             "--json"});
    QCOMPARE(r.rc, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(o["engine"].toString(), QStringLiteral("llamacpp"));
    // 32 layers x 8 heads x 128 x 2 bytes x 2 (K, V) x 8192 cells: 1 GiB.
    QCOMPARE(o["kv_pool_bytes_per_gpu"].toInteger(), qint64(1) << 30);
    QCOMPARE(o["log_lines"].toArray().first().toString(),
             QStringLiteral("llama_kv_cache: size = 1024.00 MiB (  8192 cells,  32 layers,  1/1 "
                            "seqs), K (f16):  512.00 MiB, V (f16):  512.00 MiB"));
    // vLLM's own document is unchanged by the engine option's default.
    r = run({"ledger", "--model", "llama-3.1-8b", "--json"});
    QVERIFY(QJsonDocument::fromJson(r.out.toUtf8()).object().contains("vllm_log_lines"));
}

// Issue 29, item 11: the window's token boxes read "32K"; so does every token option here
// (the same function, core::parseTokenCount).
void TestCli::tokenSuffixes_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("field");
    QTest::addColumn<qint64>("value");
    QTest::addRow("context 32K") << QStringList{"--model", "llama-3.1-8b", "--context", "32K"}
                                 << "context" << qint64(32768);
    QTest::addRow("context 1.5k") << QStringList{"--context", "1.5k"} << "context" << qint64(1536);
    QTest::addRow("context 8,000")
        << QStringList{"--context", "8,000"} << "context" << qint64(8000);
    QTest::addRow("max-model-len 128K")
        << QStringList{"--model", "llama-3.1-8b", "--max-model-len", "128K"} << "max_model_len"
        << qint64(131072);
    QTest::addRow("max-model-len 1M")
        << QStringList{"--model", "llama-4-scout-17b-16e", "--max-model-len", "1M"}
        << "max_model_len" << qint64(1048576);
    QTest::addRow("prefix 2K") << QStringList{"--prefix-tokens", "3K"} << "prefix_tokens"
                               << qint64(3072);
}

void TestCli::tokenSuffixes() {
    QFETCH(QStringList, args);
    QFETCH(QString, field);
    QFETCH(qint64, value);
    const QJsonObject o = ledgerJson(args);
    QCOMPARE(o.value(field).toInteger(), value);
    // Not counts: a fraction of a token, a sign, an exponent.
    for (const char* badText : {"1.1K", "-2K", "1e3", "32KB", "K"}) {
        const Run r = run({"ledger", "--context", badText});
        QCOMPARE(r.rc, 2);
        QVERIFY2(r.err.contains(QLatin1String("--context:")), qPrintable(r.err));
    }
}

// Issue 29, item 11: big numbers are grouped for people and plain for programs.
void TestCli::thousandsInTextNotJson() {
    const Run text = run({"ledger"});
    QCOMPARE(text.rc, 0);
    static const QRegularExpression grouped(
        QStringLiteral("[0-9],[0-9]{3} tokens/s in the cluster"));
    QVERIFY2(text.out.contains(grouped), qPrintable(text.out));
    static const QRegularExpression ungrouped(QStringLiteral("\\b[0-9]{4,} tokens/s"));
    QVERIFY2(!text.out.contains(ungrouped), qPrintable(text.out));
    const Run gpus = run({"gpus"});
    QVERIFY2(gpus.out.contains(QRegularExpression(QStringLiteral("h100-80gb .* 3,350\\n"))),
             qPrintable(gpus.out));
    const Run json = run({"ledger", "--json"});
    const QJsonObject o = QJsonDocument::fromJson(json.out.toUtf8()).object();
    QVERIFY(o.value("gpu_memory_bytes").isDouble());
    static const QRegularExpression groupedNumber(QStringLiteral("^[0-9]{1,3}(,[0-9]{3})+$"));
    for (auto it = o.begin(); it != o.end(); ++it)
        QVERIFY2(!it.value().toString().contains(groupedNumber), qPrintable(it.key()));
}

// Issue 29, item 11: every cell starts at its column's header, however long the names.
void TestCli::catalogTablesAligned_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<QStringList>("headers");
    QTest::addRow("models") << "models"
                            << QStringList{"family", "layers", "max ctx", "KV B/token", "notes"};
    QTest::addRow("gpus") << "gpus" << QStringList{"name", "memory", "bytes", "GB/s"};
}

void TestCli::catalogTablesAligned() {
    QFETCH(QString, command);
    QFETCH(QStringList, headers);
    const Run r = run({command});
    QCOMPARE(r.rc, 0);
    const QStringList lines = r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QVERIFY(lines.size() > 10);
    // Left-aligned columns (names) start where their header starts, right-aligned ones
    // (numbers) end where it ends, with two blanks on the outer side on every line.
    const QString head = lines[0];
    for (const QString& h : headers) {
        const qsizetype start = head.indexOf(h);
        const qsizetype end = start + h.size();
        QVERIFY(start > 1);
        const bool right = h != QLatin1String("family") && h != QLatin1String("name") &&
                           h != QLatin1String("notes");
        for (const QString& line : lines.mid(1)) {
            const bool ok =
                right ? line.size() > end + 1 && line[end - 1] != QLatin1Char(' ') &&
                            line[end] == QLatin1Char(' ') && line[end + 1] == QLatin1Char(' ')
                      : line[start] != QLatin1Char(' ') && line[start - 1] == QLatin1Char(' ') &&
                            line[start - 2] == QLatin1Char(' ');
            QVERIFY2(ok || (right && h == headers.back() && line.size() == end &&
                            line[end - 1] != QLatin1Char(' ')),
                     qPrintable(h + " collides in: " + line));
        }
    }
    if (command == QLatin1String("models"))
        QVERIFY(r.out.contains(
            QRegularExpression(QStringLiteral("llama-4-maverick-17b-128e +Llama 4"))));
}

// Issue 29, item 11: a layout vLLM refuses is one line and exit 2, in text and in JSON, not a
// full result with a warning at its end.
void TestCli::invalidLayoutIsAnError_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("says");
    QTest::addRow("tp 3") << QStringList{"--tp", "3"}
                          << "--tp: layout TP 3: tensor parallel 3 does not divide the 32 "
                             "attention heads";
    QTest::addRow("tp 3 json") << QStringList{"--tp", "3", "--json"} << "--tp: layout TP 3";
    QTest::addRow("kv heads") << QStringList{"--model", "llama-4-scout-17b-16e", "--tp", "20"}
                              << "--tp: layout TP 20: tensor parallel 20 cannot split or "
                                 "replicate 8 KV heads evenly";
    QTest::addRow("ep on a dense model") << QStringList{"--tp", "2", "--enable-expert-parallel"}
                                         << "--tp, --enable-expert-parallel: layout";
    QTest::addRow("tp and pp json")
        << QStringList{"--tp", "3", "--pp", "2", "--json"} << "--tp, --pp: layout";
    // Sizes out of range name the option that set them, as the layout's refusals do.
    QTest::addRow("pp beyond the layers")
        << QStringList{"--pp", "100"}
        << "--pp: pipeline parallel size 100 exceeds the model's 32 layers";
    QTest::addRow("dcp not dividing tp")
        << QStringList{"--dcp", "3"}
        << "--dcp: decode context parallel size must divide the tensor parallel size 1, got 3";
    QTest::addRow("dcp and tp") << QStringList{"--tp", "4", "--dcp", "3"}
                                << "--dcp, --tp: decode context parallel size must divide";
}

void TestCli::invalidLayoutIsAnError() {
    QFETCH(QStringList, args);
    QFETCH(QString, says);
    args.prepend(QStringLiteral("ledger"));
    const Run r = run(args);
    QCOMPARE(r.rc, 2);
    QVERIFY2(r.err.contains(says), qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
    if (!args.contains(QStringLiteral("--json"))) {
        QVERIFY(r.out.isEmpty());
        return;
    }
    // With --json the refusal is also an answer: {"valid": false, "error": the same line}.
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(o.value("valid"), QJsonValue(false));
    QVERIFY2(o.value("error").toString().contains(says), qPrintable(r.out));
    QVERIFY(r.err.trimmed().endsWith(o.value("error").toString()));
    QCOMPARE(ledgerJson({"--tp", "2"}).value("valid"), QJsonValue(true));
}

// Issue 29, item 5: a context beyond max_model_len (the model's, or --max-model-len) is
// refused on one line saying how to raise it; once the user raises it, vLLM's own check (one
// request must fit the KV cache) is the ledger's, as before.
void TestCli::contextBoundedByModel_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("rc");
    QTest::addColumn<QString>("says");
    QTest::addRow("beyond the model")
        << QStringList{"ledger", "--model", "llama-3-8b", "--context", "20000"} << 2
        << "--context: 20,000 tokens exceed llama-3-8b's max model length (8,192); pass "
           "--max-model-len 20000 to ask vLLM for more";
    QTest::addRow("beyond the model, json")
        << QStringList{"ledger", "--model", "llama-3-8b", "--context", "20000", "--json"} << 2
        << "--max-model-len 20000";
    QTest::addRow("beyond --max-model-len")
        << QStringList{"ledger", "--model",   "llama-3.1-8b", "--max-model-len",
                       "16K",    "--context", "20000"}
        << 2
        << "--context: 20,000 tokens exceed --max-model-len 16,384; raise --max-model-len "
           "to at least 20,000";
    QTest::addRow("plan beyond the model")
        << QStringList{"plan", "--users", "4", "--model", "llama-3-8b", "--context", "9000"} << 2
        << "--context: 9,000 tokens exceed llama-3-8b's max model length (8,192)";
    QTest::addRow("at the model's max")
        << QStringList{"ledger", "--model", "llama-3-8b", "--context", "8K"} << 0 << "";
    QTest::addRow("raised by the user")
        << QStringList{"ledger", "--model",         "llama-3-8b", "--context",
                       "20000",  "--max-model-len", "20000"}
        << 0 << "";
}

void TestCli::contextBoundedByModel() {
    QFETCH(QStringList, args);
    QFETCH(int, rc);
    QFETCH(QString, says);
    const Run r = run(args);
    QCOMPARE(r.rc, rc);
    if (rc == 0) {
        QVERIFY(r.err.isEmpty());
        return;
    }
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains(says), qPrintable(r.err));
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
}

// Issue 29, item 4: every figure of the ledger's text says its scope, and the ladder's bytes
// are per GPU as the window's ladder shows them (Llama-3.1-70B TP 4: the MHA BF16 baseline is
// 640 KiB per token per GPU, not the replica's 2.50 MiB).
void TestCli::scopeOnEveryFigure_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QStringList>("lines"); // exact substrings of the output
    QTest::addRow("70B TP 4 INT8")
        << QStringList{"--model", "llama-3.1-70b", "--tp", "4", "--kv-dtype", "int8"}
        << QStringList{"Llama-3.1-70B on 4 x H100 SXM 80GB (TP 4)",
                       "(KV per GPU of TP 4; requests per replica)",
                       "KV/token per GPU   per request per GPU   you can run per replica",
                       "KV per token                      model        165 KiB (168,960 B)",
                       "KV per token                      per GPU      41.25 KiB (42,240 B)"};
    // A request's KV per replica counts every copy: MLA under TP 8 keeps the whole latent on
    // each GPU (the model's 68.62 KiB per token, 2.14 GiB at 32K), so the replica holds eight.
    QTest::addRow("DeepSeek-V3 TP 8: MLA copies per replica")
        << QStringList{"--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--context", "32K"}
        << QStringList{"KV per token                      model        68.62 KiB (70,272 B)",
                       "KV per request @32,768            per replica  17.16 GiB "
                       "(18,421,383,168 B)",
                       "KV per request @32,768            per GPU      2.14 GiB (2,302,672,896 B)"};
    // The other engines' tables say their scopes too, in the same columns.
    QTest::addRow("SGLang TP 2")
        << QStringList{"--model", "qwen3-32b", "--engine",  "sglang",
                       "--tp",    "2",         "--context", "16K"}
        << QStringList{"  KV pool                           per GPU      35.03 GiB",
                       "  Tokens in the pool                per replica  286,945\n",
                       "  KV per token                      per GPU      128 KiB (131,072 B)",
                       "  Requests of 16,384 you can run    per replica  17\n"};
    QTest::addRow("DP 2 adds the cluster")
        << QStringList{"--model", "llama-3.1-8b", "--dp", "2"}
        << QStringList{"on 2 x H100 SXM 80GB (TP 1 x DP 2)", "you can run     cluster",
                       "tokens/s in the cluster (DP 2"};
    // Item 1: where vLLM refuses to start, no figure quotes a request that runs: the decode
    // estimate is none, and the ladder's current step is 0 as the headline is.
    QTest::addRow("Gemma-3-27B 128K refused")
        << QStringList{"--model", "gemma-3-27b", "--context", "131072"}
        << QStringList{"per replica  0 (vLLM refuses to start; see below)",
                       "Decode (estimate): none, no request runs (see below)",
                       "+paging 16                                       496 KiB             "
                       "10.48 GiB                         0"};
    // The GPUs a target needs answer memory; a layout the planner flags says why, and the
    // planner's own answer follows (the Deployment tab's).
    QTest::addRow("Llama-3.1-70B 50 users at 32K: the fewest GPUs flagged")
        << QStringList{"--model", "llama-3.1-70b",     "--context", "32K", "--tp",
                       "4",       "--target-requests", "50"}
        << QStringList{"-> 10 x H100 SXM 80GB as TP 2 x PP 5 (vLLM); 7.9 tokens/s per user, "
                       "under the floor of 10; PP 5, over 4 pipeline stages; the planner's "
                       "best: 12 as TP 2 x PP 3 x DP 2\n"};
    QTest::addRow("Qwen3-32B 32K FP8: one request")
        << QStringList{"--model", "qwen3-32b", "--context", "32768", "--kv-dtype", "fp8"}
        << QStringList{"): 1 request per replica x 32,768 tokens -> "};
}

void TestCli::scopeOnEveryFigure() {
    QFETCH(QStringList, args);
    QFETCH(QStringList, lines);
    const Run r = run(QStringList{"ledger"} + args);
    QCOMPARE(r.rc, 0);
    for (const QString& l : lines)
        QVERIFY2(r.out.contains(l), qPrintable(l + "\n" + r.out));
    // The baseline row: 640 KiB per token and 80 GiB per request per GPU at 4K (2.50 MiB and
    // 320 GiB would be the replica's).
    if (args.contains(QStringLiteral("llama-3.1-70b"))) {
        static const QRegularExpression baseline(
            QStringLiteral("Baseline: MHA-64 BF16 contiguous +640 KiB +80 GiB "));
        QVERIFY2(r.out.contains(baseline), qPrintable(r.out));
    }
    // Each row of figures (from the first to "you can run") names its scope.
    const QStringList all = r.out.split(QLatin1Char('\n'));
    const qsizetype first =
        all.indexOf(QRegularExpression(QStringLiteral("  KV per token .*"))); // whole line
    QVERIFY(first > 0);
    static const QRegularExpression scoped(
        QStringLiteral("^  \\S.{32} (model|per GPU|per replica|cluster) +\\S"));
    for (qsizetype i = first; i < all.size() && !all[i].isEmpty(); ++i)
        QVERIFY2(all[i].contains(scoped), qPrintable(all[i]));
}

// Issue 29, items 6 and 7: the best plan names its GPU; the scenario's GPU is listed first;
// a plan under the speed floor (10 tokens/s per user unless --min-tokens-per-s-per-user) or
// over PP 4 is flagged, and is not the best while a plan without a flag exists.
void TestCli::planNamesItsGpuAndFlagsSlowPlans_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QStringList>("says");
    QTest::addColumn<QString>("recommended");
    const QStringList seventy{
        "plan",          "--users",    "50",   "--context",       "32K", "--model",
        "llama-3.1-70b", "--kv-dtype", "auto", "--prefix-tokens", "0"};
    QTest::addRow("one kind names it")
        << QStringList{"plan", "--users", "4", "--model", "llama-3.1-8b"}
        << QStringList{"The best plan: 1 x H100 SXM 80GB (h100-80gb) as TP 1, the scenario's GPU"}
        << "h100-80gb";
    // The fewest GPUs are 3 x B300 at 9.4 tokens/s; the scenario's H100s need PP 5 at 7.9.
    QTest::addRow("all kinds, 70B at 32K")
        << seventy + QStringList{"--all-gpus"}
        << QStringList{"  h100-80gb               12  TP 2 x PP 3 x DP 2",
                       "or TP 2 x PP 5 (flagged: 7.9 tokens/s per user, under the floor of 10; "
                       "PP 5, over 4 pipeline stages)",
                       "The best plan: 12 x H100 SXM 80GB (h100-80gb) as TP 2 x PP 3 x DP 2, "
                       "the scenario's GPU\n"}
        << "h100-80gb";
    // B300: 3 GPUs as TP 1 x PP 3 run 9.4 tokens/s; the floor asks for 4 as TP 4.
    QTest::addRow("floor: a few more GPUs")
        << seventy + QStringList{"--gpu", "b300"}
        << QStringList{"The best plan: 4 x B300", "or TP 1 x PP 3 (flagged: 9.4 tokens/s"}
        << "b300";
    QTest::addRow("no floor: the fewest GPUs")
        << seventy + QStringList{"--gpu", "b300", "--min-tokens-per-s-per-user", "0"}
        << QStringList{"The best plan: 3 x B300 SXM 288GB (b300) as TP 1 x PP 3"} << "b300";
    // Kinds named side by side are candidates: the last --gpu is the scenario's GPU only
    // because the options hold one, and is not preferred (the L40S, named last, was
    // recommended over the B200 for that alone).
    QTest::addRow("several kinds: none preferred")
        << seventy + QStringList{"--gpu", "b200", "--gpu", "l40s"}
        << QStringList{"The best plan: 4 x B200 180GB (b200) as TP 4\n"} << "b200";
    QTest::addRow("one kind named twice: the scenario's")
        << seventy + QStringList{"--gpu", "l40s", "--gpu", "l40s"}
        << QStringList{"The best plan: 32 x L40S 48GB (l40s) as TP 8 x DP 4, the scenario's GPU"}
        << "l40s";
    QTest::addRow("only flagged plans: said")
        << seventy + QStringList{"--gpu", "l4", "--max-gpus", "36"}
        << QStringList{"The best plan: 36 x L4 24GB (l4) as TP 4 x PP 9, the scenario's GPU\n  "
                       "(flagged: 1.4 "
                       "tokens/s per user, under the floor of 10; PP 9, over 4 pipeline "
                       "stages; no plan tried avoids that)"}
        << "l4";
}

void TestCli::planNamesItsGpuAndFlagsSlowPlans() {
    QFETCH(QStringList, args);
    QFETCH(QStringList, says);
    QFETCH(QString, recommended);
    const Run r = run(args);
    QCOMPARE(r.rc, 0);
    for (const QString& s : says)
        QVERIFY2(r.out.contains(s), qPrintable(s + "\n" + r.out));
    const Run j = run(args + QStringList{"--json"});
    const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
    QCOMPARE(o.value("recommended_gpu").toString(), recommended);
    // The scenario's GPU (h100-80gb by default) leads the list whenever it was planned.
    const QJsonArray plans = o.value("plans").toArray();
    if (args.contains(QStringLiteral("--all-gpus")))
        QCOMPARE(plans.first().toObject().value("gpu").toString(), QStringLiteral("h100-80gb"));
    for (const auto& p : plans) {
        const QJsonObject po = p.toObject();
        if (!po.value("fits").toBool())
            continue;
        const bool slow = po.value("tokens_per_s_per_user").toDouble() <
                              o.value("min_tokens_per_s_per_user").toDouble() ||
                          po.value("pp").toInt() > 4;
        QCOMPARE(po.value("flag").isString(), slow);
    }
    const Run bad = run({"plan", "--users", "4", "--min-tokens-per-s-per-user", "fast"});
    QCOMPARE(bad.rc, 2);
    QVERIFY(bad.err.contains(QLatin1String("--min-tokens-per-s-per-user: expected a number")));
}

QTEST_APPLESS_MAIN(TestCli)
#include "tst_cli.moc"

// Issue 29, item 3: under a hybrid model's ladder, why KV/token x context is not the request's
// figure and why "+paging" lowers vLLM's concurrency; nothing of the kind for a dense model.
void TestCli::hybridLadderExplained_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<bool>("hybrid");
    QTest::addRow("gemma-3-27b fp8 128K")
        << QStringList{"--model", "gemma-3-27b", "--kv-dtype", "fp8", "--context", "128K"} << true;
    QTest::addRow("gpt-oss-120b h200")
        << QStringList{"--model", "gpt-oss-120b", "--gpu", "h200", "--context", "128K"} << true;
    QTest::addRow("llama-3.1-8b (dense)")
        << QStringList{"--model", "llama-3.1-8b", "--context", "128K"} << false;
}

void TestCli::hybridLadderExplained() {
    QFETCH(QStringList, args);
    QFETCH(bool, hybrid);
    const Run r = run(QStringList{"ledger"} + args);
    QVERIFY2(r.rc == 0, qPrintable(r.err));
    const qsizetype ladder = r.out.indexOf(QStringLiteral("Lever ladder"));
    QVERIFY(ladder >= 0);
    const QString after = r.out.mid(ladder).simplified(); // the notes wrap at 100 columns
    QCOMPARE(after.contains(QStringLiteral("Hybrid model: ")), hybrid);
    QCOMPARE(after.contains(QStringLiteral("is not what a request holds")), hybrid);
    QCOMPARE(after.contains(QStringLiteral("SlidingWindowSpec.max_memory_usage_bytes")), hybrid);
    QCOMPARE(after.contains(QStringLiteral("Why \"+paging")), hybrid);
}

// Issue 29, item 12: the default scenario assumes no shared prefix, and says so in the
// headline; --prefix-tokens puts one back and the headline names it.
void TestCli::defaultHasNoSharedPrefix() {
    const QJsonObject o = ledgerJson({});
    QCOMPARE(o.value("prefix_tokens").toInteger(), qint64(0));
    const Run plain = run({"ledger"});
    QVERIFY2(plain.out.section('\n', 0, 3).contains(QStringLiteral(", no shared prefix\n")),
             qPrintable(plain.out));
    const Run shared = run({"ledger", "--prefix-tokens", "2K"});
    QVERIFY2(shared.out.section('\n', 0, 3).contains(QStringLiteral(", prefix 2,048 tokens x all")),
             qPrintable(shared.out));
    // A prefix shared by every request raises the requests that fit at 8K: Llama-3.1-8B on an
    // H100 from 52 to 69, as the README says. The default must not count on it.
    const QJsonObject with =
        ledgerJson({"--model", "llama-3.1-8b", "--context", "8K", "--prefix-tokens", "2K"});
    const QJsonObject without = ledgerJson({"--model", "llama-3.1-8b", "--context", "8K"});
    QCOMPARE(without.value("max_requests_at_context").toInteger(), qint64(52));
    QCOMPARE(with.value("max_requests_at_context").toInteger(), qint64(69));
}
