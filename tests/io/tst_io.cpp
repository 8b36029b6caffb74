// Tests for kvl_io: JSON parsing on nlohmann-json and its limits, the typed-field layer, the
// built-in catalogs (and the generated table kvprobe uses), HuggingFace config.json import and
// scenario files. Expected figures come from the models' published config.json files
// (fixtures in tests/io/data) and vLLM's KV-cache accounting.

#include "core/io/catalog.h"
#include "core/io/json.h"
#include "core/io/json_fields.h"
#include "core/io/model_table.h"
#include "core/io/scenario_file.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>

#include <charconv>
#include <set>
#include <sys/resource.h>

using namespace kvl;

namespace {

QString dataDir() {
    return QStringLiteral(KVL_SOURCE_DIR "/tests/io/data");
}

std::string dataPath(const char* name) {
    return (dataDir() + QLatin1Char('/') + QLatin1String(name)).toStdString();
}

// FP16 KV bytes per token, written out independently of core (vLLM's per-layer KV page,
// vllm/v1/kv_cache_interface.py: a K and a V vector per KV head; MLA one latent per token):
// full/sliding layers 2 * kv_heads * head_dim * 2, MLA layers (kv_lora_rank + rope) * 2.
qint64 fp16BytesPerToken(const core::ModelSpec& m) {
    qint64 total = 0;
    for (const auto& l : m.layers) {
        if (l.kind == core::LayerKind::Mla)
            total += qint64(m.kvLoraRank + m.qkRopeHeadDim) * 2;
        else
            total += 2 * qint64(m.kvHeads) * m.headDim * 2;
    }
    return total;
}

int count(const core::ModelSpec& m, core::LayerKind kind) {
    int n = 0;
    for (const auto& l : m.layers)
        n += l.kind == kind;
    return n;
}

template <class T> QString errorOf(const Result<T>& r) {
    return r ? QString() : QString::fromStdString(r.error().message);
}

bool sameModel(const core::ModelSpec& a, const core::ModelSpec& b) {
    return a.id == b.id && a.name == b.name && a.family == b.family && a.layers == b.layers &&
           a.qHeads == b.qHeads && a.kvHeads == b.kvHeads && a.headDim == b.headDim &&
           a.kvLoraRank == b.kvLoraRank && a.qkRopeHeadDim == b.qkRopeHeadDim &&
           a.params == b.params && a.weightDtype == b.weightDtype &&
           a.nativeKvDtype == b.nativeKvDtype && a.maxContext == b.maxContext &&
           a.hiddenSize == b.hiddenSize && a.notes == b.notes;
}

const core::ModelSpec& model(const char* id) {
    const core::ModelSpec* m = io::findModel(id);
    if (!m)
        qFatal("model %s missing from the catalog", id);
    return *m;
}

// One valid catalog entry with `field` replaced by the raw JSON `value` (removed when empty).
QByteArray catalogEntry(const char* field = "", const QByteArray& value = {}) {
    QJsonObject o = QJsonDocument::fromJson(R"({"id": "x", "name": "X", "family": "F",
        "hf_repo": "a/b", "num_layers": 32, "num_q_heads": 32, "num_kv_heads": 8,
        "head_dim": 128, "hidden_size": 4096, "params": 8000000000, "weight_dtype": "bf16",
        "kv_dtype": "bf16", "max_context": 8192})")
                        .object();
    o.remove(QLatin1String(field));
    QByteArray entry = QJsonDocument(o).toJson(QJsonDocument::Compact);
    if (*field && !value.isEmpty())
        entry.insert(entry.size() - 1, ",\"" + QByteArray(field) + "\":" + value);
    return entry;
}

QByteArray catalogOf(const QByteArray& entries) {
    return R"({"version": 1, "models": [)" + entries + "]}";
}

QByteArray catalogWith(const char* field, const QByteArray& value) {
    return catalogOf(catalogEntry(field, value));
}

constexpr const char* kLlamaConfig = R"({
  "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 8192,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "torch_dtype": "bfloat16", "vocab_size": 128256,
  "tie_word_embeddings": false})";

// kLlamaConfig with one field replaced (value empty: removed).
QByteArray llamaWith(const char* field, const QByteArray& value) {
    QJsonObject o = QJsonDocument::fromJson(kLlamaConfig).object();
    o.remove(QLatin1String(field));
    QByteArray text = QJsonDocument(o).toJson(QJsonDocument::Compact);
    if (!value.isEmpty())
        text.insert(text.size() - 1, ",\"" + QByteArray(field) + "\":" + value);
    return text;
}

} // namespace

class TstIo : public QObject {
    Q_OBJECT

private slots:
    // --- JSON ------------------------------------------------------------------------------
    void jsonValid_data();
    void jsonValid();
    void jsonInvalid_data();
    void jsonInvalid();
    void jsonErrorPosition();
    void jsonDepthLimit();
    void jsonSizeLimit();
    void jsonValueLimit();
    void jsonIntegers_data();
    void jsonIntegers();
    void jsonDoubleRoundTrip_data();
    void jsonDoubleRoundTrip();
    void jsonPrettyRoundTrip();
    void jsonFieldPaths();
    void jsonMutationSmoke();

    // --- catalogs ----------------------------------------------------------------------------
    void builtinCatalogs();
    void catalogMatchesJsonFields_data();
    void catalogMatchesJsonFields();
    void referenceFigures_data();
    void referenceFigures();
    void layerPatterns_data();
    void layerPatterns();
    void gpuFigures();
    void catalogErrors_data();
    void catalogErrors();
    void gpuCatalogErrors_data();
    void gpuCatalogErrors();

    // --- HF config.json import ---------------------------------------------------------------
    void hfImport_data();
    void hfImport();
    void hfImportVariants_data();
    void hfImportVariants();
    void hfImportErrors_data();
    void hfImportErrors();
    void hfLoadFileErrors();
    void hfRepo_data();
    void hfRepo();

    // --- scenario files ----------------------------------------------------------------------
    void defaultScenario();
    void scenarioRoundTrip_data();
    void scenarioRoundTrip();
    void scenarioErrors_data();
    void scenarioErrors();
    void scenarioIgnoresUnknownFields();

    // --- the generated table kvprobe uses ----------------------------------------------------
    void modelTableMatchesCatalog();
};

// --- JSON ------------------------------------------------------------------------------------

void TstIo::jsonValid_data() {
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QByteArray>("compact"); // nlohmann's compact dump of what was read
    QTest::addRow("empty object") << QByteArray("{}") << QByteArray("{}");
    QTest::addRow("empty array") << QByteArray(" [ ] ") << QByteArray("[]");
    QTest::addRow("literals") << QByteArray("[true,false,null]") << QByteArray("[true,false,null]");
    QTest::addRow("numbers") << QByteArray("[0, -0, 1, -1, 2.5, 1e3, 1E+2, 2.50e-1]")
                             << QByteArray("[0,0,1,-1,2.5,1000.0,100.0,0.25]");
    QTest::addRow("int64 max") << QByteArray("9223372036854775807")
                               << QByteArray("9223372036854775807");
    QTest::addRow("int64 min") << QByteArray("-9223372036854775808")
                               << QByteArray("-9223372036854775808");
    QTest::addRow("2^53+1 exact") << QByteArray("9007199254740993")
                                  << QByteArray("9007199254740993");
    QTest::addRow("beyond uint64 is a double")
        << QByteArray("18446744073709551616") << QByteArray("1.8446744073709552e+19");
    QTest::addRow("large double, shortest form") << QByteArray("1.0e300") << QByteArray("1e+300");
    QTest::addRow("underflow reads as 0") << QByteArray("1e-400") << QByteArray("0.0");
    QTest::addRow("escapes") << QByteArray(R"("a\"b\\c\/d\b\f\n\r\t")")
                             << QByteArray(R"("a\"b\\c/d\b\f\n\r\t")");
    QTest::addRow("u escape 2-byte") << QByteArray(R"("\u00e9")") << QByteArray("\"\xC3\xA9\"");
    QTest::addRow("u escape 3-byte") << QByteArray(R"("\u20AC")") << QByteArray("\"\xE2\x82\xAC\"");
    QTest::addRow("surrogate pair")
        << QByteArray(R"("\ud83d\ude00")") << QByteArray("\"\xF0\x9F\x98\x80\"");
    QTest::addRow("u0000 kept") << QByteArray(R"("a\u0000b")") << QByteArray(R"("a\u0000b")");
    QTest::addRow("raw utf-8") << QByteArray("\"h\xC3\xA9llo \xF0\x9F\x98\x80\"")
                               << QByteArray("\"h\xC3\xA9llo \xF0\x9F\x98\x80\"");
    QTest::addRow("nested, keys sorted") << QByteArray(R"({"b": [1, {"a": null}], "a": "x"})")
                                         << QByteArray(R"({"a":"x","b":[1,{"a":null}]})");
    QTest::addRow("whitespace") << QByteArray(" \t\r\n{ \"a\" : 1 }\n") << QByteArray(R"({"a":1})");
    QTest::addRow("byte order mark") << QByteArray("\xEF\xBB\xBF[1]") << QByteArray("[1]");
}

void TstIo::jsonValid() {
    QFETCH(QByteArray, input);
    QFETCH(QByteArray, compact);
    const auto r =
        io::parseJson(std::string_view(input.constData(), size_t(input.size())), "t.json");
    if (!r)
        QFAIL(r.error().message.c_str());
    QCOMPARE(QByteArray::fromStdString(io::dumpJson(r.value(), -1)), compact);
}

