#include "widgets/scenario/scenario_panel.h"
#include "widgets/scenario/cached_group_box.h"
#include "widgets/scenario/form_parts.h"
#include "widgets/scenario/wrap_label.h"

#include "core/deployment.h"
#include "core/engine.h"
#include "core/engines.h"
#include "core/ledger.h"
#include "core/llamacpp/ggml_types.h"
#include "core/vllm_version.h"

#include "widgets/scenario/model_picker.h"
#include "widgets/scenario/token_spin_box.h"
#include "widgets/state/ledger_view_state.h"

#include "core/io/catalog.h"
#include "core/kv_format.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScopedValueRollback>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace kvl::widgets {

namespace {

// Setters that change nothing when the control already shows the value. A spin box repaints and
// re-lays out its group box at every setValue, setSuffix, setSpecialValueText or setMaximum,
// even an equal one; the panel refreshes these at every change of the scenario, so a slider drag
// repainted half the panel at each step.
void setIfChanged(QDoubleSpinBox* box, double value) {
    // As the box would store it: rounded to its decimals.
    if (box->value() != box->valueFromText(box->textFromValue(value)))
        box->setValue(value);
}
template <class Box> void setSuffixIfChanged(Box* box, const QString& suffix) {
    if (box->suffix() != suffix)
        box->setSuffix(suffix);
}
void setSpecialTextIfChanged(QAbstractSpinBox* box, const QString& text) {
    if (box->specialValueText() != text)
        box->setSpecialValueText(text);
}
void setMaximumIfChanged(QSpinBox* box, int maximum) {
    if (box->maximum() != maximum)
        box->setMaximum(maximum);
}
void setItemTextIfChanged(QComboBox* box, int index, const QString& text) {
    if (box->itemText(index) != text)
        box->setItemText(index, text);
}

QString gpuText(const core::GpuSpec& g) {
    return QStringLiteral("%1  (%2, %3 TB/s)")
        .arg(qs(g.name), formatBytesQ(g.memoryBytes, core::UnitSystem::Binary, 1))
        .arg(g.bandwidthGBs / 1000.0, 0, 'f', 2);
}

void setComboData(QComboBox* box, const QVariant& v) {
    const int i = box->findData(v);
    if (i >= 0)
        box->setCurrentIndex(i);
}

QString granularityText(core::Granularity g) {
    switch (g) {
    case core::Granularity::None:
        return QObject::tr("none (stored as is)");
    case core::Granularity::PerTensor:
        return QObject::tr("per tensor");
    case core::Granularity::PerHead:
        return QObject::tr("per KV head");
    case core::Granularity::PerTokenHead:
        return QObject::tr("per token per head");
    case core::Granularity::PerGroup:
        return QObject::tr("per group of G");
    case core::Granularity::KPerChannelVPerToken:
        return QObject::tr("K per channel, V per token (KIVI)");
    case core::Granularity::DsMla:
        return QObject::tr("fp8_ds_mla (sparse MLA)");
    case core::Granularity::TurboQuant:
        return QObject::tr("TurboQuant (vLLM turboquant_*)");
    }
    return {};
}

// ModelSpec has no operator==; these are the fields the panel edits.
bool sameGeometry(const core::ModelSpec& a, const core::ModelSpec& b) {
    return a.layers == b.layers && a.qHeads == b.qHeads && a.kvHeads == b.kvHeads &&
           a.headDim == b.headDim && a.params == b.params && a.maxContext == b.maxContext &&
           a.kvLoraRank == b.kvLoraRank && a.qkRopeHeadDim == b.qkRopeHeadDim;
}

QGroupBox* makeLever(const QString& title, const QString& name, const QString& tip) {
    auto* g = new CachedGroupBox(title);
    g->setObjectName(name);
    g->setCheckable(true);
    g->setToolTip(tip);
    g->setProperty("leverTip", tip);
    return g;
}

// A whole-number field that commits when editing ends (no keyboard tracking), as every spin box
// of the panel does.
QSpinBox* intSpin(QWidget* parent, const char* name, int lo, int hi, const QString& tip) {
    auto* sp = new QSpinBox(parent);
    sp->setObjectName(QLatin1String(name));
    sp->setRange(lo, hi);
    sp->setKeyboardTracking(false);
    sp->setToolTip(tip);
    return sp;
}

QFormLayout* form(QWidget* w) {
    auto* f = new QFormLayout(w);
    f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    f->setContentsMargins(8, 6, 8, 6);
    f->setHorizontalSpacing(8);
    f->setVerticalSpacing(4);
    return f;
}

// Shows or hides one row of a form: its field and the field's label. Qt 6.4's
// QFormLayout::setRowVisible is not used: showing a row's widget activates the form at once
// (QWidget::setVisible lays its parent out) while the row is half updated, and
// QFormLayout::setGeometry then wrote before its row arrays (valgrind: invalid writes under
// setRowVisible, then a crash on exit in bench_replot). Hidden widgets are empty layout items,
// so a row whose label and field are hidden takes no space, spacing included.
void showRow(QFormLayout* f, QWidget* field, bool on) {
    if (QWidget* label = f->labelForField(field))
        label->setVisible(on);
    field->setVisible(on);
}

// A word-wrapped note in a form (the format's bits, the prefix's saving, the version change):
// never hidden, empty when it has nothing to say. Qt 6.4's QFormLayout wrote before its
// height-for-width arrays when a hidden word-wrapped row was shown again (valgrind, under
// QFormLayout::setGeometry from QWidget::setVisible), so these rows never hide; an empty note
// is zero pixels high.
void setNote(QLabel* note, const QString& text) {
    if (note->text() != text)
        note->setText(text);
}

// A row whose field is a layout: its widgets (a layout of hidden widgets is empty).
void showRow(QFormLayout* f, QLayout* field, bool on) {
    if (QWidget* label = f->labelForField(field))
        label->setVisible(on);
    for (int i = 0; i < field->count(); ++i)
        if (QWidget* w = field->itemAt(i)->widget())
            w->setVisible(on);
}

} // namespace

ScenarioPanel::ScenarioPanel(QWidget* parent) : QWidget(parent) {
    // Static contents: in a scroll area, a lever or a wrapped note that changes the panel's
    // height resizes the panel, and Qt repaints a resized widget whole, with every field in it
    // (QWidgetPrivate::invalidateBackingStore_resizeHelper), unless it is static; then only the
    // strip uncovered is painted, and groups that only moved are still moved as pixels. Such
    // changes painted 80-170 widgets instead of 20-50 (bench_replot's slowest changes).
    // tst_chart_text::panelOnScreenAsDrawnAnew checks the screen against a fresh render after
    // levers are toggled.
    setAttribute(Qt::WA_StaticContents);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(6);
    // The workload first: the context slider is what a user moves most.
    layout->addWidget(buildWorkloadGroup());
    layout->addWidget(buildModelGroup());
    layout->addWidget(buildHardwareGroup());
    layout->addWidget(buildAttentionGroup());
    layout->addWidget(buildQuantGroup());
    layout->addWidget(buildPagingGroup());
    layout->addWidget(buildPrefixGroup());
    layout->addWidget(buildEngineGroup());
    layout->addStretch(1);
    for (int i = 0; i < layout->count(); ++i)
        if (QWidget* group = layout->itemAt(i)->widget())
            group->installEventFilter(this); // eventFilter: the scroll area sizes the panel

    m_picker->setModels(io::builtinModels());
    {
        QSignalBlocker block(m_gpu);
        for (const auto& g : io::builtinGpus())
            m_gpu->addItem(gpuText(g), qs(g.id));
    }
    connectEdits();
}

bool ScenarioPanel::eventFilter(QObject* watched, QEvent* event) {
    // In a scroll area that sizes the panel (QScrollArea::widgetResizable), the area resizes
    // the panel as soon as a group has laid itself out anew. A lever that adds a row makes its
    // group taller when the group's layout request is handled, but the panel's own request was
    // already queued before the area's: the panel was laid out at its old height, squeezing
    // the groups at the bottom below their minimum (the engine group's spin boxes 14 px tall),
    // painted so, then laid out and painted again once the area had resized it
    // (bench_replot's trace of a KV dtype change). Watched: the groups; Qt hands a widget's
    // layout request to its layout before its event filters, so here the group is laid out.
    if (event->type() == QEvent::LayoutRequest && watched->parent() == this && parentWidget())
        if (auto* area = qobject_cast<QScrollArea*>(parentWidget()->parentWidget());
            area && area->widget() == this && area->widgetResizable()) {
            QEvent areaRequest(QEvent::LayoutRequest);
            QCoreApplication::sendEvent(area, &areaRequest);
        }
    return QWidget::eventFilter(watched, event);
}

