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
    if (r) {
        const kvl::core::Scenario& s = r.value();
        (void)kvl::core::computeLedger(s);
        (void)kvl::core::computeSweep(s, 2);
        auto again = kvl::io::scenarioFromJson(kvl::io::scenarioToJson(s), "again");
        if (!again || !(again->levers == s.levers && again->workload == s.workload &&
                        again->hardware == s.hardware && again->model.layers == s.model.layers))
            std::abort(); // what we write, we must read back identically
    } else {
        const std::string& m = r.error().message;
        if (m.rfind("fuzz.kvl.json: ", 0) != 0 || m.find('\n') != std::string::npos)
            std::abort(); // every error is one line naming the file
    }
    return 0;
}
