#pragma once
// Why a hybrid model's ladder does not read as a dense model's. Sliding-window (and chunked)
// layers hold a window of tokens, not the whole context, so "KV per token x context" is not the
// per-request figure; and vLLM's paged admission gives every sliding-window group the window
// plus the tokens in flight (vllm/v1/kv_cache_interface.py, SlidingWindowSpec
// .max_memory_usage_bytes), which the contiguous step before it does not hold: "+paging" can
// then lower the figures. The ladder's tooltip and `kvledger ledger` print these lines.

#include "core/ledger.h"
#include "core/units.h"

#include <string>
#include <vector>

namespace kvl::core {

// One sentence each, per GPU; empty for a model whose every layer holds the whole context
// (dense, MLA, or state-only besides full attention). `r` is the scenario's result, `ladder`
// its computeLadder.
std::vector<std::string> hybridLadderNotes(const Scenario& s, const LedgerResult& r,
                                           const std::vector<LadderStep>& ladder,
                                           UnitSystem units = UnitSystem::Binary);

} // namespace kvl::core