QWidget* ScenarioPanel::buildModelGroup() {
    auto* box = new CachedGroupBox(tr("Model"));
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(8, 6, 8, 6);
    m_picker = new ModelPicker(box);
    v->addWidget(m_picker);
    auto* row = new QHBoxLayout;
    m_importButton =
        namedButton(tr("Import config.json..."), "importButton",
                    tr("Add a model from a HuggingFace config.json (head_dim, KV heads, "
                       "sliding windows and MLA are read as vLLM reads them)"),
                    box);
    m_resetModel = namedButton(tr("Reset fields"), "resetModelButton",
                               tr("Undo the what-if edits of the model's geometry"), box);
    m_geometryToggle = namedButton(tr("Edit geometry"), "geometryToggle",
                                   tr("Show the model's layers, heads, head_dim, parameters and "
                                      "max context, to try a what-if"),
                                   box);
    m_geometryToggle->setCheckable(true);
    row->addWidget(m_importButton);
    row->addWidget(m_geometryToggle);
    row->addWidget(m_resetModel);
    v->addLayout(row);
    m_modelInfo = new WrapLabel(box);
    m_modelInfo->setObjectName(QStringLiteral("modelInfo"));
    v->addWidget(m_modelInfo);

    auto* grid = new QWidget(box);
    m_geometry = grid;
    grid->setObjectName(QStringLiteral("geometryEditor"));
    auto* f = form(grid);
    f->setContentsMargins(0, 0, 0, 0);
    m_layers = intSpin(grid, "layersSpin", 1, core::kMaxLayers,
                       tr("Decoder layers; the model's layer pattern (sliding / full) repeats"));
    m_qHeads = intSpin(grid, "qHeadsSpin", 1, core::kMaxHeads, tr("Query (attention) heads"));
    m_kvHeads = intSpin(grid, "kvHeadsSpin", 1, core::kMaxHeads,
                        tr("Key/value heads the checkpoint stores (num_key_value_heads)"));
    m_headDim = intSpin(grid, "headDimSpin", 1, core::kMaxHeadDim,
                        tr("Elements per head (config head_dim, else hidden_size / heads)"));
    m_paramsB = new QDoubleSpinBox(grid);
    m_paramsB->setObjectName(QStringLiteral("paramsSpin"));
    m_paramsB->setRange(0.001, 100000);
    m_paramsB->setDecimals(3);
    m_paramsB->setSuffix(tr(" B"));
    m_paramsB->setKeyboardTracking(false);
    m_paramsB->setToolTip(tr("Parameters in billions: weights = params x weight bytes / TP"));
    m_maxContext = new TokenSpinBox(grid);
    m_maxContext->setObjectName(QStringLiteral("maxContextSpin"));
    m_maxContext->setRange(1, static_cast<int>(core::kMaxContext));
    m_maxContext->setToolTip(tr("max_position_embeddings"));
    auto* heads = new QHBoxLayout;
    heads->addWidget(m_qHeads);
    heads->addWidget(new QLabel(tr("q /"), grid));
    heads->addWidget(m_kvHeads);
    heads->addWidget(new QLabel(tr("KV"), grid));
    auto pair = [&](QWidget* a, const QString& label, QWidget* b) {
        auto* row = new QHBoxLayout;
        row->addWidget(a, 1);
        row->addWidget(new QLabel(label, grid));
        row->addWidget(b, 1);
        return row;
    };
    f->addRow(tr("Layers"), pair(m_layers, tr("max ctx"), m_maxContext));
    f->addRow(tr("Heads"), heads);
    f->addRow(tr("Head dim"), pair(m_headDim, tr("params"), m_paramsB));
    v->addWidget(grid);
    grid->setVisible(false); // folded until "Edit geometry"
    return box;
}

void ScenarioPanel::setGeometryEditorShown(bool shown) {
    m_geometryToggle->setChecked(shown);
}

bool ScenarioPanel::geometryEditorShown() const {
    return m_geometryToggle->isChecked();
}

QWidget* ScenarioPanel::buildHardwareGroup() {
    auto* box = new CachedGroupBox(tr("Deployment"));
    box->setObjectName(QStringLiteral("hardwareGroup"));
    auto* f = form(box);
    m_gpu = new QComboBox(box);
    m_gpu->setObjectName(QStringLiteral("gpuCombo"));
    m_gpu->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_gpu->setMinimumContentsLength(14);
    m_gpu->setToolTip(tr("Memory as the CUDA driver reports it (torch total_memory)"));
    // TP, PP, DP and DCP: what the command line's --tp/--pp/--dp take, so a scenario file or a
    // plan applied from the Deployment tab is shown as it is, not clamped to the box.
    auto count = [&](const char* name, const QString& tip) {
        return intSpin(box, name, 1, core::kMaxGpus, tip);
    };
    m_gpuCount = count("gpuCountSpin",
                       tr("vLLM --tensor-parallel-size: must divide the attention heads. "
                          "Weights split over the GPUs; KV heads per GPU = max(1, KV heads / TP): "
                          "with fewer KV heads than GPUs heads are replicated, not split"));
    m_pp = count("ppSpin",
                 tr("vLLM --pipeline-parallel-size: layers split over stages (unevenly when they "
                    "do not divide); the stage with the fewest blocks limits the replica"));
    m_dp = count("dpSpin",
                 tr("vLLM --data-parallel-size: independent replicas, each with its own weights "
                    "and KV cache; the cluster serves DP times a replica's requests"));
    m_dcp = count("dcpSpin",
                  tr("vLLM --decode-context-parallel-size: shards the KV cache along tokens inside "
                     "a TP group, so MLA's latent (or replicated KV heads) is not kept TP times. "
                     "Must divide TP"));
    m_ep = new QCheckBox(tr("EP"), box);
    m_ep->setObjectName(QStringLiteral("epCheck"));
    m_ep->setToolTip(tr("vLLM --enable-expert-parallel: MoE experts spread over TP x DP GPUs "
                        "instead of split by TP"));
    m_memUtil = new QDoubleSpinBox(box);
    m_memUtil->setObjectName(QStringLiteral("memUtilSpin"));
    m_memUtil->setRange(0.05, 1.0);
    m_memUtil->setSingleStep(0.01);
    m_memUtil->setDecimals(2);
    m_memUtil->setKeyboardTracking(false);
    m_memUtil->setToolTip(tr("vLLM --gpu-memory-utilization. Memory for KV = total x utilization "
                             "- weights - peak activation - non-torch overhead"));
    m_memUtil->setProperty("vllmTip", m_memUtil->toolTip());
    m_weightDtype = new QComboBox(box);
    m_weightDtype->setObjectName(QStringLiteral("weightDtypeCombo"));
    m_weightDtype->addItem(tr("model's dtype"), -1);
    for (auto d : {core::WeightDtype::Fp32, core::WeightDtype::Fp16, core::WeightDtype::Bf16,
                   core::WeightDtype::Fp8, core::WeightDtype::Int8, core::WeightDtype::Int4})
        m_weightDtype->addItem(qs(core::weightDtypeName(d)).toUpper(), static_cast<int>(d));
    m_weightDtype->setToolTip(tr("Weights lever: bytes = params x bytes per weight / TP; INT4 "
                                 "counts an fp16 scale + zero per 128 weights (4.25 bits)"));
    auto* layoutRow = new QHBoxLayout;
    layoutRow->setSpacing(3);
    auto label = [&](const QString& text) { return new QLabel(text, box); };
    layoutRow->addWidget(label(tr("TP")));
    layoutRow->addWidget(m_gpuCount, 1);
    layoutRow->addWidget(label(tr("PP")));
    layoutRow->addWidget(m_pp, 1);
    layoutRow->addWidget(label(tr("DP")));
    layoutRow->addWidget(m_dp, 1);
    auto* row2 = new QHBoxLayout;
    row2->setSpacing(3);
    row2->addWidget(label(tr("DCP")));
    row2->addWidget(m_dcp, 1);
    row2->addWidget(m_ep);
    row2->addWidget(label(tr("util.")));
    row2->addWidget(m_memUtil, 1);
    f->addRow(tr("GPU"), m_gpu);
    f->addRow(tr("Layout"), layoutRow);
    f->addRow(QString(), row2);
    f->addRow(tr("Weights"), m_weightDtype);
    return box;
}

namespace {

// A form of its own for one engine's flags, shown only while that engine is picked.
std::pair<QWidget*, QFormLayout*> engineOptions(QWidget* box, const char* name) {
    auto* w = new QWidget(box);
    w->setObjectName(QLatin1String(name));
    auto* sf = form(w);
    sf->setContentsMargins(0, 0, 0, 0);
    return {w, sf};
}

QDoubleSpinBox* fractionSpin(QWidget* parent, const char* name, double lo, const QString& tip) {
    auto* sp = new QDoubleSpinBox(parent);
    sp->setObjectName(QLatin1String(name));
    sp->setRange(lo, 1.0);
    sp->setDecimals(3);
    sp->setSingleStep(0.01);
    sp->setKeyboardTracking(false);
    sp->setToolTip(tip);
    return sp;
}

// A field with its button beside it (a reserve and its Estimate).
QHBoxLayout* withButton(QWidget* w, QWidget* b) {
    auto* h = new QHBoxLayout;
    h->addWidget(w, 1);
    h->addWidget(b);
    return h;
}

} // namespace

QWidget* ScenarioPanel::buildEngineGroup() {
    auto* box = new CachedGroupBox(tr("Engine and reserves"));
    box->setObjectName(QStringLiteral("engineGroup"));
    auto* f = form(box);
    // The engine whose rules size the KV pool (--engine): each has its own unit in core.
    m_engine = new QComboBox(box);
    m_engine->setObjectName(QStringLiteral("engineCombo"));
    for (core::Engine e : core::allEngines())
        m_engine->addItem(qs(core::engineDisplayName(e)), static_cast<int>(e));
    m_engine->setToolTip(tr("The engine whose rules size the KV pool (--engine): vLLM, SGLang's "
                            "max_total_num_tokens, TensorRT-LLM's blocks, llama.cpp's cells for "
                            "-c and -np. Only that engine's flags show below"));
    buildSglangOptions(box);
    buildTrtllmOptions(box);
    buildLlamacppOptions(box);
    buildVllmOptions(box);
    m_mambaLabel = new QLabel(tr("Mamba cache"), box);
    f->addRow(tr("Engine"), m_engine);
    f->addRow(m_sglangOptions);
    f->addRow(m_trtllmOptions);
    f->addRow(m_llamacppOptions);
    f->addRow(tr("vLLM version"), m_vllmVersion);
    f->addRow(m_versionInfo);
    f->addRow(tr("max_num_seqs"), m_maxNumSeqs);
    m_activationRow = withButton(m_activationGiB, m_activationEstimate);
    m_overheadRow = withButton(m_overheadGiB, m_overheadEstimate);
    f->addRow(tr("Activations"), m_activationRow);
    f->addRow(tr("Overhead"), m_overheadRow);
    f->addRow(m_mambaLabel, m_mambaMode);
    f->addRow(m_asyncScheduling);
    f->addRow(m_disableHybrid);
    return box;
}

