// The kvprobe executable, run as a user runs it (issue 32): `bench --jsonl` appends as its help
// says and never blocks on, truncates or replaces a FIFO, device node, socket, directory or
// link; on a full disk it keeps whole lines, says why at once and stops the bench, exit 1;
// `run --json` says "failed" at the top level when its run failed; a model the probe does not
// support is bad input, exit 2 (gpu_probe/README.md: 0 ok, 1 a run failed, 2 bad usage or
// input); real K/V (.npy) are judged by their headers (shapes, K's tokens against V's, the
// memory guard) before a byte of their data is read.

#include "../widgets/full_disk.h"
#include "../widgets/special_files.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <cerrno>
#include <cstring>

namespace {

struct Run {
    int rc = -1;
    bool finished = false;
    QString out;
    QString err;
};

Run kvprobe(const QStringList& args) {
    QProcess p;
    p.start(QStringLiteral(KVPROBE_EXE), args);
    Run r;
    // A FIFO opened for writing without a reader would block the open for ever.
    r.finished = p.waitForStarted(10000) && p.waitForFinished(90000);
    if (!r.finished) {
        p.kill();
        p.waitForFinished(5000);
    }
    r.rc = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
    r.err = QString::fromLocal8Bit(p.readAllStandardError());
    return r;
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<unreadable>");
}

// The rows of a --jsonl file after `skip` earlier lines: each line whole (ends in '\n') and
// one run document of its own.
int checkRows(const QByteArray& file, int skip) {
    if (!file.endsWith('\n'))
        return -1;
    const QList<QByteArray> lines = file.chopped(1).split('\n');
    for (qsizetype i = skip; i < lines.size(); ++i) {
        QJsonParseError error{};
        const QJsonDocument doc = QJsonDocument::fromJson(lines[i], &error);
        if (error.error != QJsonParseError::NoError ||
            doc.object().value(QStringLiteral("command")).toString() != QLatin1String("run"))
            return -1;
    }
    return int(lines.size()) - skip;
}

// A .npy file whose header claims float16 [tokens, heads, 128] but which holds only `dataBytes`
// bytes of data (zeros): shorter than its header says, so reading its data fails ("truncated
// data") and any other refusal proves the data was never read. resize() makes the file sparse.
bool writeNpyHeader(const QString& path, qint64 tokens, int heads, qint64 dataBytes) {
    QByteArray header = QStringLiteral("{'descr': '<f2', 'fortran_order': False, 'shape': (%1, "
                                       "%2, 128), }")
                            .arg(tokens)
                            .arg(heads)
                            .toLatin1();
    while ((10 + header.size() + 1) % 64 != 0)
        header += ' ';
    header += '\n';
    QByteArray bytes("\x93NUMPY\x01\x00", 8);
    bytes += char(header.size() & 0xff);
    bytes += char(header.size() >> 8);
    bytes += header;
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size() &&
           f.resize(bytes.size() + dataBytes);
}

const QStringList kBench{"bench", "--quick", "--jsonl"};
constexpr int kQuickRows = 6; // bench --quick: 3 formats x 1 context x 2 batch sizes

} // namespace

class TestKvprobe : public QObject {
    Q_OBJECT
private slots:
    void jsonlRefusesSpecialFiles_data();
    void jsonlRefusesSpecialFiles();
    void jsonlAppends();
    void jsonlOnFullDisk();
    void runStatusAtEveryLevel_data();
    void runStatusAtEveryLevel();
    void npyHeadersJudgedBeforeData_data();
    void npyHeadersJudgedBeforeData();
};

void TestKvprobe::jsonlRefusesSpecialFiles_data() {
    QTest::addColumn<QString>("kind");
    for (const QString& kind : kvl::test::specialKinds())
        QTest::addRow("%s", qPrintable(kind)) << kind;
}

