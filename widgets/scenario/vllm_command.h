#pragma once
// The `vllm serve` command for a scenario (core::vllmServeCommand) as Qt strings.

#include "core/scenario.h"

#include <QString>
#include <QStringList>

namespace kvl::widgets {

struct VllmCommand {
    QStringList env;         // "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
    QStringList args;        // "vllm", "serve", MODEL, "--kv-cache-dtype", "fp8", ...
    QStringList unsupported; // one sentence per lever not in vLLM
    QString text() const;    // the shell command (one flag per line) plus "# ..." notes
};

VllmCommand vllmCommand(const core::Scenario& s);

// The Hugging Face repository of a model ("meta-llama/Meta-Llama-3-8B"), or its id.
QString huggingFaceRepo(const core::ModelSpec& model);

} // namespace kvl::widgets