void ScenarioPanel::buildSglangOptions(QWidget* box) {
    auto [w, sf] = engineOptions(box, "sglangOptions");
    m_sglangOptions = w;
    m_sgMemFraction = fractionSpin(w, "sglangMemFractionSpin", 0.0,
                                   tr("SGLang --mem-fraction-static: the share of GPU memory for "
                                      "weights and the KV pool; 0 = SGLang's default for the GPU "
                                      "and TP (server_args.py)"));
    m_sgMemFraction->setSpecialValueText(tr("SGLang default"));
    m_sgMaxTotalTokens =
        intSpin(w, "sglangMaxTotalTokensSpin", 0, static_cast<int>(core::kMaxContext),
                tr("SGLang --max-total-tokens: a cap on the token pool"));
    m_sgMaxTotalTokens->setSpecialValueText(tr("no cap"));
    m_sgPageSize = intSpin(w, "sglangPageSizeSpin", 1, 1 << 20,
                           tr("SGLang --page-size: the pool is rounded down to whole pages"));
    sf->addRow(tr("mem fraction"), m_sgMemFraction);
    sf->addRow(tr("max total tokens"), m_sgMaxTotalTokens);
    sf->addRow(tr("page size"), m_sgPageSize);
}

void ScenarioPanel::buildTrtllmOptions(QWidget* box) {
    auto [w, sf] = engineOptions(box, "trtllmOptions");
    m_trtllmOptions = w;
    m_trtFraction = fractionSpin(w, "trtllmFractionSpin", 0.01,
                                 tr("TensorRT-LLM kv_cache_config.free_gpu_memory_fraction: the "
                                    "share of the memory free after the profiling run"));
    m_trtMaxTokens =
        intSpin(w, "trtllmMaxTokensSpin", 0, static_cast<int>(core::kMaxContext),
                tr("TensorRT-LLM kv_cache_config.max_tokens: the smaller of it and the "
                   "fraction's tokens is used"));
    m_trtMaxTokens->setSpecialValueText(tr("no cap"));
    m_trtTokensPerBlock =
        intSpin(w, "trtllmTokensPerBlockSpin", 1, 1 << 20,
                tr("TensorRT-LLM kv_cache_config.tokens_per_block (32 by default)"));
    sf->addRow(tr("free mem fraction"), m_trtFraction);
    sf->addRow(tr("max tokens"), m_trtMaxTokens);
    sf->addRow(tr("tokens per block"), m_trtTokensPerBlock);
}

void ScenarioPanel::buildLlamacppOptions(QWidget* box) {
    auto [w, sf] = engineOptions(box, "llamacppOptions");
    m_llamacppOptions = w;
    m_lcCtx = intSpin(w, "llamacppCtxSpin", 0, static_cast<int>(core::kMaxContext),
                      tr("llama.cpp -c: cells of the cache, shared by the -np sequences; 0 = "
                         "the model's training context"));
    m_lcCtx->setSpecialValueText(tr("model's"));
    m_lcParallel = intSpin(w, "llamacppParallelSpin", 1, 4096,
                           tr("llama.cpp -np: sequences (slots) the cache holds at once"));
    m_lcUnified = new QCheckBox(tr("--kv-unified"), w);
    m_lcUnified->setObjectName(QStringLiteral("llamacppUnifiedCheck"));
    m_lcUnified->setToolTip(tr("llama.cpp --kv-unified: one stream of -c cells shared by "
                               "every sequence, instead of -c / -np each"));
    m_lcSwaFull = new QCheckBox(tr("--swa-full"), w);
    m_lcSwaFull->setObjectName(QStringLiteral("llamacppSwaFullCheck"));
    m_lcSwaFull->setToolTip(
        tr("llama.cpp --swa-full: sliding-window layers keep the whole context"));
    auto typeCombo = [w](const char* name, const QString& tip) {
        auto* c = new QComboBox(w);
        c->setObjectName(QLatin1String(name));
        for (auto t : {core::GgmlKvType::F32, core::GgmlKvType::F16, core::GgmlKvType::Bf16,
                       core::GgmlKvType::Q8_0, core::GgmlKvType::Q4_0, core::GgmlKvType::Q4_1,
                       core::GgmlKvType::Iq4Nl, core::GgmlKvType::Q5_0, core::GgmlKvType::Q5_1})
            c->addItem(qs(core::llamacpp::ggmlKvTypeName(t)), static_cast<int>(t));
        c->setToolTip(tip);
        return c;
    };
    m_lcTypeK = typeCombo("llamacppTypeKCombo", tr("llama.cpp -ctk: the K cache's ggml type"));
    m_lcTypeV = typeCombo("llamacppTypeVCombo", tr("llama.cpp -ctv: the V cache's ggml type"));
    auto* types = new QHBoxLayout;
    types->addWidget(m_lcTypeK, 1);
    types->addWidget(new QLabel(tr("-ctv"), w));
    types->addWidget(m_lcTypeV, 1);
    auto* flags = new QHBoxLayout;
    flags->addWidget(m_lcUnified);
    flags->addWidget(m_lcSwaFull);
    auto* seqs = new QHBoxLayout;
    seqs->addWidget(m_lcCtx, 1);
    seqs->addWidget(new QLabel(tr("-np"), w));
    seqs->addWidget(m_lcParallel, 1);
    sf->addRow(tr("-c"), seqs);
    sf->addRow(tr("-ctk"), types);
    sf->addRow(flags);
}

// vLLM's own flags: the release, max_num_seqs, the reserves and the cache managers' options.
void ScenarioPanel::buildVllmOptions(QWidget* box) {
    // The release the user runs: its rules (core/vllm_version.h) decide the defaults, the CUDA
    // graph reserve and the lines vLLM prints. Editable, so a pasted "0.20.1" or "v0.11.2rc1"
    // is taken as typed; the list offers each series, newest first.
    m_vllmVersion = new QComboBox(box);
    m_vllmVersion->setObjectName(QStringLiteral("vllmVersionCombo"));
    m_vllmVersion->setEditable(true);
    m_vllmVersion->setInsertPolicy(QComboBox::NoInsert);
    m_vllmVersion->addItem(tr("newest (%1)").arg(qs(core::newestKnownVllm().str())), QString());
    const auto series = core::knownVllmSeries();
    for (auto it = series.rbegin(); it != series.rend(); ++it)
        m_vllmVersion->addItem(qs(it->series()), qs(it->str()));
    m_vllmVersion->setToolTip(
        tr("The vLLM release you run (--vllm-version): its defaults, its CUDA-graph reserve and "
           "the startup lines it prints. Type any release from %1 on, e.g. 0.20.1")
            .arg(qs(core::oldestKnownVllm().series())));
    m_versionInfo = new WrapLabel(box);
    m_versionInfo->setObjectName(QStringLiteral("vllmVersionInfo"));
    m_maxNumSeqs = intSpin(box, "maxNumSeqsSpin", 0, static_cast<int>(core::kMaxRequests),
                           tr("vLLM --max-num-seqs: running requests per replica; 0 = vLLM's "
                              "default for the GPU (1024 from 70 GiB and not an A100, else "
                              "256)"));
    m_asyncScheduling = new QCheckBox(tr("async scheduling"), box);
    m_asyncScheduling->setObjectName(QStringLiteral("asyncSchedulingCheck"));
    m_asyncScheduling->setToolTip(tr("vLLM --async-scheduling (on by default; "
                                     "--no-async-scheduling): one more batch in flight"));
    m_disableHybrid = new QCheckBox(tr("disable hybrid KV cache manager"), box);
    m_disableHybrid->setObjectName(QStringLiteral("disableHybridCheck"));
    m_disableHybrid->setToolTip(tr("vLLM --disable-hybrid-kv-cache-manager: sliding and chunked "
                                   "layers keep every token, as full attention does"));
    m_mambaMode = new QComboBox(box);
    m_mambaMode->setObjectName(QStringLiteral("mambaCacheModeCombo"));
    m_mambaMode->addItem(tr("auto"), static_cast<int>(core::MambaCacheMode::Auto));
    m_mambaMode->addItem(tr("none (one state per request)"),
                         static_cast<int>(core::MambaCacheMode::None));
    m_mambaMode->addItem(tr("align (one more at block boundaries)"),
                         static_cast<int>(core::MambaCacheMode::Align));
    m_mambaMode->addItem(tr("all (one per block)"), static_cast<int>(core::MambaCacheMode::All));
    m_mambaMode->setToolTip(tr("vLLM --mamba-cache-mode: how Mamba / linear-attention state is "
                               "kept for prefix caching (auto = align for hybrids)"));
    auto reserve = [&](const char* name, const QString& tip) {
        auto* sp = new QDoubleSpinBox(box);
        sp->setObjectName(QLatin1String(name));
        sp->setRange(0, 512);
        sp->setDecimals(2);
        sp->setSingleStep(0.25);
        sp->setKeyboardTracking(false);
        sp->setToolTip(tip);
        return sp;
    };
    m_activationGiB =
        reserve("activationSpin", tr("--activation-gib: peak activation memory per GPU, as vLLM "
                                     "profiles it; estimated from the model, "
                                     "max_num_batched_tokens and TP until you set it"));
    m_overheadGiB =
        reserve("overheadSpin", tr("--overhead-gib: non-torch memory (NCCL, CUDA context) and CUDA "
                                   "graphs per GPU; estimated until you set it"));
    auto estimateButton = [&](const char* name) {
        return namedButton(tr("Estimate"), name, tr("Use KV Ledger's estimate again"), box);
    };
    m_activationEstimate = estimateButton("activationEstimateButton");
    m_overheadEstimate = estimateButton("overheadEstimateButton");
}

