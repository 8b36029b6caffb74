// Issue 27's "the refactor changes no number": every catalog model under three scenarios
// (vLLM's defaults on an H100; an H200 at 32K with FP8 KV; an A100 at 128K with TP 4 and no
// shared prefix) must give the ledger JSON stored in tests/cli/data/catalog-ledger.jsonl,
// written by the build before the refactor (tests/cli/data/make-catalog-ledger.py). Every value
// stored there must come out the same; fields added since are allowed, a changed, missing or
// retyped value fails with its JSON path.

#include "tests/cli/cli_run.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

namespace {

// The first path where `got` differs from `want` (keys only in `got` are ignored), or empty.
QString firstDifference(const QJsonValue& want, const QJsonValue& got, const QString& path) {
    if (want.type() != got.type())
        return path + QStringLiteral(" (type)");
    if (want.isObject()) {
        const QJsonObject w = want.toObject(), g = got.toObject();
        for (auto it = w.begin(); it != w.end(); ++it) {
            if (!g.contains(it.key()))
                return path + QLatin1Char('.') + it.key() + QStringLiteral(" (missing)");
            if (auto d = firstDifference(it.value(), g.value(it.key()),
                                         path + QLatin1Char('.') + it.key());
                !d.isEmpty())
                return d;
        }
        return {};
    }
    if (want.isArray()) {
        const QJsonArray w = want.toArray(), g = got.toArray();
        if (w.size() != g.size())
            return path + QStringLiteral(" (length %1, want %2)").arg(g.size()).arg(w.size());
        for (qsizetype i = 0; i < w.size(); ++i)
            if (auto d = firstDifference(w[i], g[i], path + QStringLiteral("[%1]").arg(i));
                !d.isEmpty())
                return d;
        return {};
    }
    if (want != got)
        return path + QStringLiteral(": want %1, got %2")
                          .arg(QString::fromUtf8(
                                   QJsonDocument(QJsonArray{want}).toJson(QJsonDocument::Compact)),
                               QString::fromUtf8(
                                   QJsonDocument(QJsonArray{got}).toJson(QJsonDocument::Compact)));
    return {};
}

} // namespace

class TestCatalogLedger : public QObject {
    Q_OBJECT
private slots:
    void sameNumbers_data();
    void sameNumbers();
    void differenceIsFound();
};

void TestCatalogLedger::sameNumbers_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QJsonObject>("want");
    QFile f(QStringLiteral(KVL_SOURCE_DIR "/tests/cli/data/catalog-ledger.jsonl"));
    QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(f.fileName()));
    int rows = 0;
    while (!f.atEnd()) {
        const QByteArray line = f.readLine().trimmed();
        if (line.isEmpty())
            continue;
        const QJsonObject rec = QJsonDocument::fromJson(line).object();
        QStringList args{QStringLiteral("ledger"), QStringLiteral("--model"),
                         rec[QStringLiteral("model")].toString(), QStringLiteral("--json")};
        for (const auto& a : rec[QStringLiteral("args")].toArray())
            args << a.toString();
        const QString name = rec[QStringLiteral("model")].toString() + u' ' +
                             rec[QStringLiteral("scenario")].toString();
        QTest::newRow(qPrintable(name)) << args << rec[QStringLiteral("exit")].toInt()
                                        << rec[QStringLiteral("json")].toObject();
        ++rows;
    }
    // 50 catalog models x 3 scenarios when the fixture was written.
    QVERIFY(rows >= 150);
}

void TestCatalogLedger::sameNumbers() {
    QFETCH(QStringList, args);
    QFETCH(int, exitCode);
    QFETCH(QJsonObject, want);
    const auto r = kvl::test::run(args);
    // Issue 29 (items 5 and 11) made two of the fixture's scenarios one-line errors (exit 2)
    // instead of a result with a warning at its end: a context beyond max_model_len, and a
    // layout vLLM refuses. Those rows must now be exactly those refusals; the rest keep every
    // number.
    bool layoutRefused = false;
    for (const auto& w : want.value(QStringLiteral("warnings")).toArray())
        layoutRefused = layoutRefused ||
                        w.toString().contains(QLatin1String("would refuse this tensor parallel")) ||
                        w.toString().contains(QLatin1String("cannot be split"));
    const bool contextRefused = want.value(QStringLiteral("context")).toInteger() >
                                want.value(QStringLiteral("max_model_len")).toInteger();
    if (exitCode == 0 && (layoutRefused || contextRefused)) {
        QCOMPARE(r.rc, 2);
        // A refused layout still answers --json: {"valid": false, "error": ...}; a context
        // beyond max_model_len is bad input, with nothing on stdout.
        if (layoutRefused)
            QCOMPARE(QJsonDocument::fromJson(r.out.toUtf8()).object().value("valid"),
                     QJsonValue(false));
        else
            QVERIFY(r.out.isEmpty());
        // The layout is checked first.
        QVERIFY2(r.err.contains(layoutRefused ? QLatin1String("--tp: layout TP ")
                                              : QLatin1String("--context: ")),
                 qPrintable(r.err));
        QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
        return;
    }
    QCOMPARE(r.rc, exitCode);
    const QJsonObject got = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QVERIFY2(!got.isEmpty(), qPrintable(r.err));
    // Where vLLM refuses to start, no request runs, and the JSON no longer quotes a decode
    // speed for one (the table has said "none" since issue 29): concurrency 0 and the speed
    // fields null. Every other number stays.
    QJsonObject expected = want;
    if (want.value(QStringLiteral("vllm_refused")).toBool()) {
        expected[QStringLiteral("concurrency")] = 0;
        for (const char* k : {"decode_step_ms", "tokens_per_s_per_user", "cluster_tokens_per_s",
                              "ttft_ms_estimate", "regime"})
            expected[QLatin1String(k)] = QJsonValue(QJsonValue::Null);
    }
    const QString diff = firstDifference(expected, got, QStringLiteral("$"));
    QVERIFY2(diff.isEmpty(), qPrintable(diff));
}

void TestCatalogLedger::differenceIsFound() {
    // The comparison itself: a changed number, a missing key and a shorter array are found;
    // a key added since is not a difference.
    const auto doc = [](const char* json) {
        return QJsonValue(QJsonDocument::fromJson(QByteArray(json)).object());
    };
    QCOMPARE(firstDifference(doc(R"({"a":1,"b":[1,2]})"), doc(R"({"a":1,"b":[1,2],"c":3})"),
                             QStringLiteral("$")),
             QString());
    QCOMPARE(firstDifference(doc(R"({"a":1})"), doc(R"({"a":2})"), QStringLiteral("$")),
             QStringLiteral("$.a: want [1], got [2]"));
    QCOMPARE(firstDifference(doc(R"({"a":1})"), doc(R"({"b":1})"), QStringLiteral("$")),
             QStringLiteral("$.a (missing)"));
    QCOMPARE(firstDifference(doc(R"({"b":[1,2]})"), doc(R"({"b":[1]})"), QStringLiteral("$")),
             QStringLiteral("$.b (length 1, want 2)"));
}

QTEST_GUILESS_MAIN(TestCatalogLedger)
#include "tst_catalog_ledger.moc"
