// Fuzzes HuggingFace config.json import: any bytes must give a model or a LoadError, and a
// model that is returned must pass validation and go through the ledger without trouble.
#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/ledger.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto r = kvl::io::parseHfConfig(text, "config.json");
    if (auto* m = std::get_if<kvl::core::ModelSpec>(&r)) {
        if (m->validate())
            std::abort(); // import must only return usable models
        kvl::core::Scenario s = kvl::io::defaultScenario();
        s.model = *m;
        s.workload.context = 4096;
        (void)kvl::core::computeLedger(s);
    } else if (std::get<kvl::io::LoadError>(r).message.empty()) {
        std::abort(); // every error names its problem
    }
    return 0;
}
