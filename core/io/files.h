#pragma once
// The one way KV Ledger opens a file it reads: config.json, catalogs, scenario files, probe
// results and .npy samples all come through here, so that a FIFO, a device, a directory or a
// symbolic link loop is refused at once (never opened in a blocking way) and no file larger
// than one limit is read whole.
//
// And the one way KV Ledger and kvprobe write one (replaceFile, AppendFile; the Qt exports reach
// replaceFile through widgets::writeFileAtomically): a path that exists must be a regular file.
// A device node, FIFO, socket or directory is refused before anything is opened, and so is a
// symbolic link, whatever it points to: replacing through it once turned `ln -s /dev/null x.png`
// into a regular file where /dev/null was. Every refusal and failure is one line naming the
// path and, where the OS said why, its reason (strerror: "Read-only file system", "No space
// left on device").
//
// Built as its own small library (kvl_files) with no JSON and no Qt dependency, so that
// kvprobe links it in the probe-only build of the GPU machine as well. POSIX only (Linux):
// that is where KV Ledger and kvprobe run.

#include "core/result.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvl::io {

// The largest file read whole (readFile): far above any real config.json (< 100 KiB), scenario
// file (a few KiB), catalog or probe results file (a few MiB), small enough to hold in memory
// at once. Larger inputs (.npy samples) are streamed through RegularFile instead.
inline constexpr std::int64_t kMaxFileBytes = std::int64_t{64} << 20;
inline constexpr const char* kMaxFileBytesText = "64 MiB";

// An open file descriptor (or none, -1), closed on destruction and when another is moved into
// it. Move-only: the one owner of a descriptor, for RegularFile, AppendFile and replaceFile.
class OwnedFd {
public:
    OwnedFd() = default;
    explicit OwnedFd(int fd) : m_fd(fd) {}
    OwnedFd(OwnedFd&& other) noexcept : m_fd(other.release()) {}
    OwnedFd& operator=(OwnedFd&& other) noexcept;
    ~OwnedFd();

    int get() const { return m_fd; }
    // Gives up ownership of the descriptor (the caller closes it); this object becomes empty.
    int release();
    // Closes now and reports close()'s own error (0 or errno).
    int close();

private:
    int m_fd = -1;
};

// A regular file opened for reading after the checks readFile makes. Move-only; closes its
// descriptor on destruction.
class RegularFile {
public:
    // Refuses, with one line naming `path`: no such file (NotFound), permission denied (Io),
    // a symbolic link loop (BadFile), anything but a regular file (BadFile). Nothing is read;
    // no size limit applies.
    static Result<RegularFile> open(const std::string& path);

    int fd() const { return m_fd.get(); }
    std::int64_t size() const { return m_size; } // at open time
    const std::string& path() const { return m_path; }

    // Reads up to `n` bytes, fewer only at the end of the file (retries short reads and
    // EINTR). Returns the count; an I/O error names the file.
    Result<std::size_t> read(void* buffer, std::size_t n);

    // Gives up ownership of the descriptor (the caller closes it); this object becomes empty.
    int release() { return m_fd.release(); }

private:
    RegularFile(int fd, std::int64_t size, std::string path);
    OwnedFd m_fd;
    std::int64_t m_size = 0;
    std::string m_path;
};

// The whole file as bytes, after RegularFile::open's checks and a size check against
// kMaxFileBytes ("...: is larger than 64 MiB (N bytes)", BadFile). A file that grows while it
// is read is refused rather than read in part.
Result<std::string> readFile(const std::string& path);

// ---- writing -------------------------------------------------------------------------------

// Whether `path` may be written, checked before any work is done (a command checks its output
// paths before it renders anything). Absent (the folder is checked when the file is created),
// or a regular file that this process may write: what `cp` decides for the same file, so a
// 0444 file is refused for a user ("Permission denied") and written by root.
// Refusals, one line "PATH: reason":
//   BadFile  a symbolic link ("is a symbolic link (to /dev/null), not a regular file"), a
//            directory, FIFO, character or block device or socket ("is a FIFO (named pipe), not
//            a regular file"), or a path ending in '/';
//   Io       the OS's reason it cannot be written (strerror of access(2): "Permission denied",
//            "Read-only file system").
Status checkWritable(const std::string& path);

// Replaces `path` with `bytes`, or leaves it exactly as it was. After checkWritable, the bytes go
// to an unnamed temporary file in the same folder (O_TMPFILE; a named one where the file system
// has none), every write() and the fsync() checked, and only a complete file is renamed over
// `path`: a full disk, a kill or a failed write never truncates what was there, and leaves no
// temporary file behind. A file that is replaced keeps its permission bits (and, written by
// root, its owner), as `cp` onto it would. Errors: checkWritable's, or Io "PATH: strerror".
Status replaceFile(const std::string& path, std::string_view bytes);

// A regular file that lines are appended to as they are produced (kvprobe bench --jsonl): the
// file is never truncated, each line goes out in one write() and is checked at once, and a line
// the disk could not take whole is cut off again, so the file holds whole lines only. Move-only;
// closes its descriptor on destruction.
class AppendFile {
public:
    // Creates the file (mode 0666 less the umask) or opens it to append. Refuses what
    // checkWritable refuses, without opening a special file (a FIFO would block the open), and
    // opens with O_NOFOLLOW | O_NONBLOCK so that a path swapped for a link or a FIFO meanwhile
    // is refused too. An existing file whose last line lacks its newline gets one first.
    static Result<AppendFile> open(const std::string& path);

    // Appends `line` (a '\n' is added when it lacks one). On a failure (Io "PATH: strerror")
    // the file is cut back to its length before the call.
    Status appendLine(std::string_view line);

    const std::string& path() const { return m_path; }

private:
    AppendFile(int fd, std::string path, bool needsNewline);
    OwnedFd m_fd;
    std::string m_path;
    bool m_needsNewline = false; // the existing file ended in a partial line
};

} // namespace kvl::io
