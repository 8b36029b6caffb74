// Issue 28's corpus: real public vLLM startup logs in tests/vllm_logs/ (one JSON file each, with
// its source, version, flags and the lines verbatim). Every entry not marked is replayed: the
// ledger, at the log's vLLM version, with the model (its config.json, or the catalog entry of
// the same KV geometry), TP, dtype and max_model_len, given the KV memory the log printed
// ("Available KV cache memory: X GiB" is X rounded to 0.01 GiB, so every block count inside
// that rounding is tried) must print the log's "GPU KV cache size" and "Maximum concurrency"
// lines exactly, in that version's layout (two lines before 0.28, one since), and print X
// itself the way that version does ("%.2f" or format_gib). A marked entry carries the reason it
// cannot be replayed and is skipped with it.

#include "tests/cli/cli_run.h"

#include "core/vllm_version.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>

namespace {

const QString kCorpus = QStringLiteral(KVL_SOURCE_DIR "/tests/vllm_logs");

// The capacity lines of a log, without the logger's prefix: from "GPU KV cache size" or, on a
// line of its own, "Maximum concurrency for" to the end.
QStringList capacityLines(const QJsonArray& log) {
    QStringList out;
    for (const auto& v : log) {
        const QString line = v.toString();
        qsizetype at = line.indexOf(QLatin1String("GPU KV cache size: "));
        if (at < 0)
            at = line.indexOf(QLatin1String("Maximum concurrency for "));
        if (at >= 0)
            out << line.mid(at).trimmed();
    }
    return out;
}

// The ledger's arguments for the entry: model, version, layout and the flags the log shows.
QStringList ledgerArgs(const QJsonObject& e) {
    QStringList a{QStringLiteral("ledger"), QStringLiteral("--json")};
    if (const QString cfg = e[QStringLiteral("config")].toString(); !cfg.isEmpty())
        a << QStringLiteral("--config") << QStringLiteral(KVL_SOURCE_DIR "/") + cfg;
    else
        a << QStringLiteral("--model") << e[QStringLiteral("catalog_model")].toString();
    a << QStringLiteral("--vllm-version") << e[QStringLiteral("vllm_version")].toString();
    a << QStringLiteral("--max-model-len")
      << QString::number(e[QStringLiteral("concurrency_tokens")].toInteger());
    // A GPU the catalog lacks (a Jetson Thor, an RTX 3060) replays on an H200: Hopper like the
    // default H100, so the same attention backend, and with the memory to hold any KV pool
    // these logs print (the Thor's 85.79 GiB of unified memory); a fixed KV memory must be at
    // most the GPU's (issue 32), and vLLM's figures below do not depend on the rest.
    const QString gpu = e[QStringLiteral("gpu")].toString();
    a << QStringLiteral("--gpu") << (gpu.isEmpty() ? QStringLiteral("h200") : gpu);
    const QJsonObject f = e[QStringLiteral("flags")].toObject();
    auto flag = [&](const char* key, const char* option) {
        const QJsonValue v = f[QLatin1String(key)];
        if (v.isDouble())
            a << QLatin1String(option) << QString::number(v.toInteger());
    };
    flag("tensor_parallel_size", "--tp");
    flag("pipeline_parallel_size", "--pp");
    flag("block_size", "--block-size");
    flag("max_num_batched_tokens", "--max-num-batched-tokens");
    flag("max_num_seqs", "--max-num-seqs");
    const QString dtype = f[QStringLiteral("kv_cache_dtype")].toString();
    if (!dtype.isEmpty() && dtype != QLatin1String("auto"))
        a << QStringLiteral("--kv-dtype")
          << (dtype == QLatin1String("fp8_e4m3") ? QStringLiteral("fp8") : dtype);
    if (f[QStringLiteral("disable_hybrid_kv_cache_manager")].toBool())
        a << QStringLiteral("--disable-hybrid-kv-cache-manager");
    for (const auto& x : e[QStringLiteral("extra_args")].toArray())
        a << x.toString();
    return a;
}

QJsonObject ledger(QStringList args, qint64 kvBytes, QString* error) {
    args << QStringLiteral("--kv-memory-bytes") << QString::number(kvBytes);
    const auto r = kvl::test::run(args);
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    if (o.isEmpty())
        *error = QStringLiteral("exit %1: %2").arg(r.rc).arg(r.err.trimmed());
    return o;
}

QStringList strings(const QJsonValue& v) {
    QStringList out;
    for (const auto& x : v.toArray())
        out << x.toString();
    return out;
}

} // namespace

class TestVllmLogs : public QObject {
    Q_OBJECT
private slots:
    void corpusIsWhatTheIssueAsks();
    void replay_data();
    void replay();
};

