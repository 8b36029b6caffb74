// The kvledger executable, run as a user runs it: without a display it says how to run
// headless instead of aborting; a Qt option (-reverse, -style S) never swallows the file after
// it; a FIFO never blocks; headless errors are exactly one line on stderr (no Qt warning before
// it); on a full disk `kvledger export` fails with exit 1 and leaves the file as it was.
// Issue 32: every export command leaves a device node, a FIFO, a socket, a directory and a
// symbolic link (to a FIFO, a device node, a file or nothing) exactly as it was, exit 2; a
// replaced file keeps its mode; a read-only mount is named as the OS names it; an output's name
// must say what it will hold.

#include "../widgets/full_disk.h"
#include "../widgets/special_files.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <cerrno>
#include <cstring>

#ifdef Q_OS_UNIX
#include <sys/stat.h>
#endif

namespace {

struct Run {
    int rc = -1;
    bool finished = false;
    QString out;
    QString err;
};

enum class Display { Offscreen, None };

Run kvledger(const QStringList& args, Display display = Display::Offscreen) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("DISPLAY"));
    env.remove(QStringLiteral("WAYLAND_DISPLAY"));
    if (display == Display::None)
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
    else
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(KVLEDGER_EXE), args);
    Run r;
    // A window that opened (the file was lost) or a read that blocks would never finish.
    r.finished = p.waitForStarted(10000) && p.waitForFinished(30000);
    if (!r.finished) {
        p.kill();
        p.waitForFinished(5000);
    }
    r.rc = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
    r.err = QString::fromLocal8Bit(p.readAllStandardError());
    return r;
}

#define VERIFY_ONE_LINE(text)                                                                      \
    QVERIFY2((text).count(QLatin1Char('\n')) == 1 && (text).endsWith(QLatin1Char('\n')),           \
             qPrintable(text))

} // namespace

class TestKvledger : public QObject {
    Q_OBJECT
private slots:
    void noDisplay_data();
    void noDisplay();
    void helpNeedsNoDisplay();
    void qtOptionsKeepTheFile_data();
    void qtOptionsKeepTheFile();
    void headlessErrorsAreOneLine_data();
    void headlessErrorsAreOneLine();
    void exportOnFullDisk();
    void exportWrites();
    void exportsLeaveSpecialFilesAlone_data();
    void exportsLeaveSpecialFilesAlone();
    void exportKeepsTheMode_data();
    void exportKeepsTheMode();
    void exportOnReadOnlyMount();
    void outputNameMatchesItsType_data();
    void outputNameMatchesItsType();

private:
    QTemporaryDir m_dir;
};

void TestKvledger::noDisplay_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addRow("no arguments") << QStringList{};
    QTest::addRow("a Qt option") << QStringList{"-reverse"};
    QTest::addRow("a file") << QStringList{QStringLiteral(KVL_SOURCE_DIR
                                                          "/tests/fuzz/corpus/scenario_file/"
                                                          "default.kvl.json")};
}

void TestKvledger::noDisplay() {
    QFETCH(QStringList, args);
    const Run r = kvledger(args, Display::None);
    QVERIFY(r.finished);
    QCOMPARE(r.rc, 2); // not a Qt abort
    VERIFY_ONE_LINE(r.err);
    QVERIFY2(r.err.contains(QStringLiteral("QT_QPA_PLATFORM=offscreen")), qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("export")), qPrintable(r.err));
    QVERIFY(r.out.isEmpty());
}

void TestKvledger::helpNeedsNoDisplay() {
    for (const QStringList& args : {QStringList{"--help"}, QStringList{"export", "--help"},
                                    QStringList{"ledger", "--model", "llama-3-8b", "--json"}}) {
        const Run r = kvledger(args, Display::None);
        QCOMPARE(r.rc, 0);
        QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
        QVERIFY(!r.out.isEmpty());
    }
    // export selects the offscreen platform itself.
    const QString out = m_dir.filePath(QStringLiteral("no-display.csv"));
    const Run r = kvledger({"export", "--chart", "ladder", "--out", out}, Display::None);
    QVERIFY2(r.rc == 0, qPrintable(r.err));
    QVERIFY(r.err.isEmpty());
    QVERIFY(QFile::exists(out));
}

