// Fuzzes the .npy reader: any bytes give an array or a one-line BadFile error; an array that is
// returned holds exactly the elements its shape claims, and survives encode -> parse.
#include "gpu_probe/io/npy.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto r = kvl::probe::parseNpy(data, size);
    if (r) {
        std::int64_t n = 1;
        for (const auto d : r->shape) {
            if (d < 0)
                std::abort();
            n *= d;
        }
        if (static_cast<std::int64_t>(r->data.size()) != n)
            std::abort();
        if (n <= 4096) {
            const auto bytes = kvl::probe::encodeNpy(r->shape, r->data, false);
            auto again = kvl::probe::parseNpy(bytes.data(), bytes.size());
            if (!again || again->shape != r->shape || again->data.size() != r->data.size())
                std::abort();
        }
        (void)kvl::probe::checkKvShape(*r, 8, 128, "K");
    } else if (r.error().message.empty() || r.error().code != kvl::ErrorCode::BadFile ||
               r.error().message.find('\n') != std::string::npos) {
        std::abort();
    }
    return 0;
}
