// Fuzzes scenario-file loading: any bytes give a scenario or an error; a loaded scenario
// survives a save/load round trip unchanged and goes through the ledger.
#include "core/io/scenario_file.h"
#include "core/ledger.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto r = kvl::io::scenarioFromJson(text, "fuzz.kvl.json");
    if (auto* s = std::get_if<kvl::core::Scenario>(&r)) {
        (void)kvl::core::computeLedger(*s);
        (void)kvl::core::computeSweep(*s, 2);
        auto again = kvl::io::scenarioFromJson(kvl::io::scenarioToJson(*s), "again");
        auto* s2 = std::get_if<kvl::core::Scenario>(&again);
        if (!s2 || !(s2->levers == s->levers && s2->workload == s->workload &&
                     s2->hardware == s->hardware && s2->model.layers == s->model.layers))
            std::abort(); // what we write, we must read back identically
    }
    return 0;
}