void TstIo::jsonInvalid_data() {
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("expected"); // the explanation after "line L, column C: "
    QTest::addRow("empty") << QByteArray("") << "unexpected end of input";
    QTest::addRow("blank") << QByteArray(" \n ") << "unexpected end of input";
    QTest::addRow("truncated object") << QByteArray("{\"a\": 1") << "end of input; expected '}'";
    QTest::addRow("truncated array") << QByteArray("[1, 2") << "end of input; expected ']'";
    QTest::addRow("truncated string") << QByteArray("\"abc") << "missing closing quote";
    QTest::addRow("trailing comma array") << QByteArray("[1,]") << "unexpected ']'";
    QTest::addRow("trailing comma object") << QByteArray("{\"a\":1,}") << "unexpected '}'";
    QTest::addRow("trailing garbage") << QByteArray("[1] x") << "expected end of input";
    QTest::addRow("two values") << QByteArray("1 2") << "expected end of input";
    QTest::addRow("NaN") << QByteArray("NaN") << "invalid literal";
    QTest::addRow("Infinity") << QByteArray("[Infinity]") << "invalid literal";
    QTest::addRow("-Infinity") << QByteArray("-Infinity") << "expected digit after '-'";
    QTest::addRow("leading zero") << QByteArray("01") << "expected end of input";
    QTest::addRow("bare dot") << QByteArray("1.") << "expected digit after '.'";
    QTest::addRow("dot first") << QByteArray(".5") << "invalid literal";
    QTest::addRow("plus sign") << QByteArray("+1") << "invalid literal";
    QTest::addRow("empty exponent") << QByteArray("1e") << "digit after exponent";
    QTest::addRow("minus alone") << QByteArray("-") << "expected digit after '-'";
    QTest::addRow("overflow") << QByteArray("1e400") << "number overflow";
    QTest::addRow("lone high surrogate")
        << QByteArray(R"("\ud800")") << "surrogate U+D800..U+DBFF must be followed by";
    QTest::addRow("lone low surrogate")
        << QByteArray(R"("\udc00")") << "surrogate U+DC00..U+DFFF must follow";
    QTest::addRow("high + non-low")
        << QByteArray(R"("\ud800\u0041")") << "surrogate U+D800..U+DBFF must be followed by";
    QTest::addRow("bad hex") << QByteArray(R"("\u12G4")") << "followed by 4 hex digits";
    QTest::addRow("short u escape") << QByteArray(R"("\u12")") << "followed by 4 hex digits";
    QTest::addRow("bad escape") << QByteArray(R"("\x41")") << "forbidden character after backslash";
    QTest::addRow("raw control char") << QByteArray("\"a\x01\"") << "control character U+0001";
    QTest::addRow("raw newline in string") << QByteArray("\"a\nb\"") << "control character U+000A";
    QTest::addRow("invalid utf-8") << QByteArray("\"\xFF\"") << "ill-formed UTF-8";
    QTest::addRow("overlong utf-8") << QByteArray("\"\xC0\xAF\"") << "ill-formed UTF-8";
    QTest::addRow("utf-8 surrogate") << QByteArray("\"\xED\xA0\x80\"") << "ill-formed UTF-8";
    QTest::addRow("truncated utf-8") << QByteArray("\"\xE2\x82") << "ill-formed UTF-8";
    QTest::addRow("single quotes") << QByteArray("'a'") << "invalid literal";
    QTest::addRow("bad literal") << QByteArray("tru") << "invalid literal";
    QTest::addRow("True") << QByteArray("True") << "invalid literal";
    QTest::addRow("missing colon") << QByteArray("{\"a\" 1}") << "expected ':'";
    QTest::addRow("unquoted key") << QByteArray("{a: 1}") << "parsing object key";
    QTest::addRow("missing comma") << QByteArray("[1 2]") << "expected ']'";
    QTest::addRow("duplicate key")
        << QByteArray("{\"a\":1,\"a\":2}") << "duplicate member name \"a\"";
    QTest::addRow("comment") << QByteArray("[1] // no") << "expected end of input";
    QTest::addRow("nul byte") << QByteArray("[1]\0", 4) << "NUL byte";
}

void TstIo::jsonInvalid() {
    QFETCH(QByteArray, input);
    QFETCH(QString, expected);
    const auto r =
        io::parseJson(std::string_view(input.constData(), size_t(input.size())), "t.json");
    QVERIFY2(!r, "parsed although invalid");
    QCOMPARE(r.error().code, ErrorCode::BadFile);
    const QString message = QString::fromStdString(r.error().message);
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY2(message.contains(QRegularExpression(QStringLiteral(
                 "^t\\.json: not valid JSON: line [1-9][0-9]*, column [1-9][0-9]*: "))),
             qPrintable(message));
    QVERIFY(!message.contains(QLatin1Char('\n')));
}

void TstIo::jsonErrorPosition() {
    // nlohmann's byte position (20) as line and column; the input is not echoed back.
    const auto r = io::parseJson("{\n  \"a\": 1,\n  \"b\": ,\n}", "t.json");
    QVERIFY(!r);
    const std::string& m = r.error().message;
    QVERIFY2(m.rfind("t.json: not valid JSON: line 3, column 8: syntax error", 0) == 0, m.c_str());
    QVERIFY2(m.find("last read") == std::string::npos, m.c_str());
    // A position past a long line and a limit error name the place too.
    const auto dup = io::parseJson("{\"a\": 1,\n \"b\": 2,\n \"a\": 3}", "t.json");
    QVERIFY(!dup);
    QCOMPARE(dup.error().message,
             std::string("t.json: not valid JSON: line 3, column 4: duplicate member name \"a\""));
}

void TstIo::jsonDepthLimit() {
    const auto nest = [](int depth) {
        return std::string(size_t(depth), '[') + std::string(size_t(depth), ']');
    };
    QVERIFY(io::parseJson(nest(256), "t.json"));
    const auto deep = io::parseJson(nest(257), "t.json");
    QVERIFY(!deep);
    QVERIFY2(deep.error().message.find("nesting deeper than 256 levels") != std::string::npos,
             deep.error().message.c_str());
    // Far deeper than the limit must still fail cleanly, not overflow the stack.
    std::string objects;
    for (int k = 0; k < 100000; ++k)
        objects += "{\"a\":";
    QVERIFY(!io::parseJson(objects, "t.json"));
}

void TstIo::jsonSizeLimit() {
    std::string big(size_t(64) << 20, ' ');
    big[0] = '1';
    QVERIFY(io::parseJson(big, "t.json")); // exactly 64 MiB is fine
    big.push_back(' ');
    const auto r = io::parseJson(big, "t.json");
    QVERIFY(!r);
    QCOMPARE(r.error().message, std::string("t.json: is larger than 64 MiB (67108865 bytes)"));
}

// Issue 15: a 64 MiB array of zeros took 1.39 GB of memory and 11 s. Now parsing stops at the
// value limit, having built only the first 2^20 values.
void TstIo::jsonValueLimit() {
    // Exactly the limit is read: the array and 2^20 - 1 zeros.
    std::string atLimit = "[";
    for (std::size_t k = 1; k < io::kMaxJsonValues; ++k)
        atLimit += k == 1 ? "0" : ",0";
    atLimit += "]";
    const auto fits = io::parseJson(atLimit, "t.json");
    QVERIFY2(fits, fits ? "" : fits.error().message.c_str());
    QCOMPARE(fits->size(), io::kMaxJsonValues - 1);

    std::string zeros(io::kMaxJsonBytes, '0');
    zeros.front() = '[';
    for (std::size_t k = 2; k + 1 < zeros.size(); k += 2)
        zeros[k] = ',';
    zeros.back() = ']';
    rusage before{};
    getrusage(RUSAGE_SELF, &before);
    const auto r = io::parseJson(zeros, "zeros.json");
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    QVERIFY(!r);
    QCOMPARE(r.error().code, ErrorCode::BadFile);
    QVERIFY2(r.error().message.rfind("zeros.json: not valid JSON: line 1, column ", 0) == 0,
             r.error().message.c_str());
    QVERIFY2(r.error().message.find(
                 ": more than 1048576 values (the limit for a file KV Ledger reads)") !=
                 std::string::npos,
             r.error().message.c_str());
    // The peak resident set grew by far less than the 1.4 GB of a full parse (ru_maxrss: KiB).
    const long grewKiB = after.ru_maxrss - before.ru_maxrss;
    QVERIFY2(grewKiB < 256 * 1024, qPrintable(QString::number(grewKiB)));
}

// Integers stay exact int64; fractions and numbers out of range are refused where an integer
// is expected (the field layer every reader uses).
void TstIo::jsonIntegers_data() {
    QTest::addColumn<QByteArray>("value");
    QTest::addColumn<qint64>("expected");
    QTest::addColumn<QString>("error"); // empty: read as `expected`
    QTest::addRow("8030261248") << QByteArray("8030261248") << qint64(8030261248) << "";
    QTest::addRow("2^53+1 exact") << QByteArray("9007199254740993") << qint64(9007199254740993)
                                  << "";
    QTest::addRow("int64 min") << QByteArray("-9223372036854775808")
                               << std::numeric_limits<qint64>::min() << "";
    QTest::addRow("int64 max") << QByteArray("9223372036854775807")
                               << std::numeric_limits<qint64>::max() << "";
    QTest::addRow("1.0 has no fraction") << QByteArray("1.0") << qint64(1) << "";
    QTest::addRow("1e3") << QByteArray("1e3") << qint64(1000) << "";
    QTest::addRow("fraction") << QByteArray("1.5") << qint64(0)
                              << "t.json: v: expected an integer, got 1.5";
    QTest::addRow("1e300 beyond int64")
        << QByteArray("1e300") << qint64(0)
        << "t.json: v: must be between -9223372036854775808 and 9223372036854775807, got 1e+300";
    QTest::addRow("2^63 beyond int64")
        << QByteArray("9223372036854775808") << qint64(0)
        << "t.json: v: must be between -9223372036854775808 and 9223372036854775807, got "
           "9223372036854775808";
    QTest::addRow("string") << QByteArray("\"5\"") << qint64(0)
                            << "t.json: v: expected an integer, got string \"5\"";
    QTest::addRow("null") << QByteArray("null") << qint64(0)
                          << "t.json: v: expected an integer, got null";
    QTest::addRow("array") << QByteArray("[5]") << qint64(0)
                           << "t.json: v: expected an integer, got an array";
}