void TestKvledger::qtOptionsKeepTheFile_data() {
    QTest::addColumn<QStringList>("qtOptions");
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("reason");
    const QString missing = m_dir.filePath(QStringLiteral("missing.kvl.json"));
    const QString fifo = m_dir.filePath(QStringLiteral("fifo.kvl.json"));
    QTest::addRow("-reverse FILE")
        << QStringList{"-reverse"} << missing << QStringLiteral("no such file");
    QTest::addRow("-style fusion FILE")
        << QStringList{"-style", "fusion"} << missing << QStringLiteral("no such file");
    QTest::addRow("-reverse -style=fusion FILE")
        << QStringList{"-reverse", "-style=fusion"} << missing << QStringLiteral("no such file");
    QTest::addRow("-reverse FIFO") << QStringList{"-reverse"} << fifo
                                   << QStringLiteral("is a FIFO (named pipe), not a regular file");
}

void TestKvledger::qtOptionsKeepTheFile() {
    // Before the fix `-reverse FILE` dropped FILE and opened an empty window (this would hang).
    // The file is checked before any window opens: a bad one is one line and exit 2.
    QFETCH(QStringList, qtOptions);
    QFETCH(QString, file);
    QFETCH(QString, reason);
    if (file.endsWith(QLatin1String("fifo.kvl.json")) && !QFile::exists(file)) {
#ifdef Q_OS_UNIX
        QCOMPARE(::mkfifo(QFile::encodeName(file).constData(), 0600), 0);
#else
        QSKIP("FIFOs are POSIX");
#endif
    }
    const Run r = kvledger(qtOptions + QStringList{file});
    QVERIFY2(r.finished, "kvledger did not return: the file was lost or the FIFO blocked");
    QCOMPARE(r.rc, 2);
    // The window's QApplication exists by then and Qt may have said something of its own
    // (XDG_RUNTIME_DIR on a bare machine); ours is one line, and the last.
    const QStringList lines = r.err.trimmed().split(QLatin1Char('\n'));
    QCOMPARE(lines.filter(QRegularExpression(QStringLiteral("^kvledger"))).size(), 1);
    QVERIFY2(lines.last().startsWith(QStringLiteral("kvledger: ")), qPrintable(r.err));
    QVERIFY2(r.err.contains(file + QStringLiteral(": ") + reason), qPrintable(r.err));
    for (const QString& o : qtOptions)
        QVERIFY2(!r.err.contains(o), qPrintable(r.err)); // Qt's options are Qt's
}

