// Fuzzes HuggingFace config.json import: any bytes must give a model or a one-line error naming
// the file, and a model that is returned must pass validation and go through the ledger.
#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/ledger.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto r = kvl::io::parseHfConfig(text, "config.json");
    if (r) {
        if (r->validate())
            std::abort(); // import must only return usable models
        kvl::core::Scenario s = kvl::io::defaultScenario();
        s.model = r.value();
        s.workload.context = 4096;
        (void)kvl::core::computeLedger(s);
    } else {
        const std::string& m = r.error().message;
        if (m.rfind("config.json: ", 0) != 0 || m.find('\n') != std::string::npos)
            std::abort(); // every error is one line naming the file
    }
    return 0;
}