void TstIo::jsonIntegers() {
    QFETCH(QByteArray, value);
    QFETCH(qint64, expected);
    QFETCH(QString, error);
    const std::string text = "{\"v\": " + value.toStdString() + "}";
    const auto r = io::readDocument<std::int64_t>(text, "t.json", [](const io::Field& top) {
        return top["v"].integer(std::numeric_limits<std::int64_t>::min(),
                                std::numeric_limits<std::int64_t>::max());
    });
    if (error.isEmpty()) {
        QVERIFY2(r, r ? "" : r.error().message.c_str());
        QCOMPARE(qint64(r.value()), expected);
    } else {
        QVERIFY(!r);
        QCOMPARE(QString::fromStdString(r.error().message), error);
        QCOMPARE(r.error().code, ErrorCode::BadFile);
    }
}

// The files KV Ledger writes (scenario files, kvledger --json) are nlohmann's dump: doubles in
// the shortest form that reads back bit for bit.
void TstIo::jsonDoubleRoundTrip_data() {
    QTest::addColumn<double>("value");
    QTest::addRow("0.1") << 0.1;
    QTest::addRow("0.9") << 0.9;
    QTest::addRow("1/3") << 1.0 / 3.0;
    QTest::addRow("pi") << 3.141592653589793;
    QTest::addRow("1e-300") << 1e-300;
    QTest::addRow("denormal min") << 5e-324;
    QTest::addRow("max") << std::numeric_limits<double>::max();
    QTest::addRow("-2.5e17") << -2.5e17;
    QTest::addRow("4.76 GiB") << 4.76 * 1073741824.0;
}

void TstIo::jsonDoubleRoundTrip() {
    QFETCH(double, value);
    const std::string text = io::dumpJson(nlohmann::json(value), -1);
    const auto back = io::parseJson(text, "t.json");
    QVERIFY2(back, text.c_str());
    QVERIFY2(back->get<double>() == value, text.c_str()); // bit-exact (QCOMPARE is fuzzy)
    QVERIFY(text.size() <= 24);                           // shortest form, not %.17g noise
    QCOMPARE(io::dumpJson(nlohmann::json(std::nan("")), -1), std::string("null"));
    // formatNumber (numbers in messages) is the same shortest round-trip form.
    const std::string shortest = io::formatNumber(value);
    double parsed = 0;
    std::from_chars(shortest.data(), shortest.data() + shortest.size(), parsed);
    QVERIFY2(parsed == value, shortest.c_str());
    QVERIFY(shortest.size() <= 24);
}

void TstIo::jsonPrettyRoundTrip() {
    const std::string src = R"({"a":[1,2,{"b":"c\n\u0001"}],"d":{},"e":[],"f":-0.5,"g":"\u00e9"})";
    const nlohmann::json doc = io::parseJson(src, "t.json").value();
    const std::string pretty = io::dumpJson(doc, 4);
    QVERIFY(pretty.find("\n    \"a\": [") != std::string::npos);
    const nlohmann::json again = io::parseJson(pretty, "t.json").value();
    QCOMPARE(io::dumpJson(again, -1), io::dumpJson(doc, -1));
    QCOMPARE(io::dumpJson(doc, -1),
             std::string(R"({"a":[1,2,{"b":"c\n\u0001"}],"d":{},"e":[],"f":-0.5,"g":"é"})"));
    // Invalid UTF-8 in a string KV Ledger writes is replaced, not thrown.
    QCOMPARE(io::dumpJson(nlohmann::json(std::string("a\xFF")), -1),
             std::string("\"a\xEF\xBF\xBD\""));
}

// Paths in messages: members joined with '.', elements as [i]; absent and null members.
void TstIo::jsonFieldPaths() {
    const std::string text =
        R"({"a": {"b": [{"c": 1}, {"c": "x"}, {"c": null}]}, "n": null, "s": 5})";
    const auto doc = io::parseJson(text, "p.json");
    QVERIFY(doc);
    const io::Field top(doc.value(), "p.json");
    const io::Field list = top["a"]["b"];
    QCOMPARE(list.path(), std::string("a.b"));
    QCOMPARE(list.size(), std::size_t(3));
    QCOMPARE(list.at(0)["c"].integer(1, 1), std::int64_t(1));
    const auto message = [](auto&& read) {
        try {
            read();
        } catch (const io::FieldError& e) {
            return e.error.message;
        }
        return std::string("(no error)");
    };
    QCOMPARE(message([&] { (void)list.at(1)["c"].integer(0, 9); }),
             std::string("p.json: a.b[1].c: expected an integer, got string \"x\""));
    QCOMPARE(message([&] { (void)list.at(0)["c"].integer(2, 9); }),
             std::string("p.json: a.b[0].c: must be between 2 and 9, got 1"));
    QCOMPARE(message([&] { (void)list.at(2)["c"].integer(0, 9); }),
             std::string("p.json: a.b[2].c: expected an integer, got null"));
    QVERIFY(!list.at(2)["c"].optInteger(0, 9)); // null is "not given" for optional reads
    QCOMPARE(message([&] { (void)top["missing"]["deeper"].string(); }),
             std::string("p.json: missing.deeper: missing"));
    QCOMPARE(message([&] { (void)top["s"]["x"]; }),
             std::string("p.json: s: expected an object, got 5"));
    QCOMPARE(message([&] { (void)top["a"].size(); }),
             std::string("p.json: a: expected an array, got an object"));
    QCOMPARE(message([&] {
                 top["s"].failOneOf({"x", "y"});
             }),
             std::string("p.json: s: must be one of x, y, got 5"));
    QCOMPARE(message([&] { (void)top["s"].numberAbove(5, 10); }),
             std::string("p.json: s: must be above 5 and at most 10, got 5"));
    QVERIFY(top["n"].exists() && !top["n"].present() && !top["zz"].exists());
    // A long string is cut in the message, which stays one line.
    const auto longDoc = io::parseJson(R"({"k": ")" + std::string(100, 'x') + "\\n\"}", "p.json");
    QVERIFY(longDoc);
    const std::string m =
        message([&] { (void)io::Field(longDoc.value(), "p.json")["k"].integer(0, 1); });
    QCOMPARE(m, "p.json: k: expected an integer, got string \"" + std::string(37, 'x') + "...\"");
}

// Smoke test (no assertions on values): random byte mutations of a real config must never
// crash, hang or throw. The libFuzzer target does this at scale.
void TstIo::jsonMutationSmoke() {

    QFile f(QString::fromStdString(dataPath("deepseek-v3.json")));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray base = f.readAll();
    QRandomGenerator rng(20251129);
    const char alphabet[] = "{}[]\",:\\u0123456789eE+-.tfnl \n\xC3\xED\xF0\xFF";
    for (int round = 0; round < 3000; ++round) {
        QByteArray doc = base;
        const int edits = 1 + int(rng.bounded(8));
        for (int k = 0; k < edits; ++k) {
            const int at = int(rng.bounded(doc.size()));
            switch (rng.bounded(3)) {
            case 0:
                doc[at] = alphabet[rng.bounded(int(sizeof alphabet) - 1)];
                break;
            case 1:
                doc.remove(at, 1 + int(rng.bounded(16)));
                break;
            default:
                doc.insert(at, alphabet[rng.bounded(int(sizeof alphabet) - 1)]);
            }
        }
        const std::string_view text(doc.constData(), size_t(doc.size()));
        (void)io::parseJson(text, "fuzz.json");
        (void)io::parseHfConfig(text, "fuzz.json");
        (void)io::parseModelCatalog(text, "fuzz.json");
        (void)io::scenarioFromJson(text, "fuzz.json");
    }
}

// --- catalogs --------------------------------------------------------------------------------

