// Fuzzes the .npy reader: any bytes give an array or a one-line error; an array that is
// returned holds exactly the elements its shape claims, and survives encode -> parse.
#include "gpu_probe/npy.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto r = kvl::probe::parseNpy(data, size);
    if (auto* a = std::get_if<kvl::probe::NpyArray>(&r)) {
        std::int64_t n = 1;
        for (const auto d : a->shape) {
            if (d < 0)
                std::abort();
            n *= d;
        }
        if (static_cast<std::int64_t>(a->data.size()) != n)
            std::abort();
        if (n <= 4096) {
            const auto bytes = kvl::probe::encodeNpy(a->shape, a->data, false);
            auto again = kvl::probe::parseNpy(bytes.data(), bytes.size());
            auto* b = std::get_if<kvl::probe::NpyArray>(&again);
            if (!b || b->shape != a->shape || b->data.size() != a->data.size())
                std::abort();
        }
        (void)kvl::probe::checkKvShape(*a, 8, 128, "K");
    } else if (std::get<std::string>(r).empty()) {
        std::abort();
    }
    return 0;
}
