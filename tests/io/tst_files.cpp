// io::readFile and io::RegularFile, the one way KV Ledger opens a file it reads (issue 15,
// item 6): special files are refused at once, never opened in a blocking way; each failure
// says what the path is; one size limit. And io::replaceFile / io::AppendFile, the one way
// KV Ledger and kvprobe write one (issue 32, items 1-3 and 15): anything that exists and is not
// a regular file, symbolic links included, is refused and left as it was; a replaced file keeps
// its mode; every failure gives the OS's reason; appending never truncates and keeps whole
// lines on a full disk. Linked against kvl_files alone (no JSON, no Qt in the library), as
// kvprobe is in the probe-only build.
#include "core/io/files.h"

#include "../widgets/full_disk.h"
#include "../widgets/special_files.h"

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kvl;

namespace {

std::string writeFile(const QTemporaryDir& dir, const char* name, const std::string& bytes) {
    const std::string path = dir.filePath(QLatin1String(name)).toStdString();
    QFile f(QString::fromStdString(path));
    if (!f.open(QIODevice::WriteOnly) ||
        f.write(bytes.data(), qint64(bytes.size())) != qint64(bytes.size()))
        qFatal("cannot write %s", path.c_str());
    return path;
}

std::string readAll(const std::string& path) {
    QFile f(QString::fromStdString(path));
    return f.open(QIODevice::ReadOnly) ? f.readAll().toStdString() : std::string("<unreadable>");
}

mode_t modeOf(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : mode_t(-1);
}

mode_t currentUmask() {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return mask;
}

} // namespace

