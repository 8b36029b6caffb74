#include "files.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace kvl::io {

namespace {

// "is a FIFO (named pipe), not a regular file": what the path is instead of a regular file.
std::string notRegular(mode_t mode) {
    const char* what = S_ISDIR(mode)    ? "is a directory"
                       : S_ISFIFO(mode) ? "is a FIFO (named pipe)"
                       : S_ISCHR(mode)  ? "is a character device"
                       : S_ISBLK(mode)  ? "is a block device"
                       : S_ISSOCK(mode) ? "is a socket"
                                        : "is not a file";
    return std::string(what) + ", not a regular file";
}

Error failure(const std::string& path, int err) {
    switch (err) {
    case ENOENT:
    case ENOTDIR:
        return {ErrorCode::NotFound, path + ": no such file"};
    case EACCES:
    case EPERM:
        return {ErrorCode::Io, path + ": permission denied"};
    case ELOOP:
        return {ErrorCode::BadFile, path + ": too many levels of symbolic links (a symbolic link "
                                           "loop)"};
    case ENAMETOOLONG:
        return {ErrorCode::BadFile, path + ": file name too long"};
    default:
        return {ErrorCode::Io, path + ": cannot open: " + std::strerror(err)};
    }
}

// ---- writing helpers ----

// "PATH: No space left on device": the OS's own words for why a write failed.
Error writeError(const std::string& path, int err) {
    return {ErrorCode::Io, path + ": " + std::strerror(err)};
}

// "is a symbolic link (to /dev/null), not a regular file".
Error symlinkRefusal(const std::string& path) {
    std::string text = path + ": is a symbolic link";
    char target[4096];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target);
    if (n > 0 && std::size_t(n) < sizeof target)
        text += " (to " + std::string(target, std::size_t(n)) + ")";
    return {ErrorCode::BadFile, text + ", not a regular file"};
}

// What a writer finds at a path: the folder and the name in it, and the regular file that is
// there (nullopt when there is none yet).
struct Target {
    std::string dir;
    std::string name;
    std::optional<struct stat> existing;
};

// The checks of checkWritable, keeping what they found for replaceFile and AppendFile.
Result<Target> examine(const std::string& path) {
    if (path.empty())
        return Error{ErrorCode::BadInput, "no file name given"};
    Target t;
    const auto slash = path.rfind('/');
    t.dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    t.name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (t.name.empty() || t.name == "." || t.name == "..")
        return Error{ErrorCode::BadFile, path + ": names a folder, not a file"};
    // lstat, not stat: the path itself must be a regular file, never a link to one or to
    // anything else, and nothing about it is opened before it has been looked at.
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return symlinkRefusal(path);
        if (!S_ISREG(st.st_mode))
            return Error{ErrorCode::BadFile, path + ": " + notRegular(st.st_mode)};
        // Decided as for `cp` onto the file: the effective ids, so root may write a 0444 file
        // and a user gets EACCES; a read-only mount gives EROFS whoever asks.
        if (::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) != 0)
            return writeError(path, errno);
        t.existing = st;
    } else if (errno != ENOENT) {
        return writeError(path, errno); // ENOTDIR, ELOOP in a folder, ENAMETOOLONG, EACCES
    }
    // The file is created (or replaced) in its folder, which must take a new entry.
    if (::faccessat(AT_FDCWD, t.dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
        const int err = errno;
        return Error{ErrorCode::Io,
                     path + ": cannot create a file in " + t.dir + ": " + std::strerror(err)};
    }
    return t;
}

// ".a.png.kvl-1f3a-2": a name for the temporary file beside `name`, unlikely to be taken (the
// caller retries on EEXIST).
std::string temporaryName(const std::string& name) {
    static std::atomic<unsigned> counter{0};
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    char tail[64];
    std::snprintf(tail, sizeof tail, ".kvl-%lx-%llx-%x", static_cast<unsigned long>(::getpid()),
                  static_cast<unsigned long long>(now), counter.fetch_add(1));
    return "." + name + tail;
}

} // namespace

OwnedFd& OwnedFd::operator=(OwnedFd&& other) noexcept {
    if (this != &other) {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = other.release();
    }
    return *this;
}

OwnedFd::~OwnedFd() {
    if (m_fd >= 0)
        ::close(m_fd);
}

int OwnedFd::release() {
    return std::exchange(m_fd, -1);
}

int OwnedFd::close() {
    const int rc = ::close(release());
    return rc == 0 ? 0 : errno;
}

RegularFile::RegularFile(int fd, std::int64_t size, std::string path)
    : m_fd(fd), m_size(size), m_path(std::move(path)) {}

