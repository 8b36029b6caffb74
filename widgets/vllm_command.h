#pragma once
// The `vllm serve` command equivalent to a scenario, with a comment line for every lever
// vLLM has no flag for (INT8/INT4/INT2 KV, attention regrouping, no paging, ...).

#include "core/scenario.h"

#include <QString>
#include <QStringList>

namespace kvl::widgets {

struct VllmCommand {
    QStringList args;        // "vllm", "serve", MODEL, "--kv-cache-dtype", "fp8", ...
    QStringList unsupported; // one sentence per lever without a vLLM equivalent
    QString text() const;    // the shell command (one flag per line) plus "# ..." notes
};

VllmCommand vllmCommand(const core::Scenario& s);

// The HuggingFace repo of a catalog model ("meta-llama/Meta-Llama-3-8B"), or the id.
// core::ModelSpec carries no hf_repo; read from the catalog JSON compiled into kvl_io.
QString huggingFaceRepo(const core::ModelSpec& model);

} // namespace kvl::widgets
