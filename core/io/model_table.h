#pragma once
// The model catalog without a JSON reader: resources/models.json as a C++ table generated at
// configure time (model_table.cmake, CMake's string(JSON)), for kvprobe, which builds on a GPU
// machine that has no JSON library. The explorer reads the same file with nlohmann-json
// (catalog.h); a test checks that both give the same models. The table leaves out the notes
// (display text kvprobe does not print).

#include "core/model.h"
#include "core/result.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace kvl::io {

// One models.json entry, as written there.
struct ModelRow {
    std::string_view id, name, family, hfRepo;
    int numLayers;
    std::string_view layerPattern; // the cyclic layer_pattern, comma separated: "sliding,full"
    std::int64_t slidingWindow;    // 0: none
    int qHeads, kvHeads, headDim, kvLoraRank, qkRopeHeadDim;
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