QWidget* ScenarioPanel::buildAttentionGroup() {
    m_attentionGroup = makeLever(
        tr("1  Attention: KV heads"), QStringLiteral("attentionGroup"),
        tr("KV bytes per token = 2 x layers x KV heads x head_dim x bytes per element.\n"
           "MHA: KV heads = q heads. GQA-g: g KV heads, each shared by q/g query heads. MQA: one "
           "KV head.\nA what-if: regrouping needs a converted or retrained checkpoint."));
    auto* f = form(m_attentionGroup);
    m_attentionMode = new QComboBox(m_attentionGroup);
    m_attentionMode->setObjectName(QStringLiteral("attentionModeCombo"));
    m_attentionMode->addItem(tr("Native"), static_cast<int>(core::AttentionMode::Native));
    m_attentionMode->addItem(tr("MHA (KV heads = q heads)"),
                             static_cast<int>(core::AttentionMode::Mha));
    m_attentionMode->addItem(tr("GQA (grouped)"), static_cast<int>(core::AttentionMode::Gqa));
    m_attentionMode->addItem(tr("MQA (one KV head)"), static_cast<int>(core::AttentionMode::Mqa));
    m_gqaGroups = new QComboBox(m_attentionGroup);
    m_gqaGroups->setObjectName(QStringLiteral("gqaGroupsCombo"));
    m_gqaGroups->setToolTip(tr("KV heads (groups); the q heads must divide by it"));
    f->addRow(tr("Mode"), m_attentionMode);
    f->addRow(tr("KV heads"), m_gqaGroups);
    return m_attentionGroup;
}

QWidget* ScenarioPanel::buildQuantGroup() {
    m_quantGroup = makeLever(
        tr("2  KV format: quantization"), QStringLiteral("quantGroup"),
        tr("Bytes per element: FP16/BF16 2, FP8/INT8 1, INT4 1/2, INT2 1/4, plus scales.\n"
           "Per token-head: one scale per K and V vector: + 2 x KV heads x scale bytes per token "
           "per layer.\nPer group of G: scale (+ zero) per G elements: INT4 G=128 with fp16 "
           "scale + zero = 4.25 bits.\nOff: the model's dtype (vLLM --kv-cache-dtype auto)."));
    auto* f = form(m_quantGroup);
    m_kvDtype = new QComboBox(m_quantGroup);
    m_kvDtype->setObjectName(QStringLiteral("kvDtypeCombo"));
    for (auto d : core::allDtypes())
        m_kvDtype->addItem(qs(core::dtypeName(d)).toUpper(), static_cast<int>(d));
    m_granularity = new QComboBox(m_quantGroup);
    m_granularity->setObjectName(QStringLiteral("granularityCombo"));
    for (auto g : {core::Granularity::None, core::Granularity::PerTensor,
                   core::Granularity::PerHead, core::Granularity::PerTokenHead,
                   core::Granularity::PerGroup, core::Granularity::KPerChannelVPerToken})
        m_granularity->addItem(granularityText(g), static_cast<int>(g));
    m_groupSize = intSpin(m_quantGroup, "groupSizeSpin", 1, core::kMaxHeadDim,
                          tr("G elements share one scale (and zero): 32-128 is usual"));
    m_scaleType = new QComboBox(m_quantGroup);
    m_scaleType->setObjectName(QStringLiteral("scaleTypeCombo"));
    m_scaleType->addItem(tr("fp32 scales"), static_cast<int>(core::ScaleType::Fp32));
    m_scaleType->addItem(tr("fp16 scales"), static_cast<int>(core::ScaleType::Fp16));
    m_zeroPoint = new QCheckBox(tr("zero point (asymmetric)"), m_quantGroup);
    m_zeroPoint->setObjectName(QStringLiteral("zeroPointCheck"));
    m_formatInfo = new WrapLabel(m_quantGroup);
    m_formatInfo->setObjectName(QStringLiteral("formatInfo"));
    auto* scales = new QHBoxLayout;
    m_scalesRow = scales;
    scales->addWidget(m_scaleType);
    scales->addWidget(m_zeroPoint);
    f->addRow(tr("Dtype"), m_kvDtype);
    f->addRow(tr("Scales"), m_granularity);
    f->addRow(tr("Group G"), m_groupSize);
    f->addRow(QString(), scales);
    f->addRow(m_formatInfo);
    return m_quantGroup;
}

QWidget* ScenarioPanel::buildPagingGroup() {
    m_pagingGroup =
        makeLever(tr("3  Paging"), QStringLiteral("pagingGroup"),
                  tr("On: KV lives in blocks of B tokens; a request holds ceil(context / B) blocks "
                     "(vLLM PagedAttention).\nOff: every request reserves the max model length "
                     "contiguously; vLLM's paper measured 60-80% of KV memory wasted that way."));
    auto* f = form(m_pagingGroup);
    m_blockSize = new QComboBox(m_pagingGroup);
    m_blockSize->setObjectName(QStringLiteral("blockSizeCombo"));
    for (int b : {1, 8, 16, 32, 64, 128, 256})
        m_blockSize->addItem(tr("%1 tokens").arg(b), b);
    // 0: no --block-size; vLLM picks 16, or what the attention backend or the hybrid alignment
    // needs (the text names it, core::resolveBlockSizes).
    m_blockSize->insertItem(0, tr("vLLM's choice"), 0);
    m_blockSize->setToolTip(tr("vLLM --block-size (default 16). Page bytes per layer = 2 x B x "
                               "KV heads per GPU x head_dim x bytes"));
    f->addRow(tr("Block size"), m_blockSize);
    return m_pagingGroup;
}

QWidget* ScenarioPanel::buildPrefixGroup() {
    m_prefixGroup = makeLever(
        tr("4  Prefix sharing"), QStringLiteral("prefixGroup"),
        tr("Requests with a common P-token prompt prefix store its floor(P / B) FULL blocks once; "
           "every further request saves floor(P / B) x page bytes (vLLM automatic prefix "
           "caching).\nNeeds paging."));
    auto* f = form(m_prefixGroup);
    m_prefixTokens = new TokenSpinBox(m_prefixGroup);
    m_prefixTokens->setObjectName(QStringLiteral("prefixTokensSpin"));
    m_prefixTokens->setRange(0, 1 << 20);
    m_prefixTokens->setSingleStep(256);
    m_prefixTokens->setToolTip(tr("P: tokens of the shared prompt prefix (system prompt, few-shot "
                                  "examples, a document)"));
    m_prefixRequests =
        intSpin(m_prefixGroup, "prefixRequestsSpin", 0, static_cast<int>(core::kMaxRequests),
                tr("N: requests that share one copy of the prefix"));
    m_prefixRequests->setSpecialValueText(tr("all requests"));
    m_prefixInfo = new WrapLabel(m_prefixGroup);
    m_prefixInfo->setObjectName(QStringLiteral("prefixInfo"));
    auto* shared = new QHBoxLayout;
    m_prefixRow = shared;
    shared->addWidget(m_prefixTokens, 1);
    shared->addWidget(new QLabel(tr("by"), m_prefixGroup));
    shared->addWidget(m_prefixRequests, 1);
    f->addRow(tr("Shared"), shared);
    f->addRow(m_prefixInfo);
    return m_prefixGroup;
}

QWidget* ScenarioPanel::buildWorkloadGroup() {
    auto* box = new CachedGroupBox(tr("Workload"));
    box->setObjectName(QStringLiteral("workloadGroup"));
    auto* f = form(box);
    m_contextSlider = new QSlider(Qt::Horizontal, box);
    m_contextSlider->setObjectName(QStringLiteral("contextSlider"));
    m_contextSlider->setRange(0, static_cast<int>(contextSliderStops().size()) - 1);
    m_contextSlider->setPageStep(4); // one octave
    m_contextSlider->setTickInterval(8);
    m_contextSlider->setTickPosition(QSlider::TicksBelow);
    m_contextSlider->setToolTip(tr("Context length per request, log scale 256 .. 1M"));
    m_context = new TokenSpinBox(box);
    m_context->setObjectName(QStringLiteral("contextSpin"));
    m_context->setRange(1, static_cast<int>(kWindowMaxContext));
    m_context->setToolTip(tr("Tokens per request (prompt + output). Type 32K, 1M or 200000"));
    m_maxModelLen = new TokenSpinBox(box);
    m_maxModelLen->setObjectName(QStringLiteral("maxModelLenSpin"));
    m_maxModelLen->setRange(0, 1 << 24);
    m_maxModelLen->setToolTip(tr("vLLM --max-model-len: what an unpaged request reserves, and "
                                 "the M of vLLM's \"maximum concurrency\" line"));
    m_targetRequests = intSpin(box, "targetRequestsSpin", 0, static_cast<int>(core::kMaxRequests),
                               tr("--target-requests: the concurrent requests (users) the "
                                  "deployment must hold, cluster-wide; the breakdown shows them "
                                  "and, when they do not fit, the banner says what would"));
    m_targetRequests->setSpecialValueText(tr("as many as fit"));
    auto* ctx = new QHBoxLayout;
    ctx->addWidget(m_contextSlider, 1);
    ctx->addWidget(m_context);
    m_context->setMinimumWidth(80);
    f->addRow(tr("Context"), ctx);
    f->addRow(tr("Max model len"), m_maxModelLen);
    f->addRow(tr("Target requests"), m_targetRequests);
    return box;
}

