// Fuzzes io::parseJson, the bounded nlohmann-json parse every reader starts with: any bytes
// give a document or a one-line error naming the file; a document that is returned dumps and
// parses back to the same value (the SAX builder keeps every value where it belongs).
#include "core/io/json.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto r = kvl::io::parseJson(text, "fuzz.json");
    if (!r) {
        const std::string& e = r.error().message;
        if (e.rfind("fuzz.json: ", 0) != 0 || e.find('\n') != std::string::npos)
            std::abort(); // errors are one line and name the file
        return 0;
    }
    const std::string again = kvl::io::dumpJson(r.value(), -1);
    auto back = kvl::io::parseJson(again, "again.json");
    if (!back || back.value() != r.value())
        std::abort(); // what nlohmann writes, we must read back identically
    return 0;
}
