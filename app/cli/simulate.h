#pragma once
// kvledger simulate: the traffic simulation of core/sim on one replica of the scenario, as a
// table or a JSON document.

#include "app/cli.h"

#include <ostream>

namespace kvl::app::cli {

// Exit status: 0, 2 for bad input (an option, a trace line), 1 when the scenario cannot be
// simulated (vLLM refuses to start, no paging).
int runSimulate(const Invocation& inv, std::ostream& out, std::ostream& err);

} // namespace kvl::app::cli