void ScenarioPanel::connectEdits() {
    connect(m_picker, &ModelPicker::modelChosen, this, &ScenarioPanel::onModelChosen);
    connect(m_importButton, &QPushButton::clicked, this, &ScenarioPanel::importRequested);
    connect(m_resetModel, &QPushButton::clicked, this, [this] { onModelChosen(m_catalogModel); });
    connect(m_geometryToggle, &QPushButton::toggled, m_geometry, &QWidget::setVisible);
    for (QSpinBox* s : {m_layers, m_qHeads, m_kvHeads, m_headDim})
        connect(s, &QSpinBox::valueChanged, this, &ScenarioPanel::onModelFieldEdited);
    connect(m_paramsB, &QDoubleSpinBox::valueChanged, this, &ScenarioPanel::onModelFieldEdited);
    connect(m_maxContext, &QSpinBox::valueChanged, this, &ScenarioPanel::onModelFieldEdited);

    connectHardwareEdits();
    connectEngineEdits();
    connectLeverEdits();
    connectWorkloadEdits();
}

void ScenarioPanel::connectHardwareEdits() {
    connect(m_gpu, &QComboBox::currentIndexChanged, this, edit([this] {
                if (const auto* g = io::findGpu(m_gpu->currentData().toString().toStdString()))
                    m_scenario.hardware.gpu = *g;
            }));
    connect(m_gpuCount, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.hardware.gpuCount = m_gpuCount->value(); }));
    connect(m_pp, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.hardware.pipelineParallel = m_pp->value(); }));
    connect(m_dp, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.hardware.dataParallel = m_dp->value(); }));
    connect(m_dcp, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.hardware.decodeContextParallel = m_dcp->value(); }));
    connect(m_ep, &QCheckBox::toggled, this,
            edit([this] { m_scenario.hardware.expertParallel = m_ep->isChecked(); }));
    connect(m_overheadGiB, &QDoubleSpinBox::valueChanged, this, edit([this] {
                m_scenario.hardware.overheadBytes = core::gibToBytes(m_overheadGiB->value());
            }));
    connect(m_activationEstimate, &QPushButton::clicked, this,
            edit([this] { m_scenario.hardware.activationBytes.reset(); }));
    connect(m_overheadEstimate, &QPushButton::clicked, this,
            edit([this] { m_scenario.hardware.overheadBytes.reset(); }));
    connect(m_memUtil, &QDoubleSpinBox::valueChanged, this,
            edit([this] { m_scenario.hardware.memoryUtilization = m_memUtil->value(); }));
    connect(m_weightDtype, &QComboBox::currentIndexChanged, this, edit([this] {
                const int d = m_weightDtype->currentData().toInt();
                if (d < 0)
                    m_scenario.hardware.weightDtype.reset();
                else
                    m_scenario.hardware.weightDtype = static_cast<core::WeightDtype>(d);
            }));
    connect(m_activationGiB, &QDoubleSpinBox::valueChanged, this, edit([this] {
                m_scenario.hardware.activationBytes = core::gibToBytes(m_activationGiB->value());
            }));
}

void ScenarioPanel::connectEngineEdits() {
    connect(m_maxNumSeqs, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.engine.maxNumSeqs = m_maxNumSeqs->value(); }));
    connect(m_engine, &QComboBox::currentIndexChanged, this, edit([this] {
                m_scenario.engine.kind = static_cast<core::Engine>(m_engine->currentData().toInt());
            }));
    connect(m_sgMemFraction, &QDoubleSpinBox::valueChanged, this, edit([this] {
                const double v = m_sgMemFraction->value();
                auto& o = m_scenario.engine.sglang.memFractionStatic;
                o = v > 0 ? std::optional<double>(v) : std::nullopt;
            }));
    connect(m_sgMaxTotalTokens, &QSpinBox::valueChanged, this, edit([this] {
                m_scenario.engine.sglang.maxTotalTokens = m_sgMaxTotalTokens->value();
            }));
    connect(m_sgPageSize, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.engine.sglang.pageSize = m_sgPageSize->value(); }));
    connect(m_trtFraction, &QDoubleSpinBox::valueChanged, this, edit([this] {
                m_scenario.engine.trtllm.freeGpuMemoryFraction = m_trtFraction->value();
            }));
    connect(m_trtMaxTokens, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.engine.trtllm.maxTokens = m_trtMaxTokens->value(); }));
    connect(m_trtTokensPerBlock, &QSpinBox::valueChanged, this, edit([this] {
                m_scenario.engine.trtllm.tokensPerBlock = m_trtTokensPerBlock->value();
            }));
    connect(m_lcCtx, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.engine.llamacpp.nCtx = m_lcCtx->value(); }));
    connect(m_lcParallel, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.engine.llamacpp.nParallel = m_lcParallel->value(); }));
    connect(m_lcUnified, &QCheckBox::toggled, this,
            edit([this] { m_scenario.engine.llamacpp.kvUnified = m_lcUnified->isChecked(); }));
    connect(m_lcSwaFull, &QCheckBox::toggled, this,
            edit([this] { m_scenario.engine.llamacpp.swaFull = m_lcSwaFull->isChecked(); }));
    connect(m_lcTypeK, &QComboBox::currentIndexChanged, this, edit([this] {
                m_scenario.engine.llamacpp.typeK =
                    static_cast<core::GgmlKvType>(m_lcTypeK->currentData().toInt());
            }));
    connect(m_lcTypeV, &QComboBox::currentIndexChanged, this, edit([this] {
                m_scenario.engine.llamacpp.typeV =
                    static_cast<core::GgmlKvType>(m_lcTypeV->currentData().toInt());
            }));
    connect(m_vllmVersion, &QComboBox::activated, this, [this] { applyVllmVersion(); });
    connect(m_vllmVersion->lineEdit(), &QLineEdit::editingFinished, this,
            [this] { applyVllmVersion(); });
    connect(m_asyncScheduling, &QCheckBox::toggled, this,
            edit([this] { m_scenario.engine.asyncScheduling = m_asyncScheduling->isChecked(); }));
    connect(m_disableHybrid, &QCheckBox::toggled, this, edit([this] {
                m_scenario.engine.disableHybridKvCacheManager = m_disableHybrid->isChecked();
            }));
    connect(m_mambaMode, &QComboBox::currentIndexChanged, this, edit([this] {
                m_scenario.engine.mambaCacheMode =
                    static_cast<core::MambaCacheMode>(m_mambaMode->currentData().toInt());
            }));
}

void ScenarioPanel::connectLeverEdits() {
    connect(m_attentionGroup, &QGroupBox::toggled, this,
            edit([this] { m_scenario.levers.attention.enabled = m_attentionGroup->isChecked(); }));
    connect(m_attentionMode, &QComboBox::currentIndexChanged, this, edit([this] {
                m_scenario.levers.attention.mode =
                    static_cast<core::AttentionMode>(m_attentionMode->currentData().toInt());
            }));
    connect(m_gqaGroups, &QComboBox::currentIndexChanged, this, edit([this] {
                if (m_gqaGroups->currentIndex() >= 0)
                    m_scenario.levers.attention.gqaKvHeads = m_gqaGroups->currentData().toInt();
            }));

    connect(m_quantGroup, &QGroupBox::toggled, this,
            edit([this] { m_scenario.levers.quant.enabled = m_quantGroup->isChecked(); }));
    connect(m_kvDtype, &QComboBox::currentIndexChanged, this, [this] {
        if (m_updating)
            return;
        onDtypeChanged();
        commit();
    });
    connect(m_granularity, &QComboBox::currentIndexChanged, this, edit([this] {
                // core's rule, the CLI's --kv-granularity too: the scale storage and group size
                // the granularity comes with.
                m_scenario.levers.quant.format = core::withGranularity(
                    m_scenario.levers.quant.format,
                    static_cast<core::Granularity>(m_granularity->currentData().toInt()),
                    core::kvFormatCheckDim(m_scenario.model));
                showFormat();
            }));
    connect(m_groupSize, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.levers.quant.format.groupSize = m_groupSize->value(); }));
    connect(m_scaleType, &QComboBox::currentIndexChanged, this, edit([this] {
                m_scenario.levers.quant.format.scaleType =
                    static_cast<core::ScaleType>(m_scaleType->currentData().toInt());
            }));
    connect(m_zeroPoint, &QCheckBox::toggled, this, edit([this] {
                m_scenario.levers.quant.format.hasZeroPoint = m_zeroPoint->isChecked();
            }));

    connect(m_pagingGroup, &QGroupBox::toggled, this,
            edit([this] { m_scenario.levers.paging.enabled = m_pagingGroup->isChecked(); }));
    connect(m_blockSize, &QComboBox::currentIndexChanged, this, edit([this] {
                m_scenario.levers.paging.blockSize = m_blockSize->currentData().toInt();
            }));

    connect(m_prefixGroup, &QGroupBox::toggled, this,
            edit([this] { m_scenario.levers.prefix.enabled = m_prefixGroup->isChecked(); }));
    connect(m_prefixTokens, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.levers.prefix.sharedTokens = m_prefixTokens->value(); }));
    connect(m_prefixRequests, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.levers.prefix.sharingRequests = m_prefixRequests->value(); }));
}