Result<RegularFile> RegularFile::open(const std::string& path) {
    // stat first: a FIFO, device or directory is refused without being opened at all (opening
    // a FIFO for reading blocks until a writer appears).
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        const int err = errno;
        struct stat link {};
        if (err == ENOENT && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
            return Error{ErrorCode::NotFound,
                         path + ": no such file (a symbolic link to a missing file)"};
        return failure(path, err);
    }
    if (!S_ISREG(st.st_mode))
        return Error{ErrorCode::BadFile, path + ": " + notRegular(st.st_mode)};
    // The path may have been swapped for a FIFO since the stat: O_NONBLOCK makes that open
    // return at once instead of waiting for a writer, and fstat on the descriptor decides.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return failure(path, errno);
    RegularFile file(fd, 0, path);
    if (::fstat(fd, &st) != 0)
        return Error{ErrorCode::Io, path + ": cannot read: " + std::strerror(errno)};
    if (!S_ISREG(st.st_mode))
        return Error{ErrorCode::BadFile, path + ": " + notRegular(st.st_mode)};
    // Regular files ignore O_NONBLOCK; clear it so the descriptor behaves as a plain one when
    // handed on (release()).
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0)
        (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    file.m_size = static_cast<std::int64_t>(st.st_size);
    return file;
}

Result<std::size_t> RegularFile::read(void* buffer, std::size_t n) {
    auto* out = static_cast<char*>(buffer);
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::read(m_fd.get(), out + got, n - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return Error{ErrorCode::Io, m_path + ": read error: " + std::strerror(errno)};
        }
        if (r == 0)
            break; // end of file
        got += static_cast<std::size_t>(r);
    }
    return got;
}

Result<std::string> readFile(const std::string& path) {
    auto opened = RegularFile::open(path);
    if (!opened)
        return opened.error();
    RegularFile& file = opened.value();
    const std::int64_t size = file.size();
    if (size > kMaxFileBytes)
        return Error{ErrorCode::BadFile, path + ": is larger than " + kMaxFileBytesText + " (" +
                                             std::to_string(size) + " bytes)"};
    std::string text;
    try {
        // One byte more than the size, to notice a file that grew after the fstat.
        text.resize(static_cast<std::size_t>(size) + 1);
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::OutOfMemory,
                     path + ": out of memory reading " + std::to_string(size) + " bytes"};
    }
    auto got = file.read(text.data(), text.size());
    if (!got)
        return got.error();
    if (*got > static_cast<std::size_t>(size))
        return Error{ErrorCode::Io, path + ": changed while it was read (it grew)"};
    text.resize(*got);
    return text;
}

// ---- writing ----

Status checkWritable(const std::string& path) {
    auto target = examine(path);
    if (!target)
        return target.error();
    return {};
}