void TestKvprobe::jsonlRefusesSpecialFiles() {
    // The reported case: `bench --jsonl FIFO` blocked in open(O_WRONLY|O_CREAT|O_TRUNC); a link
    // to a file had its target truncated. Refused before the bench runs, exit 2, left as it was.
    QFETCH(QString, kind);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("rows.jsonl"));
    if (const QString why = kvl::test::makeSpecial(kind, path); !why.isEmpty()) {
        if (kind.contains(QLatin1String("device")) && ::geteuid() != 0)
            QSKIP(qPrintable(why));
        QFAIL(qPrintable(why));
    }
    const QString before = kvl::test::describe(path);
    const Run r = kvprobe(kBench + QStringList{path});
    QVERIFY2(r.finished, "kvprobe did not return: it blocked on the FIFO");
    QCOMPARE(r.rc, 2);
    QCOMPARE(r.err, QStringLiteral("kvprobe: --jsonl: %1: %2\n")
                        .arg(path, kvl::test::specialReason(kind, path)));
    QVERIFY(r.out.isEmpty()); // no bench ran
    QCOMPARE(kvl::test::describe(path), before);
}

void TestKvprobe::jsonlAppends() {
    // "--jsonl FILE: append each row to FILE": it truncated FILE first.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("rows.jsonl"));
    const QByteArray earlier("{\"command\": \"run\", \"from\": \"an earlier bench\"}\n");
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.write(earlier) == earlier.size());
    }
    const Run r = kvprobe(kBench + QStringList{path});
    QVERIFY(r.finished);
    QVERIFY2(r.rc == 0, qPrintable(r.err));
    const QByteArray file = readAll(path);
    QVERIFY2(file.startsWith(earlier), file.left(200).constData());
    QCOMPARE(checkRows(file, 1), kQuickRows);
}

void TestKvprobe::jsonlOnFullDisk() {
    // A full disk left a cut-off line, ran the bench to its end and said only "a write failed".
    // Now: the OS's reason as soon as a row does not fit, the bench stopped there (the row that
    // failed is the last one run), only whole lines in the file, exit 1, and "failed" in the
    // JSON on stdout.
    kvl::test::FullDisk disk;
    if (!disk.ok())
        QSKIP(qPrintable(disk.whyNot()));
    const QByteArray earlier("{\"command\": \"run\", \"from\": \"an earlier bench\"}\n");
    QVERIFY(disk.put(QStringLiteral("rows.jsonl"), earlier));
    QVERIFY(disk.fill());
    // Room for a few rows (about 2 KB each), not for the six of bench --quick.
    const QString filler = disk.filePath(QStringLiteral("filler"));
    QVERIFY(QFile::resize(filler, QFileInfo(filler).size() - 4096));
    const QString path = disk.filePath(QStringLiteral("rows.jsonl"));
    const Run r = kvprobe({"bench", "--quick", "--json", "--jsonl", path});
    QVERIFY(r.finished);
    QCOMPARE(r.rc, 1);
    const QStringList lines = r.err.trimmed().split(QLatin1Char('\n'));
    QCOMPARE(lines.last(), QStringLiteral("kvprobe: --jsonl: %1: %2")
                               .arg(path, QString::fromLocal8Bit(std::strerror(ENOSPC))));
    const QByteArray file = readAll(path);
    QVERIFY(file.startsWith(earlier));
    const int rows = checkRows(file, 1);
    QVERIFY2(rows >= 0, "a cut-off line in the file");
    QVERIFY2(rows < kQuickRows, "every row fitted: the disk was not full");
    // Rows run ("[row k/6]" on stderr) = rows written + the one that did not fit.
    QCOMPARE(int(lines.filter(QRegularExpression(QStringLiteral("^\\[row \\d+/6\\]"))).size()),
             rows + 1);
    const QJsonObject doc = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(doc.value(QStringLiteral("status")).toString(), QStringLiteral("failed"));
    QCOMPARE(doc.value(QStringLiteral("error")).toString(), lines.last().mid(9)); // "kvprobe: "
}

void TestKvprobe::runStatusAtEveryLevel_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("rc");
    QTest::addColumn<QString>("status");
    // An MLA model: the probe measures full-attention layers only. It said "status": "ok" at the
    // top level, "failed" in its row, and exited 1.
    QTest::addRow("unsupported model")
        << QStringLiteral("deepseek-v3") << 2 << QStringLiteral("failed");
    QTest::addRow("a run that passes") << QStringLiteral("llama-3-8b") << 0 << QStringLiteral("ok");
}