void TestKvledger::headlessErrorsAreOneLine_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("rc");
    QTest::addColumn<QString>("mentions");
    const QString nowhere = m_dir.filePath(QStringLiteral("no/such/dir/"));
    QTest::addRow("svg into a missing directory")
        << QStringList{"export", "--chart", "memory", "--out", nowhere + "m.svg"} << 1
        << nowhere + "m.svg";
    QTest::addRow("pdf into a missing directory")
        << QStringList{"export", "--chart", "memory", "--out", nowhere + "m.pdf"} << 1
        << nowhere + "m.pdf";
    QTest::addRow("report into a missing directory")
        << QStringList{"export", "--report", nowhere + "r.pdf"} << 1 << nowhere + "r.pdf";
    QTest::addRow("screenshot into a missing directory")
        << QStringList{"--screenshot", nowhere + "s.png"} << 1 << nowhere + "s.png";
    QTest::addRow("missing reference") << QStringList{"export",
                                                      "--chart",
                                                      "memory",
                                                      "--out",
                                                      m_dir.filePath("x.csv"),
                                                      "--reference",
                                                      m_dir.filePath("none.kvl.json")}
                                       << 2 << QStringLiteral("--reference: ");
    QTest::addRow("reference is a directory")
        << QStringList{"export", "--report", m_dir.filePath("x.pdf"), "--reference", m_dir.path()}
        << 2 << QStringLiteral("directory");
    QTest::addRow("simulate without arrivals")
        << QStringList{"simulate"} << 2 << QStringLiteral("--rate: missing");
    QTest::addRow("simulate absurd rate")
        << QStringList{"simulate", "--rate", "1e300"} << 2 << QStringLiteral("--rate");
    QTest::addRow("nan scale")
        << QStringList{"export",  "--chart", "memory", "--out", m_dir.filePath("x.png"),
                       "--scale", "nan"}
        << 2 << QStringLiteral("--scale");
    QTest::addRow("25.6 GB PNG")
        << QStringList{"export",  "--chart", "memory", "--out",      m_dir.filePath("x.png"),
                       "--scale", "8",       "--size", "10000x10000"}
        << 2 << QStringLiteral("megapixels");
    // Issue 32, item 10: a --reference file goes through the block-size rule --scenario
    // obeys, named as its field.
    {
        QFile good(
            QStringLiteral(KVL_SOURCE_DIR "/tests/fuzz/corpus/scenario_file/default.kvl.json"));
        if (!good.open(QIODevice::ReadOnly))
            qFatal("default.kvl.json missing");
        QFile bad(m_dir.filePath(QStringLiteral("block7.kvl.json")));
        if (!bad.open(QIODevice::WriteOnly))
            qFatal("cannot write block7.kvl.json");
        bad.write(good.readAll().replace("\"block_size\": 16", "\"block_size\": 7"));
    }
    QTest::addRow("reference with block size 7")
        << QStringList{"export",
                       "--chart",
                       "memory",
                       "--out",
                       m_dir.filePath("x.csv"),
                       "--reference",
                       m_dir.filePath("block7.kvl.json")}
        << 2
        << QStringLiteral("levers.paging.block_size: vLLM has no attention backend for block "
                          "size 7");
    QTest::addRow("gpus --json extra")
        << QStringList{"gpus", "--json", "extra"} << 2 << QStringLiteral("'extra'");
    QTest::addRow("mistyped command") << QStringList{"legder"} << 2 << QStringLiteral("'legder'");
}

void TestKvledger::headlessErrorsAreOneLine() {
    QFETCH(QStringList, args);
    QFETCH(int, rc);
    QFETCH(QString, mentions);
    const Run r = kvledger(args);
    QVERIFY(r.finished);
    QCOMPARE(r.rc, rc);
    VERIFY_ONE_LINE(r.err);
    QVERIFY2(r.err.startsWith(QStringLiteral("kvledger")), qPrintable(r.err));
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
    QVERIFY(r.out.isEmpty());
}

void TestKvledger::exportOnFullDisk() {
    // The reported case: "wrote", exit 0 and a 0-byte file.
    kvl::test::FullDisk disk;
    if (!disk.ok())
        QSKIP(qPrintable(disk.whyNot()));
    const QByteArray original("series,context_tokens\n\"earlier\",1\n");
    QVERIFY(disk.put(QStringLiteral("t.csv"), original));
    QVERIFY(disk.fill());
    const QString path = disk.filePath(QStringLiteral("t.csv"));
    const Run r = kvledger({"export", "--chart", "memory", "--out", path});
    QCOMPARE(r.rc, 1);
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out));
    VERIFY_ONE_LINE(r.err);
    QVERIFY2(r.err.contains(path), qPrintable(r.err));
    QVERIFY2(r.err.contains(QString::fromLocal8Bit(std::strerror(ENOSPC))), qPrintable(r.err));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), original);
}

