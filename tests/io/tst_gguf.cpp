// Issue 31: a GGUF header read as a stream (core/io/gguf.h), on tiny GGUF files this test
// writes itself in the layout of ggml's docs/gguf.md: the metadata llama.cpp sizes its KV cache
// from, each tensor type's real bytes, and one-line errors naming the file for a file that is
// not a GGUF, is truncated, or lies about its sizes.

#include "core/io/gguf.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

// A little-endian GGUF v3 writer, just enough for the tests.
struct Writer {
    std::string b;
    template <class T> void num(T v) {
        char c[sizeof(T)];
        std::memcpy(c, &v, sizeof(T));
        b.append(c, sizeof(T));
    }
    void str(const std::string& s) {
        num<std::uint64_t>(s.size());
        b += s;
    }
    void kvString(const std::string& k, const std::string& v) {
        str(k);
        num<std::uint32_t>(8);
        str(v);
    }
    void kvU32(const std::string& k, std::uint32_t v) {
        str(k);
        num<std::uint32_t>(4);
        num<std::uint32_t>(v);
    }
    void kvF32(const std::string& k, float v) {
        str(k);
        num<std::uint32_t>(6);
        num<float>(v);
    }
    void kvI32Array(const std::string& k, const std::vector<std::int32_t>& v) {
        str(k);
        num<std::uint32_t>(9);
        num<std::uint32_t>(5);
        num<std::uint64_t>(v.size());
        for (auto x : v)
            num<std::int32_t>(x);
    }
    void tensor(const std::string& name, std::vector<std::uint64_t> dims, std::uint32_t type,
                std::uint64_t offset) {
        str(name);
        num<std::uint32_t>(std::uint32_t(dims.size()));
        for (auto d : dims)
            num<std::uint64_t>(d);
        num<std::uint32_t>(type);
        num<std::uint64_t>(offset);
    }
    void alignTo(std::size_t a) {
        while (b.size() % a)
            b += '\0';
    }
};

// token_embd q4_K [256 x 8] = 8 blocks of 144 = 1152 bytes; attn_q f16 [64 x 64] = 8192;
// output q8_0 [32 x 4] = 4 blocks of 34 = 136. 9,480 bytes for 6,272 weights.
std::string model(bool perLayerKv = false, std::uint64_t lastOffset = 0, std::size_t dataCut = 0) {
    Writer w;
    w.b = "GGUF";
    w.num<std::uint32_t>(3);
    w.num<std::uint64_t>(3); // tensors
    w.num<std::uint64_t>(9); // metadata
    w.kvString("general.architecture", "llama");
    w.kvString("general.name", "Tiny");
    w.kvU32("general.file_type", 15); // LLAMA_FTYPE_MOSTLY_Q4_K_M
    w.kvU32("llama.block_count", 2);
    w.kvU32("llama.context_length", 4096);
    w.kvU32("llama.attention.head_count", 4);
    if (perLayerKv)
        w.kvI32Array("llama.attention.head_count_kv", {2, 0});
    else
        w.kvU32("llama.attention.head_count_kv", 2);
    w.kvU32("llama.attention.key_length", 64);
    w.kvF32("llama.rope.freq_base", 10000.0f);
    w.tensor("token_embd.weight", {256, 8}, 12, 0);
    w.tensor("blk.0.attn_q.weight", {64, 64}, 1, 1152);
    w.tensor("output.weight", {32, 4}, 8, lastOffset ? lastOffset : 1152 + 8192);
    w.alignTo(32);
    w.b += std::string(9480 - dataCut, '\x11');
    return w.b;
}

} // namespace

class TestGguf : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }
    void readsTheHeader();
    void perLayerKvHeads();
    void refusals_data();
    void refusals();
    void unreadablePaths_data();
    void unreadablePaths();

private:
    std::string write(const std::string& name, const std::string& bytes) {
        const std::string path = m_dir.filePath(QString::fromStdString(name)).toStdString();
        std::ofstream(path, std::ios::binary) << bytes;
        return path;
    }
    QTemporaryDir m_dir;
};

void TestGguf::readsTheHeader() {
    const auto path = write("tiny.gguf", model());
    const auto r = kvl::io::readGgufHeader(path);
    QVERIFY2(r, r ? "" : r.error().message.c_str());
    const auto& g = r.value();
    QCOMPARE(g.version, 3u);
    QCOMPARE(g.architecture, std::string("llama"));
    QCOMPARE(g.name, std::string("Tiny"));
    QCOMPARE(g.fileType, std::string("Q4_K_M"));
    QCOMPARE(g.blockCount, qint64(2));
    QCOMPARE(g.contextLength, qint64(4096));
    QCOMPARE(g.headCount, qint64(4));
    QCOMPARE(g.headCountKv, std::vector<std::int64_t>{2});
    QCOMPARE(g.keyLength, qint64(64));
    QCOMPARE(g.tensorCount, qint64(3));
    QCOMPARE(g.dataOffset % 32, qint64(0));
    QCOMPARE(g.weightBytes, qint64(9480));
    QCOMPARE(g.weightElements, qint64(6272));
    QCOMPARE(g.types.size(), std::size_t(3));
    QCOMPARE(g.types[0].type, std::string("f16"));
    QCOMPARE(g.types[0].bytes, qint64(8192));
    QCOMPARE(g.types[1].type, std::string("q4_K"));
    QCOMPARE(g.types[1].bytes, qint64(1152)); // 4.5 bits a weight
    QCOMPARE(g.types[2].type, std::string("q8_0"));
    QCOMPARE(g.types[2].bytes, qint64(136)); // 8.5 bits a weight
    QCOMPARE(g.bitsPerWeight(), 9480.0 * 8 / 6272);
}

