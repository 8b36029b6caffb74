#pragma once
// The one way KV Ledger opens a file it reads: config.json, catalogs, scenario files, probe
// results and .npy samples all come through here, so that a FIFO, a device, a directory or a
// symbolic link loop is refused at once (never opened in a blocking way) and no file larger
// than one limit is read whole.
//
// Built as its own small library (kvl_files) with no JSON and no Qt dependency, so that
// kvprobe links it in the probe-only build of the GPU machine as well. POSIX only (Linux):
// that is where KV Ledger and kvprobe run.

#include "core/result.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvl::io {

// The largest file read whole (readFile): far above any real config.json (< 100 KiB), scenario
// file (a few KiB), catalog or probe results file (a few MiB), small enough to hold in memory
// at once. Larger inputs (.npy samples) are streamed through RegularFile instead.
inline constexpr std::int64_t kMaxFileBytes = std::int64_t{64} << 20;
inline constexpr const char* kMaxFileBytesText = "64 MiB";

// A regular file opened for reading after the checks readFile makes. Move-only; closes its
// descriptor on destruction.
class RegularFile {
public:
    // Refuses, with one line naming `path`: no such file (NotFound), permission denied (Io),
    // a symbolic link loop (BadFile), anything but a regular file (BadFile). Nothing is read;
    // no size limit applies.
    static Result<RegularFile> open(const std::string& path);

    RegularFile(RegularFile&& other) noexcept;
    RegularFile& operator=(RegularFile&& other) noexcept;
    RegularFile(const RegularFile&) = delete;
    RegularFile& operator=(const RegularFile&) = delete;
    ~RegularFile();

    int fd() const { return m_fd; }
    std::int64_t size() const { return m_size; } // at open time
    const std::string& path() const { return m_path; }

    // Reads up to `n` bytes, fewer only at the end of the file (retries short reads and
    // EINTR). Returns the count; an I/O error names the file.
    Result<std::size_t> read(void* buffer, std::size_t n);

    // Gives up ownership of the descriptor (the caller closes it); this object becomes empty.
    int release();

private:
    RegularFile(int fd, std::int64_t size, std::string path);
    int m_fd = -1;
    std::int64_t m_size = 0;
    std::string m_path;
};

// The whole file as bytes, after RegularFile::open's checks and a size check against
// kMaxFileBytes ("...: is larger than 64 MiB (N bytes)", BadFile). A file that grows while it
// is read is refused rather than read in part.
Result<std::string> readFile(const std::string& path);

} // namespace kvl::io