void TestKvledger::exportWrites() {
    // And where there is room, the same command writes and says so.
    const QString path = m_dir.filePath(QStringLiteral("t.csv"));
    const Run r = kvledger({"export", "--chart", "memory", "--out", path, "--units", "GB"});
    QVERIFY2(r.rc == 0, qPrintable(r.err));
    QVERIFY(r.err.isEmpty());
    QVERIFY(r.out.startsWith(QStringLiteral("wrote ") + path));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    // '#' lines giving the scenario first (issue 13), then the CSV.
    const QByteArray csv = f.readAll();
    QVERIFY(csv.startsWith("# Llama-3-8B · 1 x H100 SXM 80GB (TP 1)"));
    QVERIFY(csv.contains("\nseries,context_tokens,"));
}

namespace {
// The three commands that write a file, with a name of the right kind for each.
QStringList exportCommand(const QString& command, const QString& path) {
    if (command == QLatin1String("chart"))
        return {"export", "--chart", "memory", "--out", path};
    if (command == QLatin1String("report"))
        return {"export", "--report", path};
    return {"--screenshot", path};
}
QString exportName(const QString& command) {
    return command == QLatin1String("report") ? QStringLiteral("out.pdf")
                                              : QStringLiteral("out.png");
}
QStringList entries(const QString& dir) {
    return QDir(dir).entryList(QDir::AllEntries | QDir::System | QDir::Hidden |
                               QDir::NoDotAndDotDot);
}
} // namespace

void TestKvledger::exportsLeaveSpecialFilesAlone_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<QString>("kind");
    for (const QString& command : QStringList{"chart", "report", "screenshot"})
        for (const QString& kind : kvl::test::specialKinds())
            QTest::addRow("%s over %s", qPrintable(command), qPrintable(kind)) << command << kind;
}

void TestKvledger::exportsLeaveSpecialFilesAlone() {
    // The reported cases: `mknod n.png c 1 3`, `mkfifo f.csv` and `ln -s /dev/null x.png` were
    // each replaced by a regular file, with "wrote" and exit 0 (through the link, as root, it
    // replaced the machine's /dev/null). Here the node, and a link's target, are the test's own.
    QFETCH(QString, command);
    QFETCH(QString, kind);
    QTemporaryDir dir;
    const QString path = dir.filePath(exportName(command));
    if (const QString why = kvl::test::makeSpecial(kind, path); !why.isEmpty()) {
        if (kind.contains(QLatin1String("device")) && ::geteuid() != 0)
            QSKIP(qPrintable(why));
        QFAIL(qPrintable(why));
    }
    const QString before = kvl::test::describe(path);
    const QStringList there = entries(dir.path());
    const Run r = kvledger(exportCommand(command, path));
    QVERIFY2(r.finished, "kvledger did not return: it blocked on the FIFO");
    QCOMPARE(r.rc, 2);
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out)); // no "wrote"
    VERIFY_ONE_LINE(r.err);
    QVERIFY2(r.err.contains(path + QStringLiteral(": ") + kvl::test::specialReason(kind, path)),
             qPrintable(r.err));
    QCOMPARE(kvl::test::describe(path), before);
    QCOMPARE(entries(dir.path()), there); // nothing written beside it either
}

void TestKvledger::exportKeepsTheMode_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<int>("mode");
    for (const QString& command : QStringList{"chart", "report", "screenshot"})
        for (const int mode : {0444, 0600, 0755})
            QTest::addRow("%s over %o", qPrintable(command), mode) << command << mode;
}

