// Fuzzes the traffic simulation's trace reader: any bytes in a trace file give requests in
// arrival order, or stop with one line naming the file and the line; never a crash.
#include "core/io/trace.h"

#include "fuzz_file.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // JSONL or CSV is told apart by the name and the first line: alternate the two names.
    static int n = 0;
    const std::string path =
        "/tmp/kvl-fuzz-" + std::to_string(getpid()) + ((n++ % 2) != 0 ? ".csv" : ".jsonl");
    if (!writeFuzzInput(path, data, size))
        return 0;
    auto src = kvl::io::TraceSource::open(path);
    if (!src) {
        if (src.error().message.find('\n') != std::string::npos)
            std::abort();
        return 0;
    }
    kvl::core::sim::ArrivingRequest req;
    double last = 0;
    while ((*src)->next(req)) {
        if (req.arrivalS < last || req.promptTokens < 1 || req.outputTokens < 1)
            std::abort(); // what the reader hands on is checked
        last = req.arrivalS;
    }
    const std::string e = (*src)->error();
    if (!e.empty() && (e.find('\n') != std::string::npos || e.find(path) == std::string::npos))
        std::abort(); // one line naming the file
    return 0;
}
