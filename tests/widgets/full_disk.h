#pragma once
// A real full disk for the save and export tests: a 64 KiB tmpfs the test mounts over a
// temporary directory (mount -t tmpfs -o size=64k tmpfs DIR), a file put there first, then
// the rest filled to the brim so that not one more byte fits. Mounting needs root or
// CAP_SYS_ADMIN (CI runs as root); where it is not allowed the test skips, saying why. The same
// mount, remounted read-only, is the read-only file system of the write tests.

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QString>
#include <QTemporaryDir>

#include <cerrno>
#include <cstring>

#ifdef Q_OS_LINUX
#include <sys/mount.h>
#endif

namespace kvl::test {

class FullDisk {
public:
    FullDisk() {
#ifdef Q_OS_LINUX
        if (!m_dir.isValid()) {
            m_why = QStringLiteral("no temporary directory");
            return;
        }
        const QByteArray where = QFile::encodeName(m_dir.path());
        if (::mount("tmpfs", where.constData(), "tmpfs", 0, "size=64k") != 0) {
            m_why = QStringLiteral("cannot mount a 64 KiB tmpfs to fill (needs root or "
                                   "CAP_SYS_ADMIN): %1")
                        .arg(QString::fromLocal8Bit(std::strerror(errno)));
            return;
        }
        m_mounted = true;
#else
        m_why = QStringLiteral("mounting a tmpfs needs Linux");
#endif
    }
    ~FullDisk() {
#ifdef Q_OS_LINUX
        if (m_mounted)
            ::umount2(QFile::encodeName(m_dir.path()).constData(), MNT_DETACH);
#endif
    }
    FullDisk(const FullDisk&) = delete;
    FullDisk& operator=(const FullDisk&) = delete;

    bool ok() const {
        return m_mounted;
    }
    QString whyNot() const {
        return m_why;
    }
    QString path() const {
        return m_dir.path();
    }
    QString filePath(const QString& name) const {
        return m_dir.filePath(name);
    }

    // Writes a file before the disk is filled (the "original" a failed save must keep).
    bool put(const QString& name, const QByteArray& bytes) const {
        QFile f(filePath(name));
        return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size() && f.flush();
    }

    // Remounts the file system read-only (after put()): every write then fails with EROFS.
    bool makeReadOnly() const {
#ifdef Q_OS_LINUX
        return m_mounted && ::mount("tmpfs", QFile::encodeName(m_dir.path()).constData(), "tmpfs",
                                    MS_REMOUNT | MS_RDONLY, "size=64k") == 0;
#else
        return false;
#endif
    }

    // Grows a file named "filler" until the file system refuses a single byte more.
    bool fill() const {
        QFile f(filePath(QStringLiteral("filler")));
        if (!f.open(QIODevice::WriteOnly | QIODevice::Unbuffered))
            return false;
        const QByteArray page(4096, 'f');
        while (f.write(page) == page.size()) {
        }
        while (f.write("f", 1) == 1) {
        }
        f.close();
        // Nothing fits any more: a new file cannot take its first byte.
        QFile probe(filePath(QStringLiteral("probe")));
        const bool full =
            probe.open(QIODevice::WriteOnly | QIODevice::Unbuffered) && probe.write("p", 1) != 1;
        probe.remove();
        return full;
    }

    // The files there, sorted: a failed save must leave no temporary file behind.
    QStringList files() const {
        return QDir(path()).entryList(QDir::Files | QDir::Hidden, QDir::Name);
    }

private:
    QTemporaryDir m_dir;
    bool m_mounted = false;
    QString m_why;
};

} // namespace kvl::test
