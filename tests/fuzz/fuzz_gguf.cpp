// Fuzzes the GGUF header reader: any bytes in a .gguf file give a header or an error of one
// line naming the file; never a crash, a hang or an allocation the file's size cannot justify.
#include "core/io/gguf.h"

#include "fuzz_file.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // The reader takes a path (it streams the file), so each input is written to one.
    static const std::string path = "/tmp/kvl-fuzz-" + std::to_string(getpid()) + ".gguf";
    if (!writeFuzzInput(path, data, size))
        return 0;
    const auto r = kvl::io::readGgufHeader(path);
    if (r) {
        if (r->dataOffset < 0 || r->weightBytes < 0 || r->tensorCount < 0)
            std::abort(); // a header that reads must hold no negative size
    } else {
        const std::string& m = r.error().message;
        if (m.find(path) == std::string::npos || m.find('\n') != std::string::npos) {
            std::fprintf(stderr, "not one line naming the file: %s\n", m.c_str());
            std::abort(); // every error is one line naming the file
        }
    }
    return 0;
}