void TstIo::builtinCatalogs() {
    const auto& models = io::builtinModels();
    const auto& gpus = io::builtinGpus();
    QVERIFY(models.size() >= 20);
    QVERIFY(gpus.size() >= 12);
    std::set<std::string> ids;
    for (const auto& m : models) {
        QVERIFY2(ids.insert(m.id).second, m.id.c_str());
        QCOMPARE(QString::fromStdString(m.id), QString::fromStdString(m.id).toLower());
        QVERIFY2(!m.validate(), m.id.c_str());
        QVERIFY(!m.name.empty() && !m.family.empty());
        QVERIFY2(m.params > 0, m.id.c_str());
    }
    ids.clear();
    for (const auto& g : gpus) {
        QVERIFY2(ids.insert(g.id).second, g.id.c_str());
        QCOMPARE(QString::fromStdString(g.id), QString::fromStdString(g.id).toLower());
        QVERIFY(g.memoryBytes > 0 && g.bandwidthGBs > 0);
    }
    // Lookups are case-insensitive and return the catalog's own objects.
    QCOMPARE(io::findModel("LLAMA-3-8B"), &model("llama-3-8b"));
    QVERIFY(io::findModel("Llama-3.1-405B") != nullptr);
    QVERIFY(io::findModel("llama-3-8") == nullptr);
    QVERIFY(io::findModel("") == nullptr);
    QVERIFY(io::findGpu("H100-80GB") != nullptr);
    QVERIFY(io::findGpu("h100") == nullptr);
    // The embedded text equals resources/ (the build re-embeds on change).
    QFile f(QStringLiteral(KVL_SOURCE_DIR "/resources/models.json"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    const auto fromFile = io::parseModelCatalog(
        std::string_view(text.constData(), size_t(text.size())), "models.json");
    QVERIFY2(errorOf(fromFile).isEmpty(), qPrintable(errorOf(fromFile)));
    QCOMPARE(fromFile.value().size(), models.size());
}

// Every catalog model against its own JSON fields, read with Qt's parser (independent of
// ours): FP16 bytes/token = 2 * layers * kv_heads * head_dim * 2 (MLA: layers * latent * 2).
void TstIo::catalogMatchesJsonFields_data() {
    QTest::addColumn<QJsonObject>("entry");
    QFile f(QStringLiteral(KVL_SOURCE_DIR "/resources/models.json"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject top = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(top.value(QStringLiteral("version")).toInt(), 1);
    for (const auto v : top.value(QStringLiteral("models")).toArray())
        QTest::addRow("%s", qPrintable(v.toObject().value(QStringLiteral("id")).toString()))
            << v.toObject();
}

void TstIo::catalogMatchesJsonFields() {
    QFETCH(QJsonObject, entry);
    const auto field = [&](const char* k) {
        return qint64(entry.value(QLatin1String(k)).toDouble());
    };
    const core::ModelSpec& m = model(qPrintable(entry.value(QStringLiteral("id")).toString()));
    const qint64 layers = field("num_layers");
    QCOMPARE(qint64(m.numLayers()), layers);
    QCOMPARE(qint64(m.qHeads), field("num_q_heads"));
    QCOMPARE(qint64(m.kvHeads), field("num_kv_heads"));
    QCOMPARE(qint64(m.headDim), field("head_dim"));
    QCOMPARE(m.params, field("params"));
    QCOMPARE(m.maxContext, field("max_context"));
    QCOMPARE(m.hiddenSize, field("hidden_size"));
    const qint64 expected = entry.contains(QStringLiteral("kv_lora_rank"))
                                ? layers * (field("kv_lora_rank") + field("qk_rope_head_dim")) * 2
                                : 2 * layers * field("num_kv_heads") * field("head_dim") * 2;
    QCOMPARE(fp16BytesPerToken(m), expected);
    if (entry.contains(QStringLiteral("sliding_window")))
        QCOMPARE(m.slidingWindow(), field("sliding_window"));
}

void TstIo::referenceFigures_data() {
    QTest::addColumn<QString>("id");
    QTest::addColumn<int>("layers");
    QTest::addColumn<int>("qHeads");
    QTest::addColumn<int>("kvHeads");
    QTest::addColumn<int>("headDim");
    QTest::addColumn<qint64>("maxContext");
    QTest::addColumn<qint64>("bytesPerToken"); // FP16, all layers
    // Head geometry from each model's config.json on the Hugging Face Hub.
    QTest::addRow("llama-2-7b") << "llama-2-7b" << 32 << 32 << 32 << 128 << qint64(4096)
                                << qint64(524288);
    QTest::addRow("llama-2-70b") << "llama-2-70b" << 80 << 64 << 8 << 128 << qint64(4096)
                                 << qint64(327680);
    QTest::addRow("llama-3-8b") << "llama-3-8b" << 32 << 32 << 8 << 128 << qint64(8192)
                                << qint64(131072);
    QTest::addRow("llama-3.1-8b") << "llama-3.1-8b" << 32 << 32 << 8 << 128 << qint64(131072)
                                  << qint64(131072);
    QTest::addRow("llama-3-70b") << "llama-3-70b" << 80 << 64 << 8 << 128 << qint64(8192)
                                 << qint64(327680);
    QTest::addRow("mistral-7b-v0.1")
        << "mistral-7b-v0.1" << 32 << 32 << 8 << 128 << qint64(32768) << qint64(131072);
    QTest::addRow("mixtral-8x7b") << "mixtral-8x7b" << 32 << 32 << 8 << 128 << qint64(32768)
                                  << qint64(131072);
    QTest::addRow("qwen2.5-72b") << "qwen2.5-72b" << 80 << 64 << 8 << 128 << qint64(131072)
                                 << qint64(327680);
    QTest::addRow("gemma-2-27b") << "gemma-2-27b" << 46 << 32 << 16 << 128 << qint64(8192)
                                 << qint64(376832);
    QTest::addRow("phi-3-mini-4k")
        << "phi-3-mini-4k" << 32 << 32 << 32 << 96 << qint64(4096) << qint64(393216);
    QTest::addRow("gpt-oss-120b") << "gpt-oss-120b" << 36 << 64 << 8 << 64 << qint64(131072)
                                  << qint64(73728);
    // From the models' config.json files.
    QTest::addRow("llama-2-13b") << "llama-2-13b" << 40 << 40 << 40 << 128 << qint64(4096)
                                 << qint64(819200);
    QTest::addRow("llama-3.1-405b")
        << "llama-3.1-405b" << 126 << 128 << 8 << 128 << qint64(131072) << qint64(516096);
    QTest::addRow("qwen2.5-7b") << "qwen2.5-7b" << 28 << 28 << 4 << 128 << qint64(131072)
                                << qint64(57344);
    QTest::addRow("qwen3-8b") << "qwen3-8b" << 36 << 32 << 8 << 128 << qint64(40960)
                              << qint64(147456);
    QTest::addRow("qwen3-30b-a3b")
        << "qwen3-30b-a3b" << 48 << 32 << 4 << 128 << qint64(40960) << qint64(98304);
    QTest::addRow("qwen3-235b-a22b")
        << "qwen3-235b-a22b" << 94 << 64 << 4 << 128 << qint64(40960) << qint64(192512);
    QTest::addRow("gemma-2-9b") << "gemma-2-9b" << 42 << 16 << 8 << 256 << qint64(8192)
                                << qint64(344064);
    QTest::addRow("gemma-3-27b") << "gemma-3-27b" << 62 << 32 << 16 << 128 << qint64(131072)
                                 << qint64(507904);
    QTest::addRow("falcon-7b") << "falcon-7b" << 32 << 71 << 1 << 64 << qint64(2048)
                               << qint64(8192);
    QTest::addRow("falcon-40b") << "falcon-40b" << 60 << 128 << 8 << 64 << qint64(2048)
                                << qint64(122880);
    QTest::addRow("deepseek-v2") << "deepseek-v2" << 60 << 128 << 128 << 192 << qint64(163840)
                                 << qint64(60 * 576 * 2);
    QTest::addRow("deepseek-v3") << "deepseek-v3" << 61 << 128 << 128 << 192 << qint64(163840)
                                 << qint64(70272);
    QTest::addRow("gpt-oss-20b") << "gpt-oss-20b" << 24 << 64 << 8 << 64 << qint64(131072)
                                 << qint64(49152);
    QTest::addRow("hypothetical-70b-mha")
        << "hypothetical-70b-mha" << 80 << 64 << 64 << 128 << qint64(8192) << qint64(2621440);
}

void TstIo::referenceFigures() {
    QFETCH(QString, id);
    QFETCH(int, layers);
    QFETCH(int, qHeads);
    QFETCH(int, kvHeads);
    QFETCH(int, headDim);
    QFETCH(qint64, maxContext);
    QFETCH(qint64, bytesPerToken);
    const core::ModelSpec& m = model(qPrintable(id));
    QCOMPARE(m.numLayers(), layers);
    QCOMPARE(m.qHeads, qHeads);
    QCOMPARE(m.kvHeads, kvHeads);
    QCOMPARE(m.headDim, headDim);
    QCOMPARE(m.maxContext, maxContext);
    QCOMPARE(fp16BytesPerToken(m), bytesPerToken);
}

void TstIo::layerPatterns_data() {
    QTest::addColumn<QString>("id");
    QTest::addColumn<int>("sliding");
    QTest::addColumn<int>("mla");
    QTest::addColumn<qint64>("window");
    QTest::addColumn<bool>("firstSliding");
    QTest::addRow("mistral all sliding") << "mistral-7b-v0.1" << 32 << 0 << qint64(4096) << true;
    QTest::addRow("mixtral none") << "mixtral-8x7b" << 0 << 0 << qint64(0) << false;
    QTest::addRow("gemma-2-9b even layers") << "gemma-2-9b" << 21 << 0 << qint64(4096) << true;
    QTest::addRow("gemma-2-27b even layers") << "gemma-2-27b" << 23 << 0 << qint64(4096) << true;
    QTest::addRow("gemma-3-27b 5:1") << "gemma-3-27b" << 52 << 0 << qint64(1024) << true;
    QTest::addRow("gpt-oss-20b alternate") << "gpt-oss-20b" << 12 << 0 << qint64(128) << true;
    QTest::addRow("gpt-oss-120b alternate") << "gpt-oss-120b" << 18 << 0 << qint64(128) << true;
    QTest::addRow("deepseek-v2 all mla") << "deepseek-v2" << 0 << 60 << qint64(0) << false;
    QTest::addRow("deepseek-v3 all mla") << "deepseek-v3" << 0 << 61 << qint64(0) << false;
    QTest::addRow("phi-3-mini-4k sliding 2047")
        << "phi-3-mini-4k" << 32 << 0 << qint64(2047) << true;
    QTest::addRow("llama-3-8b full") << "llama-3-8b" << 0 << 0 << qint64(0) << false;
    QTest::addRow("qwen2.5-7b full") << "qwen2.5-7b" << 0 << 0 << qint64(0) << false;
}

void TstIo::layerPatterns() {
    QFETCH(QString, id);
    QFETCH(int, sliding);
    QFETCH(int, mla);
    QFETCH(qint64, window);
    QFETCH(bool, firstSliding);
    const core::ModelSpec& m = model(qPrintable(id));
    QCOMPARE(count(m, core::LayerKind::Sliding), sliding);
    QCOMPARE(count(m, core::LayerKind::Mla), mla);
    QCOMPARE(m.slidingWindow(), window);
    QCOMPARE(m.layers.front().kind == core::LayerKind::Sliding, firstSliding);
    for (const auto& l : m.layers)
        QCOMPARE(l.window, l.kind == core::LayerKind::Sliding ? window : qint64(0));
    if (id == QLatin1String("gemma-3-27b")) {
        for (int i = 0; i < m.numLayers(); ++i)
            QCOMPARE(m.layers[size_t(i)].kind == core::LayerKind::Full, (i + 1) % 6 == 0);
    }
    if (m.isMla()) {
        QCOMPARE(m.kvLoraRank, 512);
        QCOMPARE(m.qkRopeHeadDim, 64);
    }
}

void TstIo::gpuFigures() {
    const core::GpuSpec* h100 = io::findGpu("h100-80gb");
    QVERIFY(h100);
    QCOMPARE(h100->memoryBytes, qint64(85017821184));
    // vLLM's default gpu_memory_utilization 0.9 of an H100's 79.18 GiB: the 71.26 GiB it logs.
    QCOMPARE(qRound64(0.9 * double(h100->memoryBytes) / double(core::kGiB) * 100), qint64(7126));
    const core::GpuSpec* h200 = io::findGpu("h200");
    QVERIFY(h200);
    QCOMPARE(h200->bandwidthGBs, 4800.0);
    QVERIFY(h200->memoryBytes > 140 * core::kGB && h200->memoryBytes < 141 * core::kGiB);
    for (const char* id :
         {"a100-40gb", "a100-80gb", "h100-pcie-80gb", "h100-nvl-94gb", "b200", "l40s", "l4", "a10g",
          "rtx-4090", "rtx-6000-ada", "rtx-a6000", "mi300x", "mi325x"})
        QVERIFY2(io::findGpu(id), id);
}

void TstIo::catalogErrors_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("expected");
    QTest::addRow("negative kv heads")
        << catalogWith("num_kv_heads", "-1")
        << "models.json: models[0].num_kv_heads: must be between 1 and 4096, got -1";
    QTest::addRow("zero q heads") << catalogWith("num_q_heads", "0")
                                  << "models[0].num_q_heads: must be between 1 and 4096, got 0";
    QTest::addRow("absurd layers")
        << catalogWith("num_layers", "5000") << "num_layers: must be between 1 and 4096, got 5000";
    QTest::addRow("string head_dim") << catalogWith("head_dim", "\"128\"")
                                     << "head_dim: expected an integer, got string \"128\"";
    QTest::addRow("fractional params")
        << catalogWith("params", "1.5") << "params: expected an integer, got 1.5";
    QTest::addRow("missing name") << catalogWith("name", "") << "models[0].name: missing";
    QTest::addRow("missing max_context")
        << catalogWith("max_context", "") << "max_context: missing";
    QTest::addRow("bad weight dtype")
        << catalogWith("weight_dtype", "\"fp12\"")
        << "weight_dtype: must be one of fp32, fp16, bf16, fp8, int8, int4, got string \"fp12\"";
    QTest::addRow("bad kv dtype") << catalogWith("kv_dtype", "\"auto\"") << "kv_dtype";
    QTest::addRow("q not divisible by kv") << catalogWith("num_kv_heads", "5") << "not divisible";
    QTest::addRow("bad pattern entry")
        << catalogWith("layer_pattern", "[\"full\", \"local\"]")
        << "layer_pattern[1]: must be one of full, sliding, mla, got string \"local\"";
    QTest::addRow("empty pattern")
        << catalogWith("layer_pattern", "[]") << "layer_pattern: must be a non-empty array";
    QTest::addRow("sliding without window")
        << catalogWith("layer_pattern", "[\"sliding\", \"full\"]")
        << "sliding_window: missing (layer_pattern has sliding layers)";
    QTest::addRow("zero window") << catalogWith("sliding_window", "0")
                                 << "sliding_window: must be between 1 and 1000000000, got 0";
    QTest::addRow("mla without rope")
        << catalogWith("kv_lora_rank", "512") << "qk_rope_head_dim: missing";
    QTest::addRow("notes not a string")
        << catalogWith("notes", "5") << "notes: expected a string, got 5";
    QTest::addRow("upper-case id")
        << catalogWith("id", "\"X\"") << "models.json: models[0].id: must be lower case";
    QTest::addRow("duplicate id") << catalogOf(catalogEntry() + "," + catalogEntry())
                                  << "models.json: models[1].id: \"x\" is used twice";
    QTest::addRow("valid control row")
        << catalogOf(catalogEntry() + "," + catalogEntry("id", "\"y\"")) << "";
    QTest::addRow("entry not object") << QByteArray(R"({"version":1,"models":[5]})")
                                      << "models.json: models[0]: expected an object, got 5";
    QTest::addRow("newer version")
        << QByteArray(R"({"version":2,"models":[]})")
        << "models.json: version: catalog version 2 was written for a newer KV Ledger";
    QTest::addRow("no version") << QByteArray(R"({"models":[]})")
                                << "models.json: version: missing";
    QTest::addRow("models not array") << QByteArray(R"({"version":1,"models":{}})")
                                      << "models.json: models: expected an array, got an object";
    QTest::addRow("no models") << QByteArray(R"({"version":1,"models":[]})")
                               << "models.json: models: must not be empty";
    QTest::addRow("top-level array")
        << QByteArray("[]") << "models.json: expected an object at the top level, got an array";
    QTest::addRow("empty file") << QByteArray("") << "models.json: empty file";
    QTest::addRow("truncated") << catalogOf(catalogEntry()).chopped(5)
                               << "models.json: not valid JSON: line 1, column ";
}

void TstIo::catalogErrors() {
    QFETCH(QByteArray, json);
    QFETCH(QString, expected);
    const auto r = io::parseModelCatalog(std::string_view(json.constData(), size_t(json.size())),
                                         "models.json");
    const QString message = errorOf(r);
    if (expected.isEmpty()) { // the fixture itself is valid, so each bad row fails for its field
        QVERIFY2(message.isEmpty(), qPrintable(message));
        QCOMPARE(r.value().size(), size_t(2));
        QCOMPARE(fp16BytesPerToken(r.value()[1]), qint64(131072));
        return;
    }
    QVERIFY2(!message.isEmpty(), "accepted a bad catalog");
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY(message.startsWith(QStringLiteral("models.json: ")));
    QVERIFY(!message.contains(QLatin1Char('\n')));
}

void TstIo::gpuCatalogErrors_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("expected");
    const QByteArray ok =
        R"({"id":"g","name":"G","vendor":"V","memory_bytes":1000,"bandwidth_gbs":100.5,"memory_type":"HBM3"})";
    const auto with = [&](const QByteArray& from, const QByteArray& to) {
        return R"({"version":1,"gpus":[)" + QByteArray(ok).replace(from, to) + "]}";
    };
    QTest::addRow("zero memory")
        << with("\"memory_bytes\":1000", "\"memory_bytes\":0")
        << "gpus.json: gpus[0].memory_bytes: must be between 1 and 1125899906842624, got 0";
    QTest::addRow("string bandwidth")
        << with("100.5", "\"fast\"") << "bandwidth_gbs: expected a number, got string \"fast\"";
    QTest::addRow("negative bandwidth")
        << with("100.5", "-3") << "bandwidth_gbs: must be above 0 and at most 1e+07, got -3";
    QTest::addRow("missing memory type")
        << with(",\"memory_type\":\"HBM3\"", "") << "gpus[0].memory_type: missing";
    QTest::addRow("absurd memory")
        << with("1000", "1125899906842625")
        << "memory_bytes: must be between 1 and 1125899906842624, got 1125899906842625";
}

void TstIo::gpuCatalogErrors() {
    QFETCH(QByteArray, json);
    QFETCH(QString, expected);
    const auto r =
        io::parseGpuCatalog(std::string_view(json.constData(), size_t(json.size())), "gpus.json");
    const QString message = errorOf(r);
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY(message.startsWith(QStringLiteral("gpus.json: ")));
}

// --- HF config.json import -------------------------------------------------------------------

void TstIo::hfImport_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("id");
    QTest::addColumn<int>("layers");
    QTest::addColumn<int>("qHeads");
    QTest::addColumn<int>("kvHeads");
    QTest::addColumn<int>("headDim");
    QTest::addColumn<int>("sliding");
    QTest::addColumn<qint64>("window");
    QTest::addColumn<int>("mla");
    QTest::addColumn<qint64>("maxContext");
    QTest::addColumn<int>("kvDtype");
    QTest::addColumn<int>("weightDtype");
    QTest::addColumn<qint64>("params");        // estimate: embeddings + attention + MLP
    QTest::addColumn<qint64>("bytesPerToken"); // FP16
    using core::KvDtype;
    using core::WeightDtype;
    QTest::addRow("llama-3-8b (folder name)")
        << "Meta-Llama-3-8B/config.json"
        << "meta-llama-3-8b" << 32 << 32 << 8 << 128 << 0 << qint64(0) << 0 << qint64(8192)
        << int(KvDtype::Bf16) << int(WeightDtype::Bf16) << qint64(8029995008) << qint64(131072);
    QTest::addRow("gemma-2-9b head_dim 256")
        << "gemma-2-9b.json"
        << "gemma-2-9b" << 42 << 16 << 8 << 256 << 21 << qint64(4096) << 0 << qint64(8192)
        << int(KvDtype::Bf16) << int(WeightDtype::Bf16) << qint64(9241100288) << qint64(344064);
    QTest::addRow("falcon-7b multi_query")
        << "falcon-7b.json"
        << "falcon-7b" << 32 << 71 << 1 << 64 << 0 << qint64(0) << 0 << qint64(2048)
        << int(KvDtype::Bf16) << int(WeightDtype::Bf16) << qint64(6921420800) << qint64(8192);
    QTest::addRow("falcon-40b new_decoder_architecture")
        << "falcon-40b.json"
        << "falcon-40b" << 60 << 128 << 8 << 64 << 0 << qint64(0) << 0 << qint64(2048)
        << int(KvDtype::Bf16) << int(WeightDtype::Bf16) << qint64(41301311488) << qint64(122880);
    QTest::addRow("qwen2-7b use_sliding_window false")
        << "qwen2-7b.json"
        << "qwen2-7b" << 28 << 28 << 4 << 128 << 0 << qint64(0) << 0 << qint64(131072)
        << int(KvDtype::Bf16) << int(WeightDtype::Bf16) << qint64(7615283200) << qint64(57344);
    QTest::addRow("mistral sliding all layers")
        << "mistral-7b-v0.1.json"
        << "mistral-7b-v0.1" << 32 << 32 << 8 << 128 << 32 << qint64(4096) << 0 << qint64(32768)
        << int(KvDtype::Bf16) << int(WeightDtype::Bf16) << qint64(7241465856) << qint64(131072);
    QTest::addRow("gemma-3 text_config 5:1")
        << "gemma-3-27b-it.json"
        << "gemma-3-27b-it" << 62 << 32 << 16 << 128 << 52 << qint64(1024) << 0 << qint64(131072)
        << int(KvDtype::Bf16) << int(WeightDtype::Bf16) << qint64(27007991808) << qint64(507904);
    QTest::addRow("deepseek-v3 mla")
        << "deepseek-v3.json"
        << "deepseek-v3" << 61 << 128 << 128 << 192 << 0 << qint64(0) << 61 << qint64(163840)
        << int(KvDtype::Bf16) << int(WeightDtype::Fp8) << qint64(671025397760) << qint64(70272);
    QTest::addRow("gpt-oss-20b layer_types")
        << "gpt-oss-20b.json"
        << "gpt-oss-20b" << 24 << 64 << 8 << 64 << 12 << qint64(128) << 0 << qint64(131072)
        << int(KvDtype::Bf16) << int(WeightDtype::Int4) << qint64(20907786240) << qint64(49152);
}

void TstIo::hfImport() {
    QFETCH(QString, file);
    QFETCH(QString, id);
    QFETCH(int, layers);
    QFETCH(int, qHeads);
    QFETCH(int, kvHeads);
    QFETCH(int, headDim);
    QFETCH(int, sliding);
    QFETCH(qint64, window);
    QFETCH(int, mla);
    QFETCH(qint64, maxContext);
    QFETCH(int, kvDtype);
    QFETCH(int, weightDtype);
    QFETCH(qint64, params);
    QFETCH(qint64, bytesPerToken);
    const auto r = io::loadHfConfigFile(dataPath(qPrintable(file)));
    QVERIFY2(errorOf(r).isEmpty(), qPrintable(errorOf(r)));
    const core::ModelSpec& m = r.value();
    QCOMPARE(QString::fromStdString(m.id), id);
    QCOMPARE(m.numLayers(), layers);
    QCOMPARE(m.qHeads, qHeads);
    QCOMPARE(m.kvHeads, kvHeads);
    QCOMPARE(m.headDim, headDim);
    QCOMPARE(count(m, core::LayerKind::Sliding), sliding);
    QCOMPARE(m.slidingWindow(), window);
    QCOMPARE(count(m, core::LayerKind::Mla), mla);
    QCOMPARE(m.maxContext, maxContext);
    QCOMPARE(int(m.nativeKvDtype), kvDtype);
    QCOMPARE(int(m.weightDtype), weightDtype);
    QCOMPARE(m.params, params);
    QVERIFY2(m.notes.find("estimate") != std::string::npos, m.notes.c_str());
    QCOMPARE(fp16BytesPerToken(m), bytesPerToken);
    QVERIFY(!m.validate());
    // The import agrees with the catalog entry of the same model on everything KV-relevant.
    const core::ModelSpec* cat =
        io::findModel(id == QLatin1String("meta-llama-3-8b")  ? "llama-3-8b"
                      : id == QLatin1String("gemma-3-27b-it") ? "gemma-3-27b"
                                                              : qPrintable(id));
    if (cat) {
        QCOMPARE(m.layers, cat->layers);
        QCOMPARE(m.kvHeads, cat->kvHeads);
        QCOMPARE(m.headDim, cat->headDim);
        QCOMPARE(m.maxContext, cat->maxContext);
        QCOMPARE(int(m.nativeKvDtype), int(cat->nativeKvDtype));
    }
    // Gemma-2: even layers slide (HF Gemma2: layer_idx % 2 == 0); gpt-oss starts sliding too.
    if (sliding > 0 && sliding * 2 == layers)
        for (int i = 0; i < layers; ++i)
            QCOMPARE(m.layers[size_t(i)].kind == core::LayerKind::Sliding, i % 2 == 0);
}

void TstIo::hfImportVariants_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<int>("kvHeads");
    QTest::addColumn<int>("headDim");
    QTest::addColumn<int>("sliding");
    QTest::addColumn<int>("firstSliding"); // index of the first sliding layer, -1 none
    QTest::addColumn<int>("kvDtype");
    QTest::addColumn<QString>("id");
    using core::KvDtype;
    QTest::addRow("no num_key_value_heads = MHA")
        << llamaWith("num_key_value_heads", "") << 32 << 128 << 0 << -1 << int(KvDtype::Bf16)
        << "inline";
    QTest::addRow("num_key_value_heads null = MHA")
        << llamaWith("num_key_value_heads", "null") << 32 << 128 << 0 << -1 << int(KvDtype::Bf16)
        << "inline";
    QTest::addRow("explicit head_dim wins")
        << llamaWith("head_dim", "64") << 8 << 64 << 0 << -1 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("float16") << llamaWith("torch_dtype", "\"float16\"") << 8 << 128 << 0 << -1
                             << int(KvDtype::Fp16) << "inline";
    QTest::addRow("dtype key (new transformers)")
        << llamaWith("torch_dtype", "").chopped(1) + ",\"dtype\":\"float16\"}" << 8 << 128 << 0
        << -1 << int(KvDtype::Fp16) << "inline";
    QTest::addRow("float32 served as fp16") << llamaWith("torch_dtype", "\"float32\"") << 8 << 128
                                            << 0 << -1 << int(KvDtype::Fp16) << "inline";
    QTest::addRow("no dtype = bf16")
        << llamaWith("torch_dtype", "") << 8 << 128 << 0 << -1 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("sliding_window null") << llamaWith("sliding_window", "null") << 8 << 128 << 0
                                         << -1 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("sliding_window all layers") << llamaWith("sliding_window", "4096") << 8 << 128
                                               << 32 << 0 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("qwen2 without use_sliding_window (default false)")
        << llamaWith("sliding_window", "4096").replace("\"llama\"", "\"qwen2\"").chopped(1) +
               ",\"max_window_layers\":20}"
        << 8 << 128 << 0 << -1 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("use_sliding_window false")
        << llamaWith("sliding_window", "4096").chopped(1) + ",\"use_sliding_window\":false}" << 8
        << 128 << 0 << -1 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("qwen2 max_window_layers 20")
        << llamaWith("sliding_window", "4096").replace("\"llama\"", "\"qwen2\"").chopped(1) +
               ",\"use_sliding_window\":true,\"max_window_layers\":20}"
        << 8 << 128 << 12 << 20 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("sliding_window_pattern 4")
        << llamaWith("sliding_window", "512").chopped(1) + ",\"sliding_window_pattern\":4}" << 8
        << 128 << 24 << 0 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("gemma2 alternates")
        << llamaWith("sliding_window", "4096").replace("\"llama\"", "\"gemma2\"") << 8 << 128 << 16
        << 0 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("layer_types full/sliding")
        << llamaWith("sliding_window", "128").chopped(1) + ",\"layer_types\":[" +
               QByteArray("\"full_attention\",\"sliding_attention\",").repeated(16).chopped(1) +
               "]}"
        << 8 << 128 << 16 << 1 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("falcon RefinedWeb legacy 40B")
        << QByteArray(
               R"({"model_type":"RefinedWeb","n_head":128,"n_head_kv":8,"n_layer":60,"hidden_size":8192,"vocab_size":65024})")
        << 8 << 64 << 0 << -1 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("falcon multi_query false (MHA)")
        << QByteArray(
               R"({"model_type":"falcon","multi_query":false,"num_attention_heads":32,"num_hidden_layers":24,"hidden_size":2048,"new_decoder_architecture":false,"alibi":true})")
        << 32 << 64 << 0 << -1 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("gpt2 aliases")
        << QByteArray(
               R"({"model_type":"gpt2","n_head":12,"n_layer":12,"n_embd":768,"n_positions":1024,"vocab_size":50257})")
        << 12 << 64 << 0 << -1 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("llm_config nesting")
        << QByteArray(R"({"model_type":"internvl_chat","llm_config":)") + kLlamaConfig +
               R"(,"vision_config":{"num_hidden_layers":3,"num_attention_heads":5}})"
        << 8 << 128 << 0 << -1 << int(KvDtype::Bf16) << "inline";
    QTest::addRow("text_config falls back to top")
        << QByteArray(R"({"torch_dtype":"float16","_name_or_path":"org/My-VLM","text_config":)") +
               llamaWith("torch_dtype", "") + "}"
        << 8 << 128 << 0 << -1 << int(KvDtype::Fp16) << "my-vlm";
    QTest::addRow("_name_or_path names it")
        << llamaWith("_name_or_path", "\"/models/Some-Org/Llama-X-8B/\"") << 8 << 128 << 0 << -1
        << int(KvDtype::Bf16) << "llama-x-8b";
}

