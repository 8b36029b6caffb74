// Fuzzes loadNpy on files: each input is written to a file, and the file reader must agree with
// the in-memory parser exactly (the same array, or the same error after "PATH: "), although it
// reads the header first, checks the size and then streams the data in pieces.
#include "gpu_probe/io/npy.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

const std::string& scratchPath() {
    static const std::string path = [] {
        const char* dir = std::getenv("TMPDIR");
        return std::string(dir && *dir ? dir : "/tmp") + "/kvl-fuzz-npy-" +
               std::to_string(::getpid()) + ".npy";
    }();
    return path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = scratchPath();
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (!file)
        std::abort();
    if (size && std::fwrite(data, 1, size, file) != size)
        std::abort();
    std::fclose(file);
    const auto fromFile = kvl::probe::loadNpy(path);
    const auto inMemory = kvl::probe::parseNpy(data, size);
    if (fromFile.ok() != inMemory.ok())
        std::abort();
    if (fromFile) {
        if (fromFile->shape != inMemory->shape || fromFile->itemBytes != inMemory->itemBytes ||
            fromFile->data.size() != inMemory->data.size())
            std::abort();
        for (std::size_t i = 0; i < fromFile->data.size(); ++i) // NaN-safe: compare the bits
            if (std::memcmp(&fromFile->data[i], &inMemory->data[i], 4) != 0)
                std::abort();
    } else {
        // "npy: <what>" in memory, "<path>: <what>" from the file
        const std::string& memory = inMemory.error().message;
        const std::string& disk = fromFile.error().message;
        if (fromFile.error().code != kvl::ErrorCode::BadFile || memory.rfind("npy: ", 0) != 0 ||
            disk != path + ": " + memory.substr(5))
            std::abort();
    }
    return 0;
}
