#include "model_table.h"

#include "core/names.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace kvl::io {

namespace detail {
extern const ModelRow kModelRows[];
extern const std::size_t kModelRowCount;
} // namespace detail

std::span<const ModelRow> modelTable() {
    return {detail::kModelRows, detail::kModelRowCount};
}

Result<core::ModelSpec> modelFromRow(const ModelRow& row) {
    const std::string where = "models.json: model '" + std::string(row.id) + "': ";
    core::ModelSpec m;
    m.id = row.id;
    m.name = row.name;
    m.family = row.family;
    m.hfRepo = row.hfRepo;
    m.qHeads = row.qHeads;
    m.kvHeads = row.kvHeads;
    m.headDim = row.headDim;
    m.headDimV = row.headDimV;
    m.kvLoraRank = row.kvLoraRank;
    m.qkRopeHeadDim = row.qkRopeHeadDim;
    m.qkNopeHeadDim = row.qkNopeHeadDim;
    m.sparseMla = row.sparseMla;
    m.indexHeadDim = row.indexHeadDim;
    m.hiddenSize = row.hiddenSize;
    m.params = row.params;
    m.maxContext = row.maxContext;
    const auto weight = core::parseWeightDtype(row.weightDtype);
    const auto kv = core::parseDtype(row.kvDtype);
    if (!weight || !kv)
        return Error{ErrorCode::BadFile, where + "unknown dtype"};
    m.weightDtype = *weight;
    m.nativeKvDtype = *kv;
    if (!row.stateKind.empty()) {
        const auto kind = core::parseStateKind(row.stateKind);
        if (!kind)
            return Error{ErrorCode::BadFile, where + "unknown state kind"};
        core::StateSpec st;
        st.kind = *kind;
        st.intermediateSize = row.stateIntermediate;
        st.numHeads = row.stateHeads;
        st.headDim = row.stateHeadDim;
        st.nGroups = row.stateGroups;
        st.stateSize = row.stateSize;
        st.convKernel = row.stateConvKernel;
        st.chunkSize = row.stateChunkSize;
        st.numKeyHeads = row.stateKeyHeads;
        st.numValueHeads = row.stateValueHeads;
        st.keyHeadDim = row.stateKeyHeadDim;
        st.valueHeadDim = row.stateValueHeadDim;
        st.ssmDtypeNemotronHDefault = row.stateSsmDtype == core::kNemotronHSsmDefaultName;
        for (const auto& [text, dtype] : {std::pair{row.stateConvDtype, &st.convDtype},
                                          std::pair{row.stateSsmDtype, &st.ssmDtype}}) {
            if (text.empty() || text == core::kNemotronHSsmDefaultName)
                continue;
            const auto d = core::parseDtype(text);
            if (!d)
                return Error{ErrorCode::BadFile, where + "unknown state dtype"};
            *dtype = *d;
        }
        m.state = st;
    }
    std::vector<core::LayerSpec> pattern;
    for (std::size_t start = 0; start <= row.layerPattern.size();) {
        const std::size_t comma =
            std::min(row.layerPattern.find(',', start), row.layerPattern.size());
        const auto kind = core::parseLayerKind(row.layerPattern.substr(start, comma - start));
        if (!kind)
            return Error{ErrorCode::BadFile, where + "unknown layer kind in layer_pattern"};
        core::LayerSpec l;
        l.kind = *kind;
        l.window = *kind == core::LayerKind::Sliding   ? row.slidingWindow
                   : *kind == core::LayerKind::Chunked ? row.chunkSize
                                                       : 0;
        if (*kind == core::LayerKind::Full) { // 0 where equal to the model's (as catalog.cpp)
            l.kvHeads = row.fullLayerKvHeads != row.kvHeads ? row.fullLayerKvHeads : 0;
            l.headDim = row.fullLayerHeadDim != row.headDim ? row.fullLayerHeadDim : 0;
        }
        pattern.push_back(l);
        start = comma + 1;
    }
    if (row.numLayers < 1 || row.numLayers > core::kMaxLayers)
        return Error{ErrorCode::BadFile, where + "num_layers out of range"};
    m.layers.resize(static_cast<std::size_t>(row.numLayers));
    for (std::size_t i = 0; i < m.layers.size(); ++i)
        m.layers[i] = pattern[i % pattern.size()];
    if (auto problem = m.validate())
        return Error{ErrorCode::BadFile, "models.json: " + *problem};
    return m;
}

const std::vector<core::ModelSpec>& tableModels() {
    static const std::vector<core::ModelSpec> models = [] {
        std::vector<core::ModelSpec> out;
        for (const ModelRow& row : modelTable()) {
            auto m = modelFromRow(row);
            if (!m) {
                std::fprintf(stderr, "KV Ledger: the built-in model table is broken: %s\n",
                             m.error().message.c_str());
                std::abort();
            }
            out.push_back(std::move(m).value());
        }
        return out;
    }();
    return models;
}

const core::ModelSpec* findTableModel(std::string_view id) {
    return core::findById(tableModels(), id);
}

} // namespace kvl::io
