#pragma once
// The `vllm serve` command that runs a scenario as the ledger computes it: only flags vLLM
// accepts, each where the scenario needs it, and a note for every lever vLLM has no flag for
// ("not in vLLM": INT4/INT2 KV, attention regrouping, contiguous reservation, ...).

#include "core/scenario.h"

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace kvl::core {

struct VllmServeCommand {
    std::vector<std::string> env;   // "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
    std::vector<std::string> args;  // "vllm", "serve", MODEL, "--kv-cache-dtype", "fp8", ...
    std::vector<std::string> notes; // one sentence per lever without a vLLM equivalent
    // The shell command (one flag per line, values quoted where the shell needs it) plus
    // "# not in vLLM: ..." lines.
    std::string text() const;
};

VllmServeCommand vllmServeCommand(const Scenario& s);

// vLLM's --mamba-cache-mode values by MambaCacheMode, in its order; "auto" is vLLM's own choice
// (the flag left out). The scenario file and the command line read and write the same names.
inline constexpr std::array<std::string_view, 4> kMambaCacheModeNames{"auto", "none", "align",
                                                                      "all"};
inline std::string_view mambaCacheModeName(MambaCacheMode mode) {
    return kMambaCacheModeNames[static_cast<std::size_t>(mode)];
}

// The Hugging Face repository of a model ("meta-llama/Meta-Llama-3-8B"), or its id.
std::string huggingFaceRepo(const ModelSpec& model);

} // namespace kvl::core
