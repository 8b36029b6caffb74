#pragma once
// For the fuzz targets whose reader takes a path (it streams the file): writes one input to
// `path`, false when that fails (the input is then skipped).
#include <cstdint>
#include <cstdio>
#include <string>

inline bool writeFuzzInput(const std::string& path, const std::uint8_t* data, std::size_t size) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f)
        return false;
    const bool written = size == 0 || std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && written;
}
