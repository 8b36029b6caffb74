#pragma once
// The model catalog without a JSON reader: resources/models.json as a C++ table generated at
// configure time (model_table.cmake, CMake's string(JSON)), for kvprobe, which builds on a GPU
// machine that has no JSON library. The explorer reads the same file with nlohmann-json
// (catalog.h); a test checks that both give the same KV geometry. The table leaves out the
// notes, the source and the MoE / width numbers, which kvprobe does not use.

#include "core/model.h"
#include "core/result.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace kvl::io {

// One models.json entry's KV geometry, as written there (0 / "" where absent).
struct ModelRow {
    std::string_view id, name, family, hfRepo;
    int numLayers;
    // layer_types (one kind per layer) or the cyclic layer_pattern, comma separated:
    // "sliding,full", "state,none,state,full"
    std::string_view layerPattern;
    std::int64_t slidingWindow; // 0: none
    std::int64_t chunkSize;     // attention_chunk_size; 0: none
    int qHeads, kvHeads, headDim, headDimV;
    int fullLayerKvHeads, fullLayerHeadDim; // Gemma-4's full layers; 0: the model's
    int kvLoraRank, qkRopeHeadDim, qkNopeHeadDim;
    bool sparseMla;
    std::string_view stateKind; // "mamba2", "gated_delta_net", ...; "": no state
    std::int64_t stateIntermediate;
    int stateHeads, stateHeadDim, stateGroups, stateSize, stateConvKernel, stateChunkSize;
    int stateKeyHeads, stateValueHeads, stateKeyHeadDim, stateValueHeadDim;
    std::string_view stateConvDtype, stateSsmDtype; // "": the model dtype
    std::int64_t hiddenSize, params, maxContext;
    std::string_view weightDtype, kvDtype; // "bf16", "fp8", ...
};

std::span<const ModelRow> modelTable();

// The row as a ModelSpec (notes empty). Fails (BadFile, naming models.json and the id) on an
// unknown dtype or layer kind, or a spec that ModelSpec::validate refuses.
Result<core::ModelSpec> modelFromRow(const ModelRow& row);

// Every row as a ModelSpec, in catalog order. A bad row is a build defect: it aborts with the
// message.
const std::vector<core::ModelSpec>& tableModels();
const core::ModelSpec* findTableModel(std::string_view id); // case-insensitive id

} // namespace kvl::io