void TstIo::hfImportVariants() {
    QFETCH(QByteArray, json);
    QFETCH(int, kvHeads);
    QFETCH(int, headDim);
    QFETCH(int, sliding);
    QFETCH(int, firstSliding);
    QFETCH(int, kvDtype);
    QFETCH(QString, id);
    const auto r =
        io::parseHfConfig(std::string_view(json.constData(), size_t(json.size())), "inline.json");
    QVERIFY2(errorOf(r).isEmpty(), qPrintable(errorOf(r)));
    const core::ModelSpec& m = r.value();
    QCOMPARE(m.kvHeads, kvHeads);
    QCOMPARE(m.headDim, headDim);
    QCOMPARE(count(m, core::LayerKind::Sliding), sliding);
    int first = -1;
    for (int i = 0; i < m.numLayers() && first < 0; ++i)
        if (m.layers[size_t(i)].kind == core::LayerKind::Sliding)
            first = i;
    QCOMPARE(first, firstSliding);
    QCOMPARE(int(m.nativeKvDtype), kvDtype);
    QCOMPARE(QString::fromStdString(m.id), id);
    QVERIFY(m.params > 0);
}

void TstIo::hfImportErrors_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("expected");
    QTest::addRow("empty file") << QByteArray("") << "cfg.json: empty file";
    QTest::addRow("whitespace only") << QByteArray("  \n") << "cfg.json: empty file";
    QTest::addRow("truncated") << QByteArray(kLlamaConfig).left(80)
                               << "cfg.json: not valid JSON: line 2, column ";
    QTest::addRow("not JSON") << QByteArray("hello") << "cfg.json: not valid JSON";
    QTest::addRow("top-level array")
        << QByteArray("[1, 2]") << "cfg.json: expected an object at the top level, got an array";
    QTest::addRow("heads as string")
        << llamaWith("num_attention_heads", "\"32\"")
        << "cfg.json: num_attention_heads: expected an integer, got string \"32\"";
    QTest::addRow("heads zero") << llamaWith("num_attention_heads", "0")
                                << "num_attention_heads: must be between 1 and 4096, got 0";
    QTest::addRow("heads negative") << llamaWith("num_attention_heads", "-32")
                                    << "num_attention_heads: must be between 1 and 4096, got -32";
    QTest::addRow("heads fractional") << llamaWith("num_attention_heads", "32.5")
                                      << "num_attention_heads: expected an integer, got 32.5";
    QTest::addRow("heads absurd") << llamaWith("num_attention_heads", "100000")
                                  << "num_attention_heads: must be between 1 and 4096, got 100000";
    QTest::addRow("layers absurd")
        << llamaWith("num_hidden_layers", "1e9")
        << "num_hidden_layers: must be between 1 and 4096, got 1000000000.0";
    QTest::addRow("layers missing")
        << llamaWith("num_hidden_layers", "")
        << "num_hidden_layers: missing (also looked for n_layer, num_layers)";
    QTest::addRow("layers bool") << llamaWith("num_hidden_layers", "true")
                                 << "num_hidden_layers: expected an integer, got true";
    QTest::addRow("kv not dividing q")
        << llamaWith("num_key_value_heads", "5")
        << "num_key_value_heads: num_attention_heads 32 is not divisible by 5";
    QTest::addRow("kv above q") << llamaWith("num_key_value_heads", "64")
                                << "num_key_value_heads: 64 KV heads exceed";
    QTest::addRow("kv zero") << llamaWith("num_key_value_heads", "0")
                             << "num_key_value_heads: must be between 1 and 4096, got 0";
    QTest::addRow("hidden not divisible")
        << llamaWith("hidden_size", "4097")
        << "hidden_size: 4097 is not divisible by num_attention_heads 32";
    QTest::addRow("hidden fractional")
        << llamaWith("hidden_size", "4096.5") << "hidden_size: expected an integer, got 4096.5";
    QTest::addRow("hidden missing, no head_dim")
        << llamaWith("hidden_size", "") << "hidden_size: missing";
    QTest::addRow("head_dim absurd")
        << llamaWith("head_dim", "100000") << "head_dim: must be between 1 and 16384, got 100000";
    QTest::addRow("max context missing")
        << llamaWith("max_position_embeddings", "") << "max_position_embeddings: missing";
    QTest::addRow("max context absurd")
        << llamaWith("max_position_embeddings", "1e12")
        << "max_position_embeddings: must be between 1 and 1000000000";
    QTest::addRow("dtype number") << llamaWith("torch_dtype", "16")
                                  << "torch_dtype: expected a string such as \"bfloat16\", got 16";
    QTest::addRow("dtype unknown")
        << llamaWith("torch_dtype", "\"int3\"") << "torch_dtype: unsupported dtype \"int3\"";
    QTest::addRow("sliding_window negative")
        << llamaWith("sliding_window", "-1")
        << "sliding_window: must be between 1 and 1000000000, got -1";
    QTest::addRow("use_sliding_window string")
        << llamaWith("use_sliding_window", "\"yes\"")
        << "use_sliding_window: expected true or false, got string \"yes\"";
    QTest::addRow("layer_types wrong length")
        << llamaWith("layer_types", "[\"full_attention\"]")
        << "layer_types: has 1 entries but there are 32 layers";
    QTest::addRow("layer_types unknown")
        << llamaWith("sliding_window", "8").chopped(1) + ",\"layer_types\":[" +
               QByteArray("\"linear_attention\",").repeated(32).chopped(1) + "]}"
        << "layer_types[0]: unsupported layer type";
    QTest::addRow("layer_types sliding, no window")
        << llamaWith("layer_types",
                     "[" + QByteArray("\"sliding_attention\",").repeated(32).chopped(1) + "]")
        << "sliding_window: missing, but layer_types has sliding layers";
    QTest::addRow("text_config not object") << QByteArray(R"({"text_config": 5})")
                                            << "cfg.json: text_config: expected an object, got 5";
    QTest::addRow("nested field named")
        << QByteArray(R"({"text_config": {"num_hidden_layers": "x"}})")
        << "cfg.json: text_config.num_hidden_layers: expected an integer, got string \"x\"";
    QTest::addRow("mla without rope")
        << llamaWith("kv_lora_rank", "512") << "qk_rope_head_dim: missing";
    QTest::addRow("new_decoder_architecture string")
        << llamaWith("new_decoder_architecture", "\"true\"")
        << "new_decoder_architecture: expected true or false, got string \"true\"";
}