class TstFiles : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void readsRegularFiles_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addRow("empty") << QByteArray();
        QTest::addRow("text") << QByteArray("{\"a\": 1}\n");
        QTest::addRow("binary with NULs") << QByteArray("\x00\x01\xFF\x00", 4);
        QTest::addRow("1 MiB") << QByteArray(1 << 20, 'x');
    }
    void readsRegularFiles() {
        QFETCH(QByteArray, bytes);
        const std::string path = writeFile(m_dir, "regular.bin", bytes.toStdString());
        const auto r = io::readFile(path);
        QVERIFY2(r, r ? "" : r.error().message.c_str());
        QCOMPARE(QByteArray::fromStdString(r.value()), bytes);
        // Through a symbolic link too.
        const std::string link = m_dir.filePath(QStringLiteral("link-to-regular")).toStdString();
        ::unlink(link.c_str());
        QCOMPARE(::symlink(path.c_str(), link.c_str()), 0);
        QCOMPARE(QByteArray::fromStdString(io::readFile(link).value()), bytes);
    }

    // Each refusal: the code and the exact one-line message, for readFile and open alike.
    void refusals_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("reason"); // after "<path>: "
        const QString missing = m_dir.filePath(QStringLiteral("missing.json"));
        QTest::addRow("missing file") << missing << int(ErrorCode::NotFound) << "no such file";
        QTest::addRow("missing folder") << m_dir.filePath(QStringLiteral("nope/config.json"))
                                        << int(ErrorCode::NotFound) << "no such file";
        QTest::addRow("through a file") << m_dir.filePath(QStringLiteral("plain.txt/config.json"))
                                        << int(ErrorCode::NotFound) << "no such file";
        QTest::addRow("empty path") << QString() << int(ErrorCode::NotFound) << "no such file";
        QTest::addRow("dangling symlink")
            << m_dir.filePath(QStringLiteral("dangling")) << int(ErrorCode::NotFound)
            << "no such file (a symbolic link to a missing file)";
        QTest::addRow("symlink loop")
            << m_dir.filePath(QStringLiteral("loop-a")) << int(ErrorCode::BadFile)
            << "too many levels of symbolic links (a symbolic link loop)";
        QTest::addRow("directory")
            << m_dir.path() << int(ErrorCode::BadFile) << "is a directory, not a regular file";
        QTest::addRow("/dev/null") << QStringLiteral("/dev/null") << int(ErrorCode::BadFile)
                                   << "is a character device, not a regular file";
        QTest::addRow("FIFO") << m_dir.filePath(QStringLiteral("fifo")) << int(ErrorCode::BadFile)
                              << "is a FIFO (named pipe), not a regular file";
        QTest::addRow("symlink to a FIFO")
            << m_dir.filePath(QStringLiteral("link-to-fifo")) << int(ErrorCode::BadFile)
            << "is a FIFO (named pipe), not a regular file";
        QTest::addRow("socket") << m_dir.filePath(QStringLiteral("sock")) << int(ErrorCode::BadFile)
                                << "is a socket, not a regular file";
    }
    void refusals() {
        QFETCH(QString, path);
        QFETCH(int, code);
        QFETCH(QString, reason);
        makeSpecialFiles();
        const std::string p = path.toStdString();
        const QString expected = path + QStringLiteral(": ") + reason;
        // In the test thread: a FIFO opened for reading would block here until the test timed out.
        const auto read = io::readFile(p);
        QVERIFY(!read);
        QCOMPARE(int(read.error().code), code);
        QCOMPARE(QString::fromStdString(read.error().message), expected);
        const auto opened = io::RegularFile::open(p);
        QVERIFY(!opened);
        QCOMPARE(QString::fromStdString(opened.error().message), expected);
    }

    void permissionDenied() {
        const std::string path = writeFile(m_dir, "secret.json", "{}");
        QCOMPARE(::chmod(path.c_str(), 0), 0);
        const std::string expected = path + ": permission denied";
        if (::geteuid() != 0) {
            const auto r = io::readFile(path);
            QVERIFY(!r);
            QCOMPARE(r.error().code, ErrorCode::Io);
            QCOMPARE(r.error().message, expected);
            return;
        }
        // As root every file is readable: read as "nobody" in a child process instead.
        QCOMPARE(::chmod(m_dir.path().toLocal8Bit().constData(), 0755), 0);
        const pid_t child = ::fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            if (::setgid(65534) != 0 || ::setuid(65534) != 0)
                ::_exit(3);
            const auto r = io::readFile(path);
            ::_exit(r                                                                  ? 1
                    : r.error().code == ErrorCode::Io && r.error().message == expected ? 0
                                                                                       : 2);
        }
        int status = 0;
        QCOMPARE(::waitpid(child, &status, 0), child);
        QVERIFY(WIFEXITED(status));
        if (WEXITSTATUS(status) == 3)
            QSKIP("cannot switch to the nobody user here");
        QCOMPARE(WEXITSTATUS(status), 0); // 1: read although unreadable, 2: another message
    }

    // One limit: 64 MiB is read, one byte more is refused before anything is read (sparse
    // files, so no 64 MiB write is needed).
    void sizeLimit() {
        QCOMPARE(io::kMaxFileBytes, std::int64_t{64} << 20);
        const std::string atLimit = m_dir.filePath(QStringLiteral("at-limit.bin")).toStdString();
        const std::string over = m_dir.filePath(QStringLiteral("over-limit.bin")).toStdString();
        for (const auto& [path, size] :
             {std::pair{atLimit, io::kMaxFileBytes}, std::pair{over, io::kMaxFileBytes + 1}}) {
            const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
            QVERIFY(fd >= 0);
            QCOMPARE(::ftruncate(fd, size), 0);
            ::close(fd);
        }
        const auto fits = io::readFile(atLimit);
        QVERIFY2(fits, fits ? "" : fits.error().message.c_str());
        QCOMPARE(std::int64_t(fits->size()), io::kMaxFileBytes);
        const auto big = io::readFile(over);
        QVERIFY(!big);
        QCOMPARE(big.error().code, ErrorCode::BadFile);
        QCOMPARE(big.error().message, over + ": is larger than 64 MiB (67108865 bytes)");
        // Streaming has no size limit: the .npy loader reads large samples this way.
        auto streamed = io::RegularFile::open(over);
        QVERIFY(streamed);
        QCOMPARE(streamed->size(), io::kMaxFileBytes + 1);
    }

    // RegularFile: the header first, then the rest; release hands the descriptor on.
    void streaming() {
        const std::string path = writeFile(m_dir, "stream.bin", "HEADER:payload-bytes");
        auto opened = io::RegularFile::open(path);
        QVERIFY2(opened, opened ? "" : opened.error().message.c_str());
        io::RegularFile file = std::move(opened).value();
        QCOMPARE(file.size(), std::int64_t(20));
        QCOMPARE(file.path(), path);
        char header[7];
        QCOMPARE(file.read(header, sizeof header).value(), sizeof header);
        QCOMPARE(std::string(header, sizeof header), std::string("HEADER:"));
        char rest[64];
        QCOMPARE(file.read(rest, sizeof rest).value(), std::size_t(13)); // short only at the end
        QCOMPARE(std::string(rest, 13), std::string("payload-bytes"));
        QCOMPARE(file.read(rest, sizeof rest).value(), std::size_t(0));
        // The descriptor is blocking again (O_NONBLOCK only guarded the open).
        QCOMPARE(::fcntl(file.fd(), F_GETFL) & O_NONBLOCK, 0);
        const int fd = file.release();
        QCOMPARE(file.fd(), -1);
        QVERIFY(::lseek(fd, 0, SEEK_SET) == 0);
        QCOMPARE(::read(fd, header, 1), ssize_t(1));
        QCOMPARE(header[0], 'H');
        ::close(fd);
    }

    // Each writer refuses every special file with the same one line, and leaves it (and a
    // link's target) exactly as it was; nothing else appears in the folder.
    void writeRefusals_data() {
        QTest::addColumn<QString>("kind");
        for (const QString& kind : test::specialKinds())
            QTest::addRow("%s", qPrintable(kind)) << kind;
    }
    void writeRefusals() {
        QFETCH(QString, kind);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("out.png"));
        if (const QString why = test::makeSpecial(kind, path); !why.isEmpty()) {
            if (kind.contains(QLatin1String("device")) && ::geteuid() != 0)
                QSKIP(qPrintable(why));
            QFAIL(qPrintable(why));
        }
        const QString before = test::describe(path);
        const QStringList entries =
            QDir(dir.path())
                .entryList(QDir::AllEntries | QDir::System | QDir::Hidden | QDir::NoDotAndDotDot);
        const std::string p = path.toStdString();
        const std::string expected = p + ": " + test::specialReason(kind, path).toStdString();
        const Status checked = io::checkWritable(p);
        QVERIFY(!checked);
        QCOMPARE(checked.error().code, ErrorCode::BadFile);
        QCOMPARE(checked.error().message, expected);
        const Status replaced = io::replaceFile(p, "replacement bytes");
        QVERIFY(!replaced);
        QCOMPARE(replaced.error().code, ErrorCode::BadFile);
        QCOMPARE(replaced.error().message, expected);
        // In the test thread: a FIFO opened for writing without O_NONBLOCK would block here.
        const auto appended = io::AppendFile::open(p);
        QVERIFY(!appended);
        QCOMPARE(appended.error().code, ErrorCode::BadFile);
        QCOMPARE(appended.error().message, expected);
        QCOMPARE(test::describe(path), before);
        QCOMPARE(
            QDir(dir.path())
                .entryList(QDir::AllEntries | QDir::System | QDir::Hidden | QDir::NoDotAndDotDot),
            entries);
    }

    void writeRefusesFolderNames() {
        for (const std::string& p : {m_dir.path().toStdString() + "/", std::string("/"),
                                     m_dir.path().toStdString() + "/.."}) {
            const Status replaced = io::replaceFile(p, "x");
            QVERIFY(!replaced);
            QCOMPARE(replaced.error().code, ErrorCode::BadFile);
            QCOMPARE(replaced.error().message, p + ": names a folder, not a file");
        }
        const Status empty = io::replaceFile("", "x");
        QVERIFY(!empty);
        QCOMPARE(empty.error().message, std::string("no file name given"));
    }

    // replaceFile writes the bytes, creates new files as open(2) with 0666 would, and keeps the
    // permission bits of a file it replaces; a file `cp` could not write (a user's 0444 file) is
    // refused with the OS's reason and left alone; root writes it and it stays 0444.
    void replaceKeepsMode_data() {
        QTest::addColumn<int>("mode");
        for (const int mode : {0644, 0600, 0640, 0755, 0444, 0400})
            QTest::addRow("%o", mode) << mode;
    }
    void replaceKeepsMode() {
        QFETCH(int, mode);
        QTemporaryDir dir;
        const std::string path = writeFile(dir, "kept.csv", "the old bytes\n");
        QCOMPARE(::chmod(path.c_str(), mode_t(mode)), 0);
        const bool mayWrite = ::geteuid() == 0 || (mode & 0200);
        const Status written = io::replaceFile(path, "new,bytes\n");
        QCOMPARE(modeOf(path), mode_t(mode));
        if (mayWrite) {
            QVERIFY2(written, written ? "" : written.error().message.c_str());
            QCOMPARE(readAll(path), std::string("new,bytes\n"));
        } else {
            QVERIFY(!written);
            QCOMPARE(written.error().code, ErrorCode::Io);
            QCOMPARE(written.error().message, path + ": " + std::strerror(EACCES));
            QCOMPARE(readAll(path), std::string("the old bytes\n"));
        }
        // No temporary file left behind either way.
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden | QDir::System),
                 QStringList{QStringLiteral("kept.csv")});
        // A new file: 0666 less the umask, as any program's.
        const std::string fresh = dir.filePath(QStringLiteral("fresh.csv")).toStdString();
        QVERIFY(io::replaceFile(fresh, ""));
        QCOMPARE(modeOf(fresh), mode_t(0666 & ~currentUmask()));
        QCOMPARE(readAll(fresh), std::string());
    }

    // A read-only mount: the OS's words, for a file that is there and one that is not, from
    // every writer; the file is untouched.
    void readOnlyMount() {
        test::FullDisk disk;
        if (!disk.ok())
            QSKIP(qPrintable(disk.whyNot()));
        QVERIFY(disk.put(QStringLiteral("there.json"), "{}\n"));
        QVERIFY(disk.makeReadOnly());
        const std::string there = disk.filePath(QStringLiteral("there.json")).toStdString();
        const std::string absent = disk.filePath(QStringLiteral("absent.json")).toStdString();
        const std::string erofs = std::strerror(EROFS);
        QCOMPARE(erofs, std::string("Read-only file system"));
        for (const Status& s : {io::checkWritable(there), io::replaceFile(there, "x")}) {
            QVERIFY(!s);
            QCOMPARE(s.error().code, ErrorCode::Io);
            QCOMPARE(s.error().message, there + ": " + erofs);
        }
        const auto appended = io::AppendFile::open(there);
        QVERIFY(!appended);
        QCOMPARE(appended.error().message, there + ": " + erofs);
        const Status created = io::replaceFile(absent, "x");
        QVERIFY(!created);
        QCOMPARE(created.error().message,
                 absent + ": cannot create a file in " + disk.path().toStdString() + ": " + erofs);
        QCOMPARE(readAll(there), std::string("{}\n"));
    }

    // A full disk: the OS's reason, the original byte for byte, no temporary file.
    void replaceOnFullDisk() {
        test::FullDisk disk;
        if (!disk.ok())
            QSKIP(qPrintable(disk.whyNot()));
        const QByteArray original("the original\n");
        QVERIFY(disk.put(QStringLiteral("t.csv"), original));
        QVERIFY(disk.fill());
        const std::string path = disk.filePath(QStringLiteral("t.csv")).toStdString();
        const Status s = io::replaceFile(path, std::string(10000, 'n'));
        QVERIFY(!s);
        QCOMPARE(s.error().message, path + ": " + std::strerror(ENOSPC));
        QCOMPARE(readAll(path), original.toStdString());
        QCOMPARE(disk.files(), (QStringList{QStringLiteral("filler"), QStringLiteral("t.csv")}));
    }

    // AppendFile appends (never truncates), adds the newline a line lacks, and ends a partial
    // last line left by an earlier run before its first line.
    void appendKeepsWhatWasThere_data() {
        QTest::addColumn<QByteArray>("before"); // "-": no file yet
        QTest::addColumn<QByteArray>("after");
        QTest::addRow("new file") << QByteArray("-") << QByteArray("one\ntwo\n");
        QTest::addRow("empty file") << QByteArray() << QByteArray("one\ntwo\n");
        QTest::addRow("earlier rows")
            << QByteArray("{\"row\": 1}\n") << QByteArray("{\"row\": 1}\none\ntwo\n");
        QTest::addRow("cut-off last row")
            << QByteArray("{\"row\": 1}\n{\"ro") << QByteArray("{\"row\": 1}\n{\"ro\none\ntwo\n");
    }
    void appendKeepsWhatWasThere() {
        QFETCH(QByteArray, before);
        QFETCH(QByteArray, after);
        QTemporaryDir dir;
        std::string path = dir.filePath(QStringLiteral("rows.jsonl")).toStdString();
        if (before != "-")
            path = writeFile(dir, "rows.jsonl", before.toStdString());
        auto opened = io::AppendFile::open(path);
        QVERIFY2(opened, opened ? "" : opened.error().message.c_str());
        QVERIFY(opened->appendLine("one"));
        QVERIFY(opened->appendLine("two\n"));
        QCOMPARE(QByteArray::fromStdString(readAll(path)), after);
    }

    // A line the disk cannot take whole: the OS's reason at once, and the file keeps the whole
    // lines it had, without the part of the line that did fit.
    void appendOnFullDisk() {
        test::FullDisk disk;
        if (!disk.ok())
            QSKIP(qPrintable(disk.whyNot()));
        const QByteArray earlier("{\"row\": 1}\n{\"row\": 2}\n");
        QVERIFY(disk.put(QStringLiteral("rows.jsonl"), earlier));
        QVERIFY(disk.fill());
        // Free one page, so that part of the next line fits and the rest does not.
        const QByteArray filler = QFile::encodeName(disk.filePath(QStringLiteral("filler")));
        struct stat st {};
        QCOMPARE(::stat(filler.constData(), &st), 0);
        QCOMPARE(::truncate(filler.constData(), st.st_size - 4096), 0);
        const std::string path = disk.filePath(QStringLiteral("rows.jsonl")).toStdString();
        auto opened = io::AppendFile::open(path);
        QVERIFY2(opened, opened ? "" : opened.error().message.c_str());
        const Status s = opened->appendLine(std::string(3 * 4096, 'x'));
        QVERIFY(!s);
        QCOMPARE(s.error().code, ErrorCode::Io);
        QCOMPARE(s.error().message, path + ": " + std::strerror(ENOSPC));
        QCOMPARE(QByteArray::fromStdString(readAll(path)), earlier);
        // A line that fits still goes out whole after it.
        QVERIFY(opened->appendLine("{\"row\": 3}"));
        QCOMPARE(QByteArray::fromStdString(readAll(path)), earlier + "{\"row\": 3}\n");
    }

private:
    QTemporaryDir m_dir;
    bool m_made = false;

    void makeSpecialFiles() {
        if (m_made)
            return;
        m_made = true;
        const auto at = [&](const char* name) {
            return m_dir.filePath(QLatin1String(name)).toStdString();
        };
        writeFile(m_dir, "plain.txt", "x");
        QCOMPARE(::mkfifo(at("fifo").c_str(), 0644), 0);
        QCOMPARE(::symlink(at("fifo").c_str(), at("link-to-fifo").c_str()), 0);
        QCOMPARE(::symlink(at("nowhere").c_str(), at("dangling").c_str()), 0);
        QCOMPARE(::symlink(at("loop-b").c_str(), at("loop-a").c_str()), 0);
        QCOMPARE(::symlink(at("loop-a").c_str(), at("loop-b").c_str()), 0);
        // A bound Unix socket leaves a socket file behind.
        const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
        QVERIFY(s >= 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const std::string sock = at("sock");
        QVERIFY(sock.size() < sizeof addr.sun_path);
        std::copy(sock.begin(), sock.end(), addr.sun_path);
        QCOMPARE(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
        ::close(s);
    }
};

QTEST_GUILESS_MAIN(TstFiles)
#include "tst_files.moc"