void TestKvledger::exportKeepsTheMode() {
    // Exporting over a 0444 file left it 0644. As `cp` onto it: root writes it and it stays
    // 0444; a user is refused with the OS's reason and the file stays as it was.
    QFETCH(QString, command);
    QFETCH(int, mode);
    QTemporaryDir dir;
    const QString path = dir.filePath(exportName(command));
    const QByteArray original("the file that was there\n");
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.write(original) == original.size());
    }
    QCOMPARE(::chmod(QFile::encodeName(path).constData(), mode_t(mode)), 0);
    const Run r = kvledger(exportCommand(command, path));
    QVERIFY(r.finished);
    struct stat st {};
    QCOMPARE(::stat(QFile::encodeName(path).constData(), &st), 0);
    QCOMPARE(int(st.st_mode & 07777), mode);
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly)); // every mode here lets the owner read
    if (::geteuid() == 0 || (mode & 0200)) {
        QVERIFY2(r.rc == 0, qPrintable(r.err));
        QVERIFY(f.readAll() != original);
    } else {
        QCOMPARE(r.rc, 1);
        VERIFY_ONE_LINE(r.err);
        QVERIFY2(r.err.contains(path + QStringLiteral(": ") +
                                QString::fromLocal8Bit(std::strerror(EACCES))),
                 qPrintable(r.err));
        QCOMPARE(f.readAll(), original);
    }
}

void TestKvledger::exportOnReadOnlyMount() {
    // The OS's reason, "Read-only file system", not "not writable".
    kvl::test::FullDisk disk;
    if (!disk.ok())
        QSKIP(qPrintable(disk.whyNot()));
    const QByteArray original("series,context_tokens\n");
    QVERIFY(disk.put(QStringLiteral("t.csv"), original));
    QVERIFY(disk.makeReadOnly());
    for (const QString& name : {QStringLiteral("t.csv"), QStringLiteral("new.csv")}) {
        const QString path = disk.filePath(name);
        const Run r = kvledger({"export", "--chart", "memory", "--out", path});
        QCOMPARE(r.rc, 1);
        QVERIFY2(r.out.isEmpty(), qPrintable(r.out));
        VERIFY_ONE_LINE(r.err);
        QVERIFY2(r.err.contains(path), qPrintable(r.err));
        QVERIFY2(r.err.trimmed().endsWith(QString::fromLocal8Bit(std::strerror(EROFS))),
                 qPrintable(r.err));
    }
    QFile f(disk.filePath(QStringLiteral("t.csv")));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), original);
    QVERIFY(!QFile::exists(disk.filePath(QStringLiteral("new.csv"))));
}

void TestKvledger::outputNameMatchesItsType_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("message");
    // The reported cases: the report wrote a PDF named r.png, the screenshot a PNG named x.txt.
    QTest::addRow("report as r.png")
        << QStringList{"export", "--report"} << QStringLiteral("r.png")
        << QStringLiteral("kvledger export: --report: the review report is a PDF document: name "
                          "it FILE.pdf, not '%1'");
    QTest::addRow("report without a suffix")
        << QStringList{"export", "--report"} << QStringLiteral("review")
        << QStringLiteral("kvledger export: --report: the review report is a PDF document: name "
                          "it FILE.pdf, not '%1'");
    QTest::addRow("screenshot as x.txt")
        << QStringList{"--screenshot"} << QStringLiteral("x.txt")
        << QStringLiteral("kvledger --screenshot: --screenshot: the screenshot is a PNG image: "
                          "name it FILE.png, not '%1'");
    QTest::addRow("screenshot as x.pdf")
        << QStringList{"--screenshot"} << QStringLiteral("x.pdf")
        << QStringLiteral("kvledger --screenshot: --screenshot: the screenshot is a PNG image: "
                          "name it FILE.png, not '%1'");
}

void TestKvledger::outputNameMatchesItsType() {
    QFETCH(QStringList, args);
    QFETCH(QString, file);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const QString path = dir.filePath(file);
    const Run r = kvledger(args + QStringList{path});
    QVERIFY(r.finished);
    QCOMPARE(r.rc, 2);
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out));
    QCOMPARE(r.err, message.arg(path) + QLatin1Char('\n'));
    QVERIFY(!QFile::exists(path));
}

QTEST_GUILESS_MAIN(TestKvledger)
#include "tst_kvledger.moc"