void TstIo::hfImportErrors() {
    QFETCH(QByteArray, json);
    QFETCH(QString, expected);
    const auto r =
        io::parseHfConfig(std::string_view(json.constData(), size_t(json.size())), "cfg.json");
    const QString message = errorOf(r);
    QVERIFY2(!message.isEmpty(), "accepted a bad config");
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY(message.startsWith(QStringLiteral("cfg.json: ")));
    QVERIFY(!message.contains(QLatin1Char('\n')));
}

void TstIo::hfRepo_data() {
    QTest::addColumn<QString>("nameOrPath");
    QTest::addColumn<QString>("repo");
    QTest::addRow("hub id") << "mistralai/Mistral-7B-v0.1"
                            << "mistralai/Mistral-7B-v0.1";
    QTest::addRow("local folder") << "/models/llama/Meta-Llama-3-8B"
                                  << "";
    QTest::addRow("relative folder") << "./llama3"
                                     << "";
    QTest::addRow("bare name") << "llama3"
                               << "";
}

void TstIo::hfRepo() {
    QFETCH(QString, nameOrPath);
    QFETCH(QString, repo);
    // The catalog carries the repository `vllm serve` takes; an import takes it from
    // _name_or_path only when that is a hub id.
    QCOMPARE(QString::fromStdString(io::findModel("llama-3-8b")->hfRepo),
             QStringLiteral("meta-llama/Meta-Llama-3-8B"));
    const std::string json = R"({"_name_or_path": ")" + nameOrPath.toStdString() +
                             R"(", "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_size": 4096, "max_position_embeddings": 8192})";
    const auto r = io::parseHfConfig(json, "config.json");
    QVERIFY2(errorOf(r).isEmpty(), qPrintable(errorOf(r)));
    const auto& m = r.value();
    QCOMPARE(QString::fromStdString(m.hfRepo), repo);
    core::Scenario s = io::defaultScenario();
    s.model = m;
    const auto back = io::scenarioFromJson(io::scenarioToJson(s), "x.kvl.json");
    QCOMPARE(QString::fromStdString(back.value().model.hfRepo), repo);
}