void ScenarioPanel::connectWorkloadEdits() {
    connect(m_contextSlider, &QSlider::valueChanged, this, &ScenarioPanel::onContextSlider);
    // A drag's moves that the event loop delivers together are one change (onContextSlider).
    m_dragCommit = new QTimer(this);
    m_dragCommit->setSingleShot(true);
    m_dragCommit->setInterval(0);
    connect(m_dragCommit, &QTimer::timeout, this, &ScenarioPanel::commit);
    connect(m_contextSlider, &QSlider::sliderReleased, this, [this] {
        if (m_dragCommit->isActive()) {
            m_dragCommit->stop();
            commit();
        }
    });
    connect(m_context, &QSpinBox::valueChanged, this, &ScenarioPanel::onContextSpin);
    connect(m_maxModelLen, &QSpinBox::valueChanged, this, edit([this] {
                m_scenario.workload.maxModelLen = m_maxModelLen->value();
                fitContextSlider();
            }));
    connect(m_targetRequests, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.workload.targetRequests = m_targetRequests->value(); }));
}

void ScenarioPanel::onContextSlider(int pos) {
    if (m_updating)
        return;
    m_scenario.workload.context = tokensAtSliderPosition(pos);
    {
        QSignalBlocker block(m_context);
        m_context->setValue(static_cast<int>(m_scenario.workload.context));
    }
    // While the handle is dragged, the pointer can move faster than the window redraws: the
    // moves handled in one pass of the event loop commit once, with the latest value, when the
    // pass is done, so a fast drag never queues recomputes behind the pointer.
    if (m_contextSlider->isSliderDown()) {
        m_dragCommit->start();
        return;
    }
    m_dragCommit->stop();
    commit();
}

void ScenarioPanel::fitContextSlider() {
    const std::int64_t top =
        std::min(m_scenario.effectiveMaxModelLen(), contextSliderStops().back());
    const QSignalBlocker block(m_contextSlider);
    m_contextSlider->setMaximum(sliderPositionFor(top));
    m_contextSlider->setValue(sliderPositionFor(m_scenario.workload.context));
    m_contextSlider->setToolTip(
        tr("Context length per request, log scale 256 .. %1 (the max model len)")
            .arg(formatTokensQ(tokensAtSliderPosition(m_contextSlider->maximum()))));
}

void ScenarioPanel::onContextSpin(int value) {
    if (m_updating)
        return;
    m_scenario.workload.context = value;
    {
        QSignalBlocker block(m_contextSlider);
        m_contextSlider->setValue(sliderPositionFor(value));
    }
    commit();
}

void ScenarioPanel::onDtypeChanged() {
    const auto dtype = static_cast<core::KvDtype>(m_kvDtype->currentData().toInt());
    m_scenario.levers.quant.format = core::KvFormat::defaultFor(dtype);
    showFormat();
}

void ScenarioPanel::showFormat() {
    const QScopedValueRollback guard(m_updating, true);
    const auto& f = m_scenario.levers.quant.format;
    setComboData(m_kvDtype, static_cast<int>(f.dtype));
    setComboData(m_granularity, static_cast<int>(f.granularity));
    m_groupSize->setValue(f.groupSize > 0 ? f.groupSize : 128);
    setComboData(m_scaleType, static_cast<int>(f.scaleType));
    m_zeroPoint->setChecked(f.hasZeroPoint);
}

void ScenarioPanel::onModelChosen(const core::ModelSpec& m) {
    if (m_updating)
        return;
    m_catalogModel = m;
    m_scenario.model = m;
    // Keep the GQA what-if valid for the new head count.
    auto& att = m_scenario.levers.attention;
    if (m.qHeads > 0 && (att.gqaKvHeads <= 0 || m.qHeads % att.gqaKvHeads != 0))
        att.gqaKvHeads = m.qHeads % 8 == 0 ? 8 : 1;
    showScenario();
    commit();
}

void ScenarioPanel::onModelFieldEdited() {
    if (m_updating)
        return;
    core::ModelSpec m = m_scenario.model;
    QObject* s = sender();
    if (s == m_layers && m_layers->value() != m.numLayers())
        m = core::withLayerCount(m, m_layers->value());
    else if (s == m_qHeads)
        m.qHeads = m_qHeads->value();
    else if (s == m_kvHeads)
        m.kvHeads = m_kvHeads->value();
    else if (s == m_headDim)
        m.headDim = m_headDim->value();
    else if (s == m_paramsB)
        m.params = static_cast<std::int64_t>(std::llround(m_paramsB->value() * 1e9));
    else if (s == m_maxContext)
        m.maxContext = m_maxContext->value();
    // The model keeps its name: "edited" is the panel's state (modelEdited()), not the model's.
    m_scenario.model = m;
    showModel();
    commit();
}

void ScenarioPanel::setContext(std::int64_t tokens) {
    if (tokens <= 0 || tokens == m_scenario.workload.context)
        return;
    m_scenario.workload.context = tokens;
    {
        const QScopedValueRollback guard(m_updating, true);
        m_context->setValue(static_cast<int>(std::min<std::int64_t>(tokens, m_context->maximum())));
        m_contextSlider->setValue(sliderPositionFor(tokens));
    }
    commit();
}

void ScenarioPanel::setScenario(const core::Scenario& s) {
    m_scenario = s;
    m_picker->clearSearch(); // New and Open start from a clean search
    // The picker shows the catalog entry of this id; a model not in the catalog (imported or
    // from a file) is added under "Imported".
    const QString id = qs(s.model.id);
    const core::ModelSpec* known = m_picker->modelById(id);
    {
        const QScopedValueRollback guard(m_updating, true);
        if (known) {
            m_catalogModel = *known;
            m_picker->setCurrentId(id);
        } else {
            // Files written before the edited state left the model's data carried the UI's
            // " (edited)" in the name; the picker lists the model without it.
            core::ModelSpec imported = s.model;
            const QString suffix = QStringLiteral(" (edited)");
            if (qs(imported.name).endsWith(suffix))
                imported.name = qs(imported.name).chopped(suffix.size()).toStdString();
            m_catalogModel = imported;
            m_picker->addImported(imported);
        }
    }
    showScenario();
    commit();
}

bool ScenarioPanel::importConfig(const QString& path) {
    auto result = io::loadHfConfigFile(path.toStdString());
    if (!result) {
        emit errorOccurred(tr("Import config.json"), qs(result.error().message));
        return false;
    }
    return importModel(std::move(result).value(), path);
}

bool ScenarioPanel::importModel(core::ModelSpec m, const QString& source) {
    if (auto problem = m.validate()) {
        emit errorOccurred(tr("Import config.json"),
                           tr("%1 is not usable: %2").arg(source, qs(*problem)));
        return false;
    }
    if (m.family.empty())
        m.family = "Imported";
    m_picker->clearSearch();
    {
        const QScopedValueRollback guard(m_updating, true);
        m_picker->addImported(m);
    }
    onModelChosen(m);
    return true;
}

void ScenarioPanel::showModel() {
    const core::ModelSpec& m = m_scenario.model;
    const QScopedValueRollback guard(m_updating, true);
    m_layers->setValue(m.numLayers());
    m_qHeads->setValue(m.qHeads);
    m_kvHeads->setValue(m.kvHeads);
    m_headDim->setValue(m.headDim);
    m_paramsB->setValue(double(m.params) / 1e9);
    m_maxContext->setValue(
        static_cast<int>(std::min<std::int64_t>(m.maxContext, core::kMaxContext)));
    const bool mla = m.isMla();
    m_kvHeads->setEnabled(!mla);
    m_headDim->setEnabled(!mla);
    const bool edited = modelEdited();
    m_resetModel->setEnabled(edited);
    QString info = qs(m.geometrySummary()).toHtmlEscaped();
    if (edited)
        info = tr("<b>%1 (edited), what-if:</b> ").arg(qs(m.name).toHtmlEscaped()) + info;
    // The picker already shows the heads and head_dim; the line says what it does not: a
    // what-if, or a mix of layer kinds.
    const QString mix = qs(m.layerMixSummary());
    const bool mixed = m.countLayers(core::LayerKind::Full) != m.numLayers();
    if (mixed && !edited)
        info = mix.toHtmlEscaped();
    else if (mixed)
        info += QStringLiteral("; ") + mix.toHtmlEscaped();
    m_modelInfo->setText(info);
    m_modelInfo->setVisible(edited || mixed);
    m_modelInfo->setToolTip(qs(m.geometrySummary()) +
                            (m.notes.empty() ? QString() : QStringLiteral("\n") + qs(m.notes)));

    // GQA choices: divisors of the q heads between 1 and q heads.
    m_gqaGroups->clear();
    for (int d = 1; d <= m.qHeads; ++d)
        if (m.qHeads % d == 0)
            m_gqaGroups->addItem(tr("%1 KV heads (%2 q heads each)").arg(d).arg(m.qHeads / d), d);
    setComboData(m_gqaGroups, m_scenario.levers.attention.gqaKvHeads);
    m_attentionMode->setItemText(0, tr("Native (%1 KV heads)").arg(m.kvHeads));
    m_attentionMode->setItemText(1, tr("MHA (%1 KV heads)").arg(m.qHeads));
    m_maxModelLen->setSpecialValueText(tr("model max (%1)").arg(formatTokensQ(m.maxContext)));
    fitContextSlider();
}

