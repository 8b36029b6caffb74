#pragma once
// The things a writer must refuse and leave exactly as they were (issue 32, item 1): a device
// node, a FIFO, a socket, a directory, and symbolic links to a FIFO, a device node, a regular
// file or nothing. Each is made inside the test's own temporary directory: a link points at a
// FIFO or device node made beside it, never at the machine's /dev/null (an export that followed
// it once replaced /dev/null). A device node needs root (mknod(2) wants CAP_MKNOD); where the
// test is not root, makeSpecial says so and the caller skips with that message.

#include <QByteArray>
#include <QFile>
#include <QString>
#include <QStringList>

#include <cerrno>
#include <cstring>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

namespace kvl::test {

// The kinds, for data-driven tests.
inline QStringList specialKinds() {
    return {QStringLiteral("fifo"),         QStringLiteral("device"),
            QStringLiteral("socket"),       QStringLiteral("directory"),
            QStringLiteral("link-to-fifo"), QStringLiteral("link-to-device"),
            QStringLiteral("link-to-file"), QStringLiteral("dangling-link")};
}

// What a kind's refusal says after "PATH: ".
inline QString specialReason(const QString& kind, const QString& path) {
    if (kind == QLatin1String("fifo"))
        return QStringLiteral("is a FIFO (named pipe), not a regular file");
    if (kind == QLatin1String("device"))
        return QStringLiteral("is a character device, not a regular file");
    if (kind == QLatin1String("socket"))
        return QStringLiteral("is a socket, not a regular file");
    if (kind == QLatin1String("directory"))
        return QStringLiteral("is a directory, not a regular file");
    return QStringLiteral("is a symbolic link (to %1.target), not a regular file").arg(path);
}

namespace detail {
inline QByteArray enc(const QString& path) {
    return QFile::encodeName(path);
}
inline QString fail(const char* what, const QString& path) {
    return QStringLiteral("%1 %2: %3")
        .arg(QLatin1String(what), path, QString::fromLocal8Bit(std::strerror(errno)));
}
inline QString makeNode(const QString& kind, const QString& path) {
    const QByteArray p = enc(path);
    if (kind == QLatin1String("fifo"))
        return ::mkfifo(p.constData(), 0644) == 0 ? QString() : fail("mkfifo", path);
    if (kind == QLatin1String("device")) {
        if (::geteuid() != 0)
            return QStringLiteral("making a device node needs root (mknod); not root here");
        // The same node as /dev/null (character 1:3), made in the test's directory.
        return ::mknod(p.constData(), S_IFCHR | 0666, makedev(1, 3)) == 0 ? QString()
                                                                          : fail("mknod", path);
    }
    if (kind == QLatin1String("file")) {
        QFile f(path);
        return f.open(QIODevice::WriteOnly) && f.write("the link's target\n") == 18
                   ? QString()
                   : QStringLiteral("cannot write ") + path;
    }
    if (kind == QLatin1String("directory"))
        return ::mkdir(p.constData(), 0755) == 0 ? QString() : fail("mkdir", path);
    if (kind == QLatin1String("socket")) {
        const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        if (s < 0 || std::size_t(p.size()) >= sizeof addr.sun_path)
            return QStringLiteral("cannot make a socket at ") + path;
        std::memcpy(addr.sun_path, p.constData(), std::size_t(p.size()));
        const bool bound = ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        ::close(s);
        return bound ? QString() : fail("bind", path);
    }
    return QStringLiteral("unknown kind ") + kind;
}
} // namespace detail

// Makes `kind` at `path` (a link's target is `path` + ".target"). Empty on success, else why
// not (the caller skips with it when it is the lack of root, fails otherwise).
inline QString makeSpecial(const QString& kind, const QString& path) {
    if (!kind.startsWith(QLatin1String("link-to-")) && kind != QLatin1String("dangling-link"))
        return detail::makeNode(kind, path);
    const QString target = path + QStringLiteral(".target");
    if (kind != QLatin1String("dangling-link"))
        if (QString why = detail::makeNode(kind.mid(8), target); !why.isEmpty())
            return why;
    return ::symlink(detail::enc(target).constData(), detail::enc(path).constData()) == 0
               ? QString()
               : detail::fail("symlink", path);
}

// Everything that would show a change: the type, mode and device numbers, a link's target and
// what that target is, a regular file's bytes, a directory's entries.
inline QString describe(const QString& path) {
    struct stat st {};
    if (::lstat(detail::enc(path).constData(), &st) != 0)
        return QStringLiteral("absent");
    QString d = QStringLiteral("mode %1 rdev %2:%3")
                    .arg(st.st_mode, 0, 8)
                    .arg(major(st.st_rdev))
                    .arg(minor(st.st_rdev));
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        const ssize_t n = ::readlink(detail::enc(path).constData(), target, sizeof target);
        const QString t = QFile::decodeName(QByteArray(target, n > 0 ? int(n) : 0));
        d += QStringLiteral(" -> %1 [%2]").arg(t, describe(t));
    } else if (S_ISREG(st.st_mode)) {
        QFile f(path);
        d += QStringLiteral(" bytes ") +
             QString::fromLatin1(f.open(QIODevice::ReadOnly) ? f.readAll().toHex() : "?");
    } else if (S_ISDIR(st.st_mode)) {
        // An entry made inside it changes its modification time.
        d += QStringLiteral(" mtime %1.%2").arg(st.st_mtim.tv_sec).arg(st.st_mtim.tv_nsec);
    }
    return d;
}

} // namespace kvl::test