void TstIo::hfLoadFileErrors() {
    const auto missing = io::loadHfConfigFile(dataPath("no-such-config.json"));
    QVERIFY2(errorOf(missing).endsWith(QStringLiteral("no-such-config.json: no such file")),
             qPrintable(errorOf(missing)));
    const auto dir = io::loadHfConfigFile(dataPath("Meta-Llama-3-8B"));
    QVERIFY2(errorOf(dir).contains(QStringLiteral("is a directory")), qPrintable(errorOf(dir)));

    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString bigPath = tmp.filePath(QStringLiteral("big.json"));
    QFile big(bigPath);
    QVERIFY(big.open(QIODevice::WriteOnly));
    QVERIFY(big.resize((qint64(64) << 20) + 1)); // sparse: no 64 MiB write needed
    big.close();
    const auto tooBig = io::loadHfConfigFile(bigPath.toStdString());
    QVERIFY2(errorOf(tooBig).endsWith(
                 QStringLiteral("big.json: is larger than 64 MiB (67108865 bytes)")),
             qPrintable(errorOf(tooBig)));

    const QString emptyPath = tmp.filePath(QStringLiteral("empty.json"));
    QFile empty(emptyPath);
    QVERIFY(empty.open(QIODevice::WriteOnly));
    empty.close();
    const auto emptyResult = io::loadHfConfigFile(emptyPath.toStdString());
    QVERIFY2(errorOf(emptyResult).endsWith(QStringLiteral("empty.json: empty file")),
             qPrintable(errorOf(emptyResult)));

    // io::readFile (tested on its own in tst_files): the reason names the path.
    const auto gone = io::readFile(dataPath("no-such-config.json"));
    QVERIFY(!gone);
    QCOMPARE(gone.error().code, ErrorCode::NotFound);
    const auto text = io::readFile(dataPath("gemma-2-9b.json"));
    QVERIFY(text);
    QVERIFY(text->find("\"gemma2\"") != std::string::npos);
}

// --- scenario files --------------------------------------------------------------------------

void TstIo::defaultScenario() {
    const core::Scenario s = io::defaultScenario();
    QCOMPARE(QString::fromStdString(s.model.id), QStringLiteral("llama-3-8b"));
    QCOMPARE(QString::fromStdString(s.hardware.gpu.id), QStringLiteral("h100-80gb"));
    QCOMPARE(s.hardware.gpu.memoryBytes, qint64(85017821184));
    QCOMPARE(s.hardware.gpuCount, 1);
    QCOMPARE(s.hardware.memoryUtilization, 0.92); // vLLM's gpu_memory_utilization default
    QVERIFY(!s.hardware.kvMemoryBytes && !s.hardware.weightDtype);
    QVERIFY(!s.hardware.activationBytes && !s.hardware.overheadBytes); // estimated
    QVERIFY(s.levers.paging.enabled);
    QCOMPARE(s.levers.paging.blockSize, 0); // vLLM's choice: 16 for Llama on an H100
    // Issue 13: a default vLLM runs as printed: KV in the model's dtype (--kv-cache-dtype auto)
    // and a 2K prefix every request shares; the attention and quantization what-ifs stay off.
    QVERIFY(!s.levers.attention.enabled && !s.levers.quant.enabled);
    QVERIFY(s.levers.prefix.enabled);
    QCOMPARE(s.levers.prefix.sharedTokens, qint64(2048));
    QCOMPARE(s.levers.prefix.sharingRequests, qint64(0));
    QCOMPARE(s.workload.context, qint64(4096));
    QCOMPARE(s.workload.maxModelLen, qint64(0));
    QCOMPARE(s.effectiveMaxModelLen(), qint64(8192));
    QVERIFY(!s.validate());
}