// At least 30 logs from 12 model families, 15 of them hybrid, MLA or Mamba models, and every
// entry with a source, a version and its reason when marked.
void TestVllmLogs::corpusIsWhatTheIssueAsks() {
    const QStringList files = QDir(kCorpus).entryList({QStringLiteral("*.json")}, QDir::Files);
    QVERIFY2(files.size() >= 30, qPrintable(QString::number(files.size())));
    QSet<QString> families;
    int replayed = 0;
    for (const auto& name : files) {
        QFile f(kCorpus + u'/' + name);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QJsonParseError err{};
        const QJsonObject e = QJsonDocument::fromJson(f.readAll(), &err).object();
        QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(name));
        // A URL, or the public file the search index stored where it names no repository.
        QVERIFY2(e[QStringLiteral("source")].toString().size() > 10, qPrintable(name));
        QVERIFY2(!e[QStringLiteral("vllm_version")].toString().isEmpty(), qPrintable(name));
        QVERIFY2(!e[QStringLiteral("version_evidence")].toString().isEmpty(), qPrintable(name));
        families.insert(name.section(u'-', 0, 0));
        replayed += e[QStringLiteral("marked")].isNull();
    }
    QVERIFY2(families.size() >= 12, qPrintable(QStringList(families.values()).join(u' ')));
    QVERIFY2(replayed >= 16, qPrintable(QString::number(replayed)));
}

void TestVllmLogs::replay_data() {
    QTest::addColumn<QJsonObject>("entry");
    const QStringList files = QDir(kCorpus).entryList({QStringLiteral("*.json")}, QDir::Files);
    for (const auto& name : files) {
        QFile f(kCorpus + u'/' + name);
        if (!f.open(QIODevice::ReadOnly))
            continue;
        QTest::newRow(qPrintable(name)) << QJsonDocument::fromJson(f.readAll()).object();
    }
}

void TestVllmLogs::replay() {
    QFETCH(QJsonObject, entry);
    if (const QString why = entry[QStringLiteral("marked")].toString(); !why.isEmpty())
        QSKIP(qPrintable(QStringLiteral("marked: ") + why));
    const QString available = entry[QStringLiteral("available_kv_gib")].toString();
    QVERIFY2(!available.isEmpty(), "an entry replayed needs its 'Available KV cache memory'");
    QVERIFY2(entry[QStringLiteral("config")].isString() ||
                 entry[QStringLiteral("catalog_model")].isString(),
             "an entry replayed needs its config.json or a catalog model");
    const qint64 wantTokens = entry[QStringLiteral("gpu_kv_cache_tokens")].toInteger();
    const QString wantConcurrency = entry[QStringLiteral("max_concurrency")].toString();
    // Where the source quoted the figures rather than the lines, only the figures count.
    const QStringList wantLines = entry[QStringLiteral("lines_verbatim")].toBool(true)
                                      ? capacityLines(entry[QStringLiteral("log")].toArray())
                                      : QStringList();

    // The version's own print of the available memory: parse X, print it back.
    const auto version =
        kvl::core::parseVllmVersion(entry[QStringLiteral("vllm_version")].toString().toStdString());
    QVERIFY(version);
    const double x = available.toDouble();
    const qint64 gib = qint64(1) << 30;
    QCOMPARE(QString::fromStdString(kvl::core::formatAvailableKvGib(
                 kvl::core::vllmRules(version.value()), qint64(std::llround(x * double(gib))))),
             available);

    // Every block count whose bytes print as X.
    const QStringList args = ledgerArgs(entry);
    QString error;
    const QJsonObject first = ledger(args, qint64((x - 0.005) * double(gib)), &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY2(first[QStringLiteral("error")].toString().isEmpty() ||
                 first[QStringLiteral("num_gpu_blocks")].toInteger() > 0,
             qPrintable(first[QStringLiteral("error")].toString()));
    const qint64 perBlock = first[QStringLiteral("bytes_per_block")].toInteger();
    QVERIFY(perBlock > 0);
    const qint64 lo = qint64((x - 0.005) * double(gib)) / perBlock;
    const qint64 hi = qint64((x + 0.005) * double(gib)) / perBlock;
    QVERIFY(hi - lo < 100000);
    QStringList tried;
    for (qint64 n = lo; n <= hi; ++n) {
        const QJsonObject o = ledger(args, n * perBlock, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(o[QStringLiteral("num_gpu_blocks")].toInteger(), n);
        const qint64 tokens = o[QStringLiteral("gpu_kv_cache_tokens")].toInteger();
        const QString concurrency =
            QString::number(o[QStringLiteral("max_concurrency")].toDouble(), 'f', 2);
        if (tokens != wantTokens || concurrency != wantConcurrency) {
            if (tried.size() < 4)
                tried << QStringLiteral("%1 blocks: %2 tokens, %3x")
                             .arg(n)
                             .arg(tokens)
                             .arg(concurrency);
            continue;
        }
        // The lines themselves, in the version's layout, where the log kept them verbatim.
        if (!wantLines.isEmpty())
            QCOMPARE(strings(o[QStringLiteral("vllm_log_lines")]), wantLines);
        return;
    }
    QFAIL(qPrintable(QStringLiteral("no block count in [%1, %2] prints %3 tokens, %4x; got %5")
                         .arg(lo)
                         .arg(hi)
                         .arg(wantTokens)
                         .arg(wantConcurrency)
                         .arg(tried.join(QLatin1String("; ")))));
}

QTEST_GUILESS_MAIN(TestVllmLogs)
#include "tst_vllm_logs.moc"
