#include "files.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
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

} // namespace

RegularFile::RegularFile(int fd, std::int64_t size, std::string path)
    : m_fd(fd), m_size(size), m_path(std::move(path)) {}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)), m_size(other.m_size), m_path(std::move(other.m_path)) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
    if (this != &other) {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = std::exchange(other.m_fd, -1);
        m_size = other.m_size;
        m_path = std::move(other.m_path);
    }
    return *this;
}

RegularFile::~RegularFile() {
    if (m_fd >= 0)
        ::close(m_fd);
}

int RegularFile::release() {
    return std::exchange(m_fd, -1);
}

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
        const ssize_t r = ::read(m_fd, out + got, n - got);
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

} // namespace kvl::io