void TstIo::scenarioRoundTrip_data() {
    QTest::addColumn<int>("which");
    QTest::addRow("default") << 0;
    QTest::addRow("everything changed, deepseek-v3 on h200") << 1;
    QTest::addRow("gemma-3 pattern of 6 over 62 layers") << 2;
    QTest::addRow("irregular per-layer windows") << 3;
    QTest::addRow("imported gpt-oss-20b") << 4;
}

void TstIo::scenarioRoundTrip() {
    QFETCH(int, which);
    core::Scenario s = io::defaultScenario();
    if (which == 1) {
        s.model = model("deepseek-v3");
        s.model.notes = "quotes \" backslash \\ newline \n unicode \xC3\xA9 tab \t";
        s.hardware.gpu = *io::findGpu("h200");
        s.hardware.gpuCount = 8;
        s.hardware.memoryUtilization = 0.873;
        s.hardware.activationBytes = 123456789;
        s.hardware.overheadBytes = 0;
        s.hardware.kvMemoryBytes = std::int64_t{51} * core::kGiB + 12345;
        s.hardware.weightDtype = core::WeightDtype::Fp8;
        s.levers.attention = {true, core::AttentionMode::Gqa, 16};
        s.levers.quant.enabled = true;
        s.levers.quant.format = {core::KvDtype::Int4, core::Granularity::PerGroup, 64,
                                 core::ScaleType::Fp16, true};
        s.levers.paging = {true, 64};
        s.levers.prefix = {true, 4000, 17};
        s.workload = {100000, 65536, 2048, 321};
    } else if (which == 2) {
        s.model = model("gemma-3-27b");
        s.levers.paging.enabled = false;
        s.levers.attention = {true, core::AttentionMode::Mqa, 8};
    } else if (which == 3) {
        s.model = model("mistral-7b-v0.1");
        s.model.layers[3].window = 1000;
        s.model.layers[7].kind = core::LayerKind::Full;
        s.model.layers[7].window = 0;
        s.levers.quant.enabled = true;
        s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Fp8E5M2);
    } else if (which == 4) {
        const auto r = io::loadHfConfigFile(dataPath("gpt-oss-20b.json"));
        QVERIFY(errorOf(r).isEmpty());
        s.model = r.value();
    }
    QVERIFY2(!s.validate(), s.validate().value_or("").c_str());
    const std::string text = io::scenarioToJson(s);
    const auto back = io::scenarioFromJson(text, "s.kvl.json");
    QVERIFY2(errorOf(back).isEmpty(), qPrintable(errorOf(back)));
    const core::Scenario& t = back.value();
    QVERIFY(sameModel(t.model, s.model));
    QVERIFY(t.levers == s.levers);
    QVERIFY(t.hardware == s.hardware);
    QVERIFY(t.workload == s.workload);
    QCOMPARE(io::scenarioToJson(t), text);
    // The file is versioned and readable by any JSON parser.
    const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(text)).object();
    QCOMPARE(o.value(QStringLiteral("kvledger_scenario")).toInt(), io::kScenarioFileVersion);
    if (which == 2) // the 62 layers are stored as their 6-entry period
        QCOMPARE(o.value(QStringLiteral("model"))
                     .toObject()
                     .value(QStringLiteral("layer_pattern"))
                     .toArray()
                     .size(),
                 6);
}

void TstIo::scenarioErrors_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("expected");
    const QByteArray good = QByteArray::fromStdString(io::scenarioToJson(io::defaultScenario()));
    const auto edit = [&](const char* from, const char* to) {
        QByteArray t = good;
        const int at = t.indexOf(from);
        if (at < 0)
            qFatal("fixture text '%s' not found", from);
        return t.replace(at, int(qstrlen(from)), to);
    };
    QTest::addRow("newer version")
        << edit("\"kvledger_scenario\": 1", "\"kvledger_scenario\": 3")
        << "s.kvl.json: written by a newer KV Ledger (scenario version 3); this version reads 1";
    QTest::addRow("missing version")
        << edit("\"kvledger_scenario\": 1,", "") << "s.kvl.json: not a KV Ledger scenario";
    QTest::addRow("version string")
        << edit("\"kvledger_scenario\": 1", "\"kvledger_scenario\": \"1\"")
        << "kvledger_scenario: expected an integer, got string \"1\"";
    QTest::addRow("version zero") << edit("\"kvledger_scenario\": 1", "\"kvledger_scenario\": 0")
                                  << "kvledger_scenario: must be between 1 and 1000000, got 0";
    QTest::addRow("model missing")
        << edit("\"model\":", "\"modell\":") << "s.kvl.json: model: missing";
    QTest::addRow("model not object")
        << QByteArray(R"({"kvledger_scenario":1,"model":[],"gpu":{}})")
        << "s.kvl.json: model: expected an object, got an array";
    QTest::addRow("block size negative")
        << edit("\"block_size\": 0", "\"block_size\": -16")
        << "levers.paging.block_size: must be between 0 and 1048576, got -16";
    QTest::addRow("utilization above 1")
        << edit("\"memory_utilization\": 0.92", "\"memory_utilization\": 1.5")
        << "hardware.memory_utilization: must be above 0 and at most 1, got 1.5";
    QTest::addRow("context negative")
        << edit("\"context\": 4096", "\"context\": -1")
        << "workload.context: must be between 1 and 1000000000, got -1";
    QTest::addRow("kv dtype unknown")
        << edit("\"kv_dtype\": \"bf16\"", "\"kv_dtype\": \"fp7\"")
        << "model.kv_dtype: must be a KV dtype such as fp16 or bf16, got string \"fp7\"";
    QTest::addRow("gpu memory zero")
        << edit("\"memory_bytes\": 85017821184", "\"memory_bytes\": 0")
        << "gpu.memory_bytes: must be between 1 and 1125899906842624, got 0";
    QTest::addRow("attention mode")
        << edit("\"mode\": \"native\"", "\"mode\": \"sparse\"")
        << "levers.attention.mode: must be one of native, mha, gqa, mqa, got string \"sparse\"";
    QTest::addRow("enabled not bool") << edit("\"enabled\": true", "\"enabled\": 1")
                                      << "levers.paging.enabled: expected true or false, got 1";
    QTest::addRow("granularity")
        << edit("\"granularity\": \"per-tensor\"", "\"granularity\": \"per-row\"")
        << "levers.quant.format.granularity: must be one of none, per-tensor";
    QTest::addRow("weight dtype override")
        << edit("\"weight_dtype\": null", "\"weight_dtype\": \"int3\"")
        << "hardware.weight_dtype: must be null or one of";
    QTest::addRow("layers zero") << edit("\"num_layers\": 32", "\"num_layers\": 0")
                                 << "model.num_layers: must be between 1 and 4096, got 0";
    QTest::addRow("kv heads not dividing (validate)")
        << edit("\"num_kv_heads\": 8", "\"num_kv_heads\": 5") << "not divisible";
    QTest::addRow("sliding without window")
        << edit("\"full\"", "\"sliding\"") << "model.sliding_window: missing";
    QTest::addRow("not JSON") << QByteArray("kvledger") << "s.kvl.json: not valid JSON";
    QTest::addRow("empty") << QByteArray() << "s.kvl.json: empty file";
}

void TstIo::scenarioErrors() {
    QFETCH(QByteArray, json);
    QFETCH(QString, expected);
    const auto r =
        io::scenarioFromJson(std::string_view(json.constData(), size_t(json.size())), "s.kvl.json");
    const QString message = errorOf(r);
    QVERIFY2(!message.isEmpty(), "accepted a bad scenario");
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY(message.startsWith(QStringLiteral("s.kvl.json: ")));
    QVERIFY(!message.contains(QLatin1Char('\n')));
}

void TstIo::scenarioIgnoresUnknownFields() {
    nlohmann::json doc =
        io::parseJson(io::scenarioToJson(io::defaultScenario()), "s.kvl.json").value();
    doc["future_section"] = {{"x", 1}};
    doc["levers"]["speculative"] = true;
    const auto r = io::scenarioFromJson(doc.dump(), "s.kvl.json");
    QVERIFY2(errorOf(r).isEmpty(), qPrintable(errorOf(r)));
    QVERIFY(r.value().levers == io::defaultScenario().levers);
    // Sections left out take the defaults.
    const auto minimal = io::scenarioFromJson(
        R"({"kvledger_scenario": 1, "model": )" + doc.at("model").dump() +
            R"(, "gpu": {"id": "x", "name": "X", "memory_bytes": 1000000000, "bandwidth_gbs": 1}})",
        "min.kvl.json");
    QVERIFY2(errorOf(minimal).isEmpty(), qPrintable(errorOf(minimal)));
    QVERIFY(minimal.value().workload == core::Workload{});
}

// kvprobe's table (generated from models.json at configure time with CMake's string(JSON))
// holds the same models as the catalog parsed with nlohmann-json, field for field.
void TstIo::modelTableMatchesCatalog() {
    const auto& catalog = io::builtinModels();
    const auto& table = io::tableModels();
    QCOMPARE(table.size(), catalog.size());
    QCOMPARE(io::modelTable().size(), catalog.size());
    for (std::size_t i = 0; i < catalog.size(); ++i) {
        core::ModelSpec expected = catalog[i];
        expected.notes.clear(); // display text, not in the table
        QVERIFY2(sameModel(table[i], expected), catalog[i].id.c_str());
        QCOMPARE(table[i].hfRepo, expected.hfRepo);
        QCOMPARE(io::findTableModel(catalog[i].id), &table[i]);
    }
    QCOMPARE(io::findTableModel("LLAMA-3-8B"), io::findTableModel("llama-3-8b"));
    QVERIFY(io::findTableModel("llama-3-8") == nullptr);
    // A bad row is refused with a message naming it.
    io::ModelRow bad = io::modelTable()[0];
    bad.kvDtype = "fp7";
    const auto r = io::modelFromRow(bad);
    QVERIFY(!r);
    QCOMPARE(QString::fromStdString(r.error().message),
             QStringLiteral("models.json: model 'llama-2-7b': unknown dtype"));
    bad = io::modelTable()[0];
    bad.layerPattern = "full,local";
    QVERIFY(!io::modelFromRow(bad));
}

QTEST_GUILESS_MAIN(TstIo)
#include "tst_io.moc"