void ScenarioPanel::showScenario() {
    const QScopedValueRollback guard(m_updating, true);
    const core::Scenario& s = m_scenario;
    showModel();
    setComboData(m_gpu, qs(s.hardware.gpu.id));
    m_gpuCount->setValue(s.hardware.gpuCount);
    m_pp->setValue(s.hardware.pipelineParallel);
    m_dp->setValue(s.hardware.dataParallel);
    m_dcp->setValue(s.hardware.decodeContextParallel);
    m_ep->setChecked(s.hardware.expertParallel);
    m_memUtil->setValue(core::gpuMemoryUtilization(s));
    setComboData(m_weightDtype,
                 s.hardware.weightDtype ? static_cast<int>(*s.hardware.weightDtype) : -1);
    m_maxNumSeqs->setValue(static_cast<int>(s.engine.maxNumSeqs));
    setComboData(m_engine, static_cast<int>(s.engine.kind));
    showEngineOptions();
    showVllmVersion();
    m_asyncScheduling->setChecked(s.engine.asyncScheduling);
    m_disableHybrid->setChecked(s.engine.disableHybridKvCacheManager);
    setComboData(m_mambaMode, static_cast<int>(s.engine.mambaCacheMode));

    m_attentionGroup->setChecked(s.levers.attention.enabled);
    setComboData(m_attentionMode, static_cast<int>(s.levers.attention.mode));
    setComboData(m_gqaGroups, s.levers.attention.gqaKvHeads);

    m_quantGroup->setChecked(s.levers.quant.enabled);
    showFormat();

    m_pagingGroup->setChecked(s.levers.paging.enabled);
    if (m_blockSize->findData(s.levers.paging.blockSize) < 0)
        m_blockSize->addItem(tr("%1 tokens").arg(s.levers.paging.blockSize),
                             s.levers.paging.blockSize);
    setComboData(m_blockSize, s.levers.paging.blockSize);

    m_prefixGroup->setChecked(s.levers.prefix.enabled);
    m_prefixTokens->setValue(static_cast<int>(s.levers.prefix.sharedTokens));
    m_prefixRequests->setValue(static_cast<int>(s.levers.prefix.sharingRequests));

    m_context->setValue(static_cast<int>(s.workload.context));
    m_contextSlider->setValue(sliderPositionFor(s.workload.context));
    m_maxModelLen->setValue(static_cast<int>(s.workload.maxModelLen));
    m_targetRequests->setValue(static_cast<int>(s.workload.targetRequests));
    fitContextSlider();
}

void ScenarioPanel::updateEnabledStates() {
    const QScopedValueRollback guard(m_updating, true);
    // Showing a widget lays its ancestors out at once (QWidgetPrivate::setVisible activates each
    // parent's layout, up to the scroll area), so every row shown here laid its group and the
    // whole panel out again: ten times when the engine turns to vLLM and its rows come back.
    // With the panel's and the groups' layouts off meanwhile, nothing is laid out until all
    // rows are set, and then each layout once, after.
    struct LayoutsPaused {
        std::vector<QLayout*> layouts;
        explicit LayoutsPaused(std::vector<QLayout*> ls) : layouts(std::move(ls)) {
            for (QLayout* l : layouts)
                l->setEnabled(false);
        }
        ~LayoutsPaused() {
            for (QLayout* l : layouts) {
                l->setEnabled(true);
                l->invalidate();
            }
        }
    };
    const LayoutsPaused paused({layout(), m_attentionGroup->layout(), m_quantGroup->layout(),
                                m_pagingGroup->layout(), m_prefixGroup->layout(),
                                m_engine->parentWidget()->layout()});
    const core::Scenario& s = m_scenario;
    const core::ModelSpec& m = s.model;
    const auto mode = static_cast<core::AttentionMode>(m_attentionMode->currentData().toInt());
    m_gqaGroups->setEnabled(mode == core::AttentionMode::Gqa && m_attentionGroup->isChecked());
    const auto& f = s.levers.quant.format;
    const bool grouped = f.granularity == core::Granularity::PerGroup ||
                         f.granularity == core::Granularity::KPerChannelVPerToken;
    const bool on = m_quantGroup->isChecked();
    const bool scaled = core::isQuantized(f.dtype);
    // Scales stored in the pages (per token-head, per group, KIVI) have a type and, for
    // integers, a zero point; FP8's fp32 scale per tensor (or per head) lives outside the
    // pages and has neither.
    const bool inPage = scaled && (f.granularity == core::Granularity::PerTokenHead ||
                                   f.granularity == core::Granularity::PerGroup ||
                                   f.granularity == core::Granularity::KPerChannelVPerToken);
    m_granularity->setEnabled(scaled && on);
    m_groupSize->setEnabled(grouped && on);
    m_scaleType->setEnabled(inPage && on);
    m_zeroPoint->setEnabled(inPage && core::isInteger(f.dtype) && on);
    const int dim = core::kvFormatCheckDim(m);
    QString formatText;
    if (on && dim > 0 && !core::validate(f, dim)) {
        const double bits = 8.0 * double(core::kvBytesPerTokenPerHead(f, dim)) / (2.0 * dim);
        formatText = tr("%1: %2 bits/element").arg(qs(core::formatLabel(f))).arg(bits, 0, 'f', 2);
    }
    setNote(m_formatInfo, formatText);
    // A lever that is off folds to its title; its rows that do not apply to the format hide.
    auto rows = [](QGroupBox* g) { return static_cast<QFormLayout*>(g->layout()); };
    const bool att = m_attentionGroup->isChecked();
    showRow(rows(m_attentionGroup), m_attentionMode, att);
    showRow(rows(m_attentionGroup), m_gqaGroups, att);
    showRow(rows(m_quantGroup), m_kvDtype, on);
    showRow(rows(m_quantGroup), m_granularity, on && scaled);
    showRow(rows(m_quantGroup), m_groupSize, on && grouped);
    showRow(rows(m_quantGroup), m_scalesRow, on && inPage);
    showRow(rows(m_pagingGroup), m_blockSize, m_pagingGroup->isChecked());
    showRow(rows(m_prefixGroup), m_prefixRow, m_prefixGroup->isChecked());
    // Prefix sharing lives in paged blocks: nothing to share without paging.
    m_prefixGroup->setEnabled(s.levers.paging.enabled);
    m_prefixGroup->setToolTip(s.levers.paging.enabled
                                  ? m_prefixGroup->property("leverTip").toString()
                                  : tr("Prefix sharing needs paging (lever 3)"));
    // Layout controls that apply to this model only.
    m_ep->setVisible(m.isMoe() || s.hardware.expertParallel);
    setMaximumIfChanged(m_pp, std::clamp(m.numLayers(), 1, core::kMaxGpus));
    const int tp = std::max(1, s.hardware.gpuCount);
    const int copies = core::kvCopiesUnderTp(m, tp);
    m_dcp->setEnabled(copies > 1 || s.hardware.decodeContextParallel > 1);
    const bool windows =
        m.countLayers(core::LayerKind::Sliding) > 0 || m.countLayers(core::LayerKind::Chunked) > 0;
    m_disableHybrid->setVisible(windows || s.engine.disableHybridKvCacheManager);
    const bool state = m.countLayers(core::LayerKind::State) > 0;
    m_mambaMode->setVisible(state);
    m_mambaLabel->setVisible(state);
    if (!s.validate()) {
        const core::BlockSizes b = core::resolveBlockSizes(s);
        setItemTextIfChanged(m_blockSize, 0,
                             b.forced
                                 ? tr("vLLM's choice: %1 (%2)").arg(b.attention).arg(qs(b.backend))
                                 : tr("vLLM's choice: %1 tokens").arg(b.attention));
    }
    // max_num_seqs 0 is vLLM's default for the GPU: say which.
    core::Scenario defaults = s;
    defaults.engine.maxNumSeqs = 0;
    setSpecialTextIfChanged(
        m_maxNumSeqs, tr("vLLM default (%1)").arg(thousandsQ(core::effectiveMaxNumSeqs(defaults))));
    showEngineOptions();
    showReserves();
    showPrefixInfo();
}