void TestKvprobe::runStatusAtEveryLevel() {
    QFETCH(QString, model);
    QFETCH(int, rc);
    QFETCH(QString, status);
    const Run r = kvprobe({"run", "--model", model, "--kv-dtype", "int8", "--block-size", "16",
                           "--batch", "1", "--context", "16", "--repeats", "1", "--json"});
    QVERIFY(r.finished);
    QCOMPARE(r.rc, rc);
    const QJsonObject doc = QJsonDocument::fromJson(r.out.toUtf8()).object();
    const QJsonObject row = doc.value(QStringLiteral("results")).toArray().at(0).toObject();
    QCOMPARE(doc.value(QStringLiteral("status")).toString(), status);
    QCOMPARE(row.value(QStringLiteral("status")).toString(), status);
    QCOMPARE(doc.value(QStringLiteral("error")).toString(),
             row.value(QStringLiteral("error")).toString());
    if (rc != 0)
        QCOMPARE(
            r.err,
            QStringLiteral("kvprobe: %1\n").arg(row.value(QStringLiteral("error")).toString()));
    else
        QVERIFY(r.err.isEmpty());
}

void TestKvprobe::npyHeadersJudgedBeforeData_data() {
    QTest::addColumn<qint64>("kTokens");
    QTest::addColumn<qint64>("vTokens");
    QTest::addColumn<int>("vHeads");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("rc");
    QTest::addColumn<QString>("message"); // a regular expression for stderr's one line
    // The reported case: two 2 GiB files and a context of 1M read into 8.4 GB before the guard
    // said "needs 116.4 GB". The headers claim 2M tokens (4 GiB each); 4096 requests of 1M
    // tokens need terabytes on any machine. Had the data been read, it would be "truncated".
    QTest::addRow("memory guard before the data")
        << (qint64(1) << 21) << (qint64(1) << 21) << 8 << 4096 << 1
        << QStringLiteral("^kvprobe: needs [0-9]{5,}\\.[0-9] GB of host memory, [0-9.]+ GB "
                          "available .*\n$");
    // K/V token counts, and a shape against the layer, from the headers alone.
    QTest::addRow("K and V token counts differ")
        << qint64(1000) << qint64(999) << 8 << 1 << 2
        << QStringLiteral("^kvprobe: K and V \\.npy files hold different token counts \\(K "
                          "1000, V 999\\)\n$");
    QTest::addRow("V's heads differ from the layer's")
        << qint64(1000) << qint64(1000) << 4 << 1 << 2
        << QStringLiteral("^kvprobe: V \\.npy: shape \\[1000, 4, 128\\] does not match the layer "
                          "\\(kv_heads 8, head_dim 128\\)\n$");
    // A run that fits goes on to read the data, and the file's shortness is found there.
    QTest::addRow("a run that fits reads the data")
        << qint64(1000) << qint64(1000) << 8 << 1 << 2
        << QStringLiteral("^kvprobe: .*k\\.npy: truncated data \\(2048000 bytes declared by the "
                          "shape, 4096 present\\)\n$");
}

void TestKvprobe::npyHeadersJudgedBeforeData() {
    QFETCH(qint64, kTokens);
    QFETCH(qint64, vTokens);
    QFETCH(int, vHeads);
    QFETCH(int, batch);
    QFETCH(int, rc);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const QString k = dir.filePath(QStringLiteral("k.npy"));
    const QString v = dir.filePath(QStringLiteral("v.npy"));
    QVERIFY(writeNpyHeader(k, kTokens, 8, 4096));
    QVERIFY(writeNpyHeader(v, vTokens, vHeads, 4096));
    // llama-3-8b: 8 KV heads of 128.
    const Run r = kvprobe({"run", "--model", "llama-3-8b", "--kv-dtype", "fp16", "--block-size",
                           "16", "--batch", QString::number(batch), "--context",
                           QString::number(1 << 20), "--repeats", "1", "--k-npy", k, "--v-npy", v});
    QVERIFY(r.finished);
    QVERIFY2(QRegularExpression(message).match(r.err).hasMatch(), qPrintable(r.err));
    QCOMPARE(r.rc, rc);
}

QTEST_GUILESS_MAIN(TestKvprobe)
#include "tst_kvprobe.moc"