Status replaceFile(const std::string& path, std::string_view bytes) {
    auto examined = examine(path);
    if (!examined)
        return examined.error();
    const Target& t = *examined;
    OwnedFd dir(::open(t.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0)
        return writeError(path, errno);

    // An unnamed file (O_TMPFILE, Linux 3.11; open(2)) vanishes by itself if the process dies
    // before it is linked. File systems without it get a named temporary file, removed on
    // failure.
    OwnedFd file(::openat(dir.get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666));
    std::string tempName; // the temporary file's name in the folder, once it has one
    if (file.get() < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        for (int attempt = 0; attempt < 100 && file.get() < 0; ++attempt) {
            const std::string candidate = temporaryName(t.name);
            file = OwnedFd(::openat(dir.get(), candidate.c_str(),
                                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
            if (file.get() >= 0)
                tempName = candidate;
            else if (errno != EEXIST)
                break;
        }
    }
    if (file.get() < 0)
        return writeError(path, errno); // EROFS, EACCES, ENOSPC (no inode left), EDQUOT
    auto fail = [&](int err) {
        if (!tempName.empty())
            ::unlinkat(dir.get(), tempName.c_str(), 0);
        return writeError(path, err);
    };

    if (t.existing) {
        // Keep the replaced file's owner (root writing another user's file, as `cp` onto it
        // keeps it) and permission bits (the set-id bits are not carried onto an export).
        struct stat mine {};
        if (::fstat(file.get(), &mine) != 0)
            return fail(errno);
        if (::geteuid() == 0 &&
            (mine.st_uid != t.existing->st_uid || mine.st_gid != t.existing->st_gid))
            if (::fchown(file.get(), t.existing->st_uid, t.existing->st_gid) != 0)
                return fail(errno);
        if (::fchmod(file.get(), t.existing->st_mode & 0777) != 0)
            return fail(errno);
    }
    for (std::size_t done = 0; done < bytes.size();) {
        const ssize_t n = ::write(file.get(), bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return fail(n < 0 ? errno : EIO);
        done += std::size_t(n);
    }
    // Data that never reached the disk (a full disk seen only at writeback, NFS) fails here,
    // before the file replaces anything.
    if (::fsync(file.get()) != 0)
        return fail(errno);
    if (tempName.empty()) {
        // Give the unnamed file a name beside the target (open(2)'s O_TMPFILE example), then
        // rename it over the target: rename(2) replaces the entry atomically.
        const std::string self = "/proc/self/fd/" + std::to_string(file.get());
        for (int attempt = 0; attempt < 100 && tempName.empty(); ++attempt) {
            const std::string candidate = temporaryName(t.name);
            if (::linkat(AT_FDCWD, self.c_str(), dir.get(), candidate.c_str(), AT_SYMLINK_FOLLOW) ==
                    0 ||
                // Without /proc: AT_EMPTY_PATH, which needs CAP_DAC_READ_SEARCH (linkat(2)).
                (errno == ENOENT &&
                 ::linkat(file.get(), "", dir.get(), candidate.c_str(), AT_EMPTY_PATH) == 0))
                tempName = candidate;
            else if (errno != EEXIST)
                return fail(errno);
        }
        if (tempName.empty())
            return fail(EEXIST);
    }
    if (const int err = file.close(); err != 0)
        return fail(err);
    // The path may have become a link or a FIFO while the bytes were written: look again
    // just before the rename (which replaces the entry itself and never follows a link).
    struct stat now {};
    if (::lstat(path.c_str(), &now) == 0 && (S_ISLNK(now.st_mode) || !S_ISREG(now.st_mode))) {
        ::unlinkat(dir.get(), tempName.c_str(), 0);
        return S_ISLNK(now.st_mode)
                   ? symlinkRefusal(path)
                   : Error{ErrorCode::BadFile, path + ": " + notRegular(now.st_mode)};
    }
    if (::renameat(dir.get(), tempName.c_str(), dir.get(), t.name.c_str()) != 0)
        return fail(errno);
    return {};
}

AppendFile::AppendFile(int fd, std::string path, bool needsNewline)
    : m_fd(fd), m_path(std::move(path)), m_needsNewline(needsNewline) {}

Result<AppendFile> AppendFile::open(const std::string& path) {
    auto examined = examine(path);
    if (!examined)
        return examined.error();
    // O_NOFOLLOW: a link put in its place since the lstat is refused (ELOOP), not followed.
    // O_NONBLOCK: a FIFO put there returns at once (ENXIO without a reader) instead of blocking
    // the open until a reader comes; fstat then refuses whatever is not a regular file.
    const int fd = ::open(
        path.c_str(),
        O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
    if (fd < 0) {
        const int err = errno;
        if (err == ELOOP)
            return symlinkRefusal(path);
        struct stat now {};
        if (err == ENXIO && ::lstat(path.c_str(), &now) == 0 && !S_ISREG(now.st_mode))
            return Error{ErrorCode::BadFile, path + ": " + notRegular(now.st_mode)};
        return writeError(path, err);
    }
    AppendFile file(fd, path, false);
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        return writeError(path, errno);
    if (!S_ISREG(st.st_mode))
        return Error{ErrorCode::BadFile, path + ": " + notRegular(st.st_mode)};
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0)
        (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    if (st.st_size > 0) {
        // The last byte, through a descriptor of its own (this one is write-only; a file that
        // cannot be read is taken to end its last line).
        OwnedFd reader(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        char last = '\n';
        if (reader.get() >= 0 && ::pread(reader.get(), &last, 1, st.st_size - 1) == 1)
            file.m_needsNewline = last != '\n';
    }
    return file;
}

Status AppendFile::appendLine(std::string_view line) {
    std::string bytes;
    bytes.reserve(line.size() + 2);
    if (m_needsNewline)
        bytes += '\n'; // end the partial line a run killed mid-write left, not glue onto it
    bytes += line;
    if (bytes.empty() || bytes.back() != '\n')
        bytes += '\n';
    struct stat before {};
    if (::fstat(m_fd.get(), &before) != 0)
        return writeError(m_path, errno);
    // One write() for the line; a short one (the disk filled mid-line) is continued, and the
    // write that fails gives the reason.
    for (std::size_t done = 0; done < bytes.size();) {
        const ssize_t n = ::write(m_fd.get(), bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            const int err = n < 0 ? errno : EIO;
            // Cut the part of the line that did go out: the file keeps whole lines only.
            (void)::ftruncate(m_fd.get(), before.st_size);
            return writeError(m_path, err);
        }
        done += std::size_t(n);
    }
    m_needsNewline = false;
    return {};
}

} // namespace kvl::io