void ScenarioPanel::showEngineOptions() {
    const QScopedValueRollback guard(m_updating, true);
    const core::Scenario& s = m_scenario;
    const core::Engine kind = s.engine.kind;
    const bool vllm = kind == core::Engine::Vllm;
    m_sglangOptions->setVisible(kind == core::Engine::Sglang);
    m_trtllmOptions->setVisible(kind == core::Engine::Trtllm);
    m_llamacppOptions->setVisible(kind == core::Engine::Llamacpp);
    // vLLM's own flags show for vLLM only; the reserves are vLLM's profile, which TensorRT-LLM's
    // profiling peak is estimated from too.
    auto* f = static_cast<QFormLayout*>(m_engine->parentWidget()->layout());
    showRow(f, m_vllmVersion, vllm);
    showVersionInfo();
    showRow(f, m_maxNumSeqs, vllm);
    showRow(f, m_asyncScheduling, vllm);
    if (!vllm) { // updateEnabledStates shows them for the models they apply to
        m_disableHybrid->setVisible(false);
        m_mambaMode->setVisible(false);
        m_mambaLabel->setVisible(false);
    }
    const bool reserves = vllm || kind == core::Engine::Trtllm;
    showRow(f, m_activationRow, reserves);
    showRow(f, m_overheadRow, reserves);
    m_memUtil->setEnabled(vllm);
    m_memUtil->setToolTip(vllm ? m_memUtil->property("vllmTip").toString()
                               : tr("vLLM --gpu-memory-utilization: %1 sizes its pool with its "
                                    "own flags in the Engine group")
                                     .arg(qs(core::engineDisplayName(kind))));

    const auto& sg = s.engine.sglang;
    m_sgMemFraction->setValue(sg.memFractionStatic.value_or(0.0));
    m_sgMaxTotalTokens->setValue(static_cast<int>(sg.maxTotalTokens));
    m_sgPageSize->setValue(sg.pageSize);
    const auto& trt = s.engine.trtllm;
    m_trtFraction->setValue(trt.freeGpuMemoryFraction);
    m_trtMaxTokens->setValue(static_cast<int>(trt.maxTokens));
    m_trtTokensPerBlock->setValue(trt.tokensPerBlock);
    const auto& lc = s.engine.llamacpp;
    m_lcCtx->setValue(static_cast<int>(lc.nCtx));
    m_lcParallel->setValue(lc.nParallel);
    m_lcUnified->setChecked(lc.kvUnified);
    m_lcSwaFull->setChecked(lc.swaFull);
    setComboData(m_lcTypeK, static_cast<int>(lc.typeK));
    setComboData(m_lcTypeV, static_cast<int>(lc.typeV));
    // With the KV format lever on, the lever's dtype is the cache type (core::scenarioForEngine).
    const bool leverSets = s.levers.quant.enabled &&
                           core::llamacpp::kvTypeForDtype(s.levers.quant.format.dtype).has_value();
    for (QComboBox* c : {m_lcTypeK, m_lcTypeV}) {
        c->setEnabled(!leverSets);
        if (leverSets)
            c->setToolTip(
                tr("Set by the KV format lever (lever 2); turn it off to pick -ctk / -ctv"));
    }

    // The KV dtypes the engine has no cache of are greyed, saying which engine lacks them; vLLM
    // keeps them as what-ifs (the status line marks them "not in vLLM").
    auto* model = qobject_cast<QStandardItemModel*>(m_kvDtype->model());
    for (int i = 0; model && i < m_kvDtype->count(); ++i) {
        const auto d = static_cast<core::KvDtype>(m_kvDtype->itemData(i).toInt());
        const bool offered = core::engineOffersKvDtype(kind, d);
        QStandardItem* item = model->item(i);
        item->setEnabled(vllm || offered);
        item->setToolTip(offered ? QString()
                         : vllm
                             ? tr("Not in vLLM: a what-if (vLLM has no --kv-cache-dtype "
                                  "for it)")
                             : tr("%1 has no %2 KV cache (%3)")
                                   .arg(qs(core::engineDisplayName(kind)), qs(core::dtypeName(d)),
                                        qs(core::kvDtypeFlagText(kind))));
    }
}

void ScenarioPanel::showReserves() {
    const QScopedValueRollback guard(m_updating, true);
    const core::Scenario& s = m_scenario;
    // The reserves in use: the user's, or KV Ledger's estimate (which follows TP, the batch
    // budget and the model), labelled as one.
    const bool valid = !s.validate();
    const core::LedgerResult r = valid ? core::computeLedger(s) : core::LedgerResult{};
    const bool actSet = s.hardware.activationBytes.has_value();
    const bool ovhSet = s.hardware.overheadBytes.has_value();
    if (actSet || valid)
        setIfChanged(m_activationGiB,
                     core::bytesToGiB(s.hardware.activationBytes.value_or(r.activationBytes)));
    if (ovhSet || valid)
        setIfChanged(m_overheadGiB,
                     core::bytesToGiB(s.hardware.overheadBytes.value_or(r.overheadBytes)));
    setSuffixIfChanged(m_activationGiB, actSet ? tr(" GiB") : tr(" GiB (estimated)"));
    setSuffixIfChanged(m_overheadGiB, ovhSet ? tr(" GiB") : tr(" GiB (estimated)"));
    m_activationEstimate->setEnabled(actSet);
    m_overheadEstimate->setEnabled(ovhSet);
}

void ScenarioPanel::showPrefixInfo() {
    const core::Scenario& s = m_scenario;
    const auto& p = s.levers.prefix;
    QString text;
    if (p.enabled && s.levers.paging.enabled) {
        if (p.sharingRequests == 1)
            text = tr("Shared by one request: nothing is shared, nothing saved");
        else if (p.sharedTokens <= 0)
            text = tr("No shared tokens: nothing saved");
        else if (!s.validate()) {
            const core::LedgerResult r = core::computeLedger(s);
            if (r.sharedBytesPerRequestPerGpu > 0)
                text =
                    tr("Each request after the first saves %1 per GPU")
                        .arg(formatBytesQ(r.sharedBytesPerRequestPerGpu, core::UnitSystem::Binary));
            else
                text = tr("Shorter than one block: nothing saved (full blocks only)");
        }
    }
    setNote(m_prefixInfo, text);
}

bool ScenarioPanel::modelEdited() const {
    return !sameGeometry(m_scenario.model, m_catalogModel);
}

QString ScenarioPanel::validationMessage() const {
    return m_validation;
}

void ScenarioPanel::commit() {
    m_scenario = withLeverKvTypes(m_scenario); // llama.cpp's -ctk / -ctv follow the lever
    updateEnabledStates();
    // core's one check: the fields, then a layout vLLM would refuse (TP that does not divide
    // the heads, DCP beyond the copies, EP without experts): vLLM would not start.
    const auto checked = core::checkScenario(m_scenario);
    m_validation = checked ? QString() : qs(checked.error().message);
    if (!checked) {
        emit scenarioInvalid(m_scenario, m_validation); // the views show the error
        return;
    }
    emit scenarioChanged(m_scenario);
}

void ScenarioPanel::showVllmVersion() {
    const QSignalBlocker block(m_vllmVersion);
    const auto& v = m_scenario.engine.vllmVersion;
    const int i = v ? m_vllmVersion->findData(qs(v->str())) : 0;
    if (i >= 0)
        m_vllmVersion->setCurrentIndex(i);
    else
        m_vllmVersion->setEditText(qs(v->str()));
    m_vllmVersion->setStyleSheet(QString());
}

// The note under the vLLM version, for vLLM only.
void ScenarioPanel::showVersionInfo() {
    setNote(m_versionInfo,
            m_scenario.engine.kind == core::Engine::Vllm ? m_versionNote : QString());
}

void ScenarioPanel::applyVllmVersion() {
    if (m_updating)
        return;
    const QString text = m_vllmVersion->currentText().trimmed();
    std::optional<core::VllmVersion> next;
    if (m_vllmVersion->currentIndex() > 0 &&
        text == m_vllmVersion->itemText(m_vllmVersion->currentIndex()))
        next =
            core::parseVllmVersion(m_vllmVersion->currentData().toString().toStdString()).value();
    else if (!text.isEmpty() && text != m_vllmVersion->itemText(0)) {
        const auto parsed = core::parseVllmVersion(text.toStdString());
        if (!parsed) {
            // Bad input names the field and keeps the scenario as it was.
            m_vllmVersion->setStyleSheet(QStringLiteral("QComboBox { color: #b00020; }"));
            m_versionNote = tr("vLLM version: %1").arg(qs(parsed.error().message));
            showVersionInfo();
            return;
        }
        next = parsed.value();
    }
    m_vllmVersion->setStyleSheet(QString());
    if (next == m_scenario.engine.vllmVersion)
        return;
    const core::Scenario before = m_scenario;
    m_scenario.engine.vllmVersion = next;
    m_versionNote = versionChangeText(before, m_scenario);
    showVersionInfo();
    {
        const QScopedValueRollback guard(m_updating, true);
        m_memUtil->setValue(core::gpuMemoryUtilization(m_scenario));
    }
    commit();
}

QString versionChangeText(const core::Scenario& before, const core::Scenario& after) {
    const core::VllmVersion a = core::vllmRules(before.engine.vllmVersion).version;
    const core::VllmVersion b = core::vllmRules(after.engine.vllmVersion).version;
    QStringList lines;
    const auto changes = core::vllmChangesBetween(a, b);
    if (changes.empty())
        lines << QObject::tr("%1 → %2: no rule KV Ledger follows changed between them.")
                     .arg(qs(a.str()), qs(b.str()));
    for (const auto& c : changes)
        lines << QStringLiteral("• ") + qs(c);
    // What the change does to this scenario: vLLM's logged tokens and the requests that fit.
    const core::LedgerResult ra = core::computeLedger(before);
    const core::LedgerResult rb = core::computeLedger(after);
    if (ra.gpuKvCacheTokens > 0 && rb.gpuKvCacheTokens != ra.gpuKvCacheTokens)
        lines << QObject::tr("%1 → %2: GPU KV cache size %L3 → %L4 tokens (%5×)")
                     .arg(qs(a.series()), qs(b.series()))
                     .arg(ra.gpuKvCacheTokens)
                     .arg(rb.gpuKvCacheTokens)
                     .arg(double(rb.gpuKvCacheTokens) / double(ra.gpuKvCacheTokens), 0, 'f', 2);
    if (rb.maxRequestsAtContext != ra.maxRequestsAtContext)
        lines << QObject::tr("requests that fit at the context: %L1 → %L2")
                     .arg(ra.maxRequestsAtContext)
                     .arg(rb.maxRequestsAtContext);
    if (rb.refused && !ra.refused)
        lines << QObject::tr("vLLM %1 refuses this scenario: %2").arg(qs(b.str()), qs(rb.error));
    return lines.join(QLatin1Char('\n'));
}

} // namespace kvl::widgets