void TestGguf::perLayerKvHeads() {
    const auto r = kvl::io::readGgufHeader(write("layers.gguf", model(true)));
    QVERIFY(r);
    QCOMPARE(r.value().headCountKv, (std::vector<std::int64_t>{2, 0}));
}

void TestGguf::refusals_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("says");
    const std::string good = model();
    QTest::newRow("a zip") << QByteArray("PK\x03\x04 not a model", 16) << "not a GGUF file";
    QTest::newRow("empty") << QByteArray() << "not a GGUF file";
    QTest::newRow("version 9") << QByteArray("GGUF\x09\0\0\0", 8) << "GGUF version 9";
    QTest::newRow("cut in the metadata")
        << QByteArray::fromStdString(good.substr(0, 100)) << "truncated";
    QTest::newRow("cut in the tensor infos")
        << QByteArray::fromStdString(good.substr(0, good.size() - 9480 - 40)) << "truncated";
    std::string huge = good;
    const std::uint64_t lie = 1'000'000'000'000ull; // the name's length
    std::memcpy(huge.data() + 24 + 8 + 20 + 4, &lie, 8);
    QTest::newRow("a string of 1e12 bytes")
        << QByteArray::fromStdString(huge) << "lying about its sizes";
    std::string counts = good;
    const std::uint64_t many = 1ull << 40;
    std::memcpy(counts.data() + 8, &many, 8);
    QTest::newRow("2^40 tensors") << QByteArray::fromStdString(counts) << "lying about its sizes";
    QTest::newRow("a tensor past the end")
        << QByteArray::fromStdString(model(false, 9400)) << "lying about its sizes: tensor 'output";
    QTest::newRow("the weights cut short")
        << QByteArray::fromStdString(model(false, 0, 100)) << "ends past the file";
    // A file of one tensor info (or one metadata array) built to lie in one field each.
    auto oneTensor = [](std::vector<std::uint64_t> dims, std::uint32_t type) {
        Writer w;
        w.b = "GGUF";
        w.num<std::uint32_t>(3);
        w.num<std::uint64_t>(1); // tensors
        w.num<std::uint64_t>(0); // metadata
        w.tensor("blk.0.attn_q.weight", std::move(dims), type, 0);
        w.alignTo(32);
        w.b += std::string(8192, '\x11');
        return QByteArray::fromStdString(w.b);
    };
    QTest::newRow("a tensor of 5 dimensions")
        << oneTensor({64, 64, 1, 1, 1}, 1) << "tensor 'blk.0.attn_q.weight' has 5 dimensions";
    QTest::newRow("a dimension of 2^41")
        << oneTensor({64, 1ull << 41}, 1) << "lying about its sizes: tensor 'blk.0.attn_q.weight'";
    QTest::newRow("ggml type 99") << oneTensor({64, 64}, 99) << "has ggml type 99";
    QTest::newRow("q4_K rows of 64 values")
        << oneTensor({64, 64}, 12) << "rows of 64 values are not whole q4_K blocks";
    {
        Writer w;
        w.b = "GGUF";
        w.num<std::uint32_t>(3);
        w.num<std::uint64_t>(0); // tensors
        w.num<std::uint64_t>(1); // metadata
        w.str("llama.attention.head_count_kv");
        w.num<std::uint32_t>(9);          // array
        w.num<std::uint32_t>(5);          // of int32
        w.num<std::uint64_t>(1ull << 40); // 2^40 of them, in a file of a few dozen bytes
        w.num<std::int32_t>(8);
        QTest::newRow("an array of 2^40 int32")
            << QByteArray::fromStdString(w.b)
            << "lying about its sizes: metadata 'llama.attention.head_count_kv' claims";
    }
    // A key holding a newline and an undefined value type (found by fuzz_gguf): the message
    // shows the key's control bytes as \xNN and stays one line.
    QFile found(QStringLiteral(KVL_SOURCE_DIR "/tests/fuzz/corpus/gguf/key-with-newline.gguf"));
    QVERIFY(found.open(QIODevice::ReadOnly));
    QTest::newRow("a key with a newline")
        << found.readAll() << "metadata '.archi$tecture\\x08\\x0a\\x00";
}

void TestGguf::refusals() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, says);
    const auto path = write("bad.gguf", bytes.toStdString());
    const auto r = kvl::io::readGgufHeader(path);
    QVERIFY(!r);
    const QString msg = QString::fromStdString(r.error().message);
    QVERIFY2(msg.startsWith(QString::fromStdString(path) + QStringLiteral(": ")), qPrintable(msg));
    QVERIFY2(msg.contains(says), qPrintable(msg));
    QVERIFY2(!msg.contains(u'\n'), qPrintable(msg));
}

// A path that is no file gets the same one line naming it, with what it is instead.
void TestGguf::unreadablePaths_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("says");
    QTest::newRow("missing") << m_dir.filePath(QStringLiteral("none.gguf"))
                             << "cannot open the file";
    QTest::newRow("a directory") << m_dir.path() << "is a directory, not a regular file";
}

void TestGguf::unreadablePaths() {
    QFETCH(QString, path);
    QFETCH(QString, says);
    const auto r = kvl::io::readGgufHeader(path.toStdString());
    QVERIFY(!r);
    const QString msg = QString::fromStdString(r.error().message);
    QCOMPARE(msg, path + QStringLiteral(": ") + says);
}

QTEST_GUILESS_MAIN(TestGguf)
#include "tst_gguf.moc"
