#pragma once
// Hand-built specs the core tests share, so that every test reads the same H100 and the same
// Llama-3.1-8B (no catalog: core's tests do not load resources/).
#include "core/model.h"
#include "core/scenario.h"

namespace kvl::test {

inline core::GpuSpec h100() {
    core::GpuSpec g;
    g.id = "h100-80gb";
    g.name = "H100 SXM 80GB";
    g.vendor = "NVIDIA";
    g.memoryBytes = 85017821184LL;
    g.bandwidthGBs = 3350;
    g.bf16Tflops = 989.5;
    g.fp8Tflops = 1979;
    g.computeCapability = 90;
    return g;
}

// meta-llama/Llama-3.1-8B config.json.
inline core::ModelSpec llama8b() {
    core::ModelSpec m;
    m.id = m.name = "llama-3.1-8b";
    m.layers.assign(32, core::LayerSpec{});
    m.qHeads = 32;
    m.kvHeads = 8;
    m.headDim = 128;
    m.hiddenSize = 4096;
    m.intermediateSize = 14336;
    m.vocabSize = 128256;
    m.params = 8'030'261'248;
    m.maxContext = 131072;
    return m;
}

} // namespace kvl::test
