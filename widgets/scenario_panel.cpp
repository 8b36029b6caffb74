#include "scenario_panel.h"

#include "core/ledger.h"

#include "ledger_view_state.h"
#include "model_picker.h"
#include "token_spin_box.h"

#include "core/io/catalog.h"
#include "core/kv_format.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScopedValueRollback>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>

namespace kvl::widgets {

namespace {

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
    }
    return {};
}

// ModelSpec has no operator==; these are the fields the panel edits.
bool sameGeometry(const core::ModelSpec& a, const core::ModelSpec& b) {
    return a.layers == b.layers && a.qHeads == b.qHeads && a.kvHeads == b.kvHeads &&
           a.headDim == b.headDim && a.params == b.params && a.maxContext == b.maxContext &&
           a.kvLoraRank == b.kvLoraRank && a.qkRopeHeadDim == b.qkRopeHeadDim;
}

int formatDim(const core::ModelSpec& m) {
    return m.isMla() ? m.mlaLatentDim() : m.headDim;
}

QGroupBox* makeLever(const QString& title, const QString& name, const QString& tip) {
    auto* g = new QGroupBox(title);
    g->setObjectName(name);
    g->setCheckable(true);
    g->setToolTip(tip);
    return g;
}

QFormLayout* form(QWidget* w) {
    auto* f = new QFormLayout(w);
    f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    f->setContentsMargins(8, 6, 8, 6);
    f->setHorizontalSpacing(8);
    f->setVerticalSpacing(4);
    return f;
}

} // namespace

ScenarioPanel::ScenarioPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(6);
    layout->addWidget(buildModelGroup());
    layout->addWidget(buildHardwareGroup());
    layout->addWidget(buildAttentionGroup());
    layout->addWidget(buildQuantGroup());
    layout->addWidget(buildPagingGroup());
    layout->addWidget(buildPrefixGroup());
    layout->addWidget(buildWorkloadGroup());
    m_problem = new QLabel(this);
    m_problem->setObjectName(QStringLiteral("problemLabel"));
    m_problem->setWordWrap(true);
    m_problem->setVisible(false);
    layout->addWidget(m_problem);
    layout->addStretch(1);

    m_picker->setModels(io::builtinModels());
    {
        QSignalBlocker block(m_gpu);
        for (const auto& g : io::builtinGpus())
            m_gpu->addItem(gpuText(g), qs(g.id));
    }
    connectEdits();
}

QWidget* ScenarioPanel::buildModelGroup() {
    auto* box = new QGroupBox(tr("Model"));
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(8, 6, 8, 6);
    m_picker = new ModelPicker(box);
    v->addWidget(m_picker);
    auto* row = new QHBoxLayout;
    m_importButton = new QPushButton(tr("Import config.json..."), box);
    m_importButton->setObjectName(QStringLiteral("importButton"));
    m_importButton->setToolTip(tr("Add a model from a HuggingFace config.json (head_dim, KV heads, "
                                  "sliding windows and MLA are read as vLLM reads them)"));
    m_resetModel = new QPushButton(tr("Reset fields"), box);
    m_resetModel->setObjectName(QStringLiteral("resetModelButton"));
    m_resetModel->setToolTip(tr("Undo the what-if edits of the model's geometry"));
    row->addWidget(m_importButton);
    row->addWidget(m_resetModel);
    v->addLayout(row);
    m_modelInfo = new QLabel(box);
    m_modelInfo->setObjectName(QStringLiteral("modelInfo"));
    m_modelInfo->setWordWrap(true);
    v->addWidget(m_modelInfo);

    auto* grid = new QWidget(box);
    auto* f = form(grid);
    f->setContentsMargins(0, 0, 0, 0);
    auto spin = [&](const QString& name, int lo, int hi, const QString& tip) {
        auto* s = new QSpinBox(grid);
        s->setObjectName(name);
        s->setRange(lo, hi);
        s->setKeyboardTracking(false);
        s->setToolTip(tip);
        return s;
    };
    m_layers = spin(QStringLiteral("layersSpin"), 1, core::kMaxLayers,
                    tr("Decoder layers; the model's layer pattern (sliding / full) repeats"));
    m_qHeads =
        spin(QStringLiteral("qHeadsSpin"), 1, core::kMaxHeads, tr("Query (attention) heads"));
    m_kvHeads = spin(QStringLiteral("kvHeadsSpin"), 1, core::kMaxHeads,
                     tr("Key/value heads the checkpoint stores (num_key_value_heads)"));
    m_headDim = spin(QStringLiteral("headDimSpin"), 1, core::kMaxHeadDim,
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
    return box;
}

QWidget* ScenarioPanel::buildHardwareGroup() {
    auto* box = new QGroupBox(tr("Hardware"));
    auto* f = form(box);
    m_gpu = new QComboBox(box);
    m_gpu->setObjectName(QStringLiteral("gpuCombo"));
    m_gpu->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_gpu->setMinimumContentsLength(14);
    m_gpu->setToolTip(tr("Memory as the CUDA driver reports it (torch total_memory)"));
    m_gpuCount = new QSpinBox(box);
    m_gpuCount->setObjectName(QStringLiteral("gpuCountSpin"));
    m_gpuCount->setRange(1, 64);
    m_gpuCount->setToolTip(tr("vLLM --tensor-parallel-size. Weights split over the GPUs; KV heads "
                              "per GPU = max(1, KV heads / TP): with fewer KV heads than GPUs "
                              "heads are replicated, not split"));
    m_memUtil = new QDoubleSpinBox(box);
    m_memUtil->setObjectName(QStringLiteral("memUtilSpin"));
    m_memUtil->setRange(0.05, 1.0);
    m_memUtil->setSingleStep(0.01);
    m_memUtil->setDecimals(2);
    m_memUtil->setKeyboardTracking(false);
    m_memUtil->setToolTip(tr("vLLM --gpu-memory-utilization. Memory for KV = total x utilization "
                             "- weights - peak activation - non-torch overhead"));
    m_weightDtype = new QComboBox(box);
    m_weightDtype->setObjectName(QStringLiteral("weightDtypeCombo"));
    m_weightDtype->addItem(tr("model's dtype"), -1);
    for (auto d : {core::WeightDtype::Fp32, core::WeightDtype::Fp16, core::WeightDtype::Bf16,
                   core::WeightDtype::Fp8, core::WeightDtype::Int8, core::WeightDtype::Int4})
        m_weightDtype->addItem(qs(core::weightDtypeName(d)).toUpper(), static_cast<int>(d));
    m_weightDtype->setToolTip(tr("Weights lever: bytes = params x bytes per weight / TP; INT4 "
                                 "counts an fp16 scale + zero per 128 weights (4.25 bits)"));
    m_activationGiB = new QDoubleSpinBox(box);
    m_activationGiB->setObjectName(QStringLiteral("activationSpin"));
    m_activationGiB->setRange(0, 512);
    m_activationGiB->setDecimals(2);
    m_activationGiB->setSingleStep(0.25);
    m_activationGiB->setSuffix(tr(" GiB"));
    m_activationGiB->setKeyboardTracking(false);
    m_activationGiB->setToolTip(tr("Peak activation memory per GPU, as vLLM profiles it "
                                   "(4.76 GiB for Llama-3.1-8B on an H100)"));
    auto* gpus = new QHBoxLayout;
    gpus->addWidget(m_gpuCount);
    gpus->addWidget(new QLabel(tr("util."), box));
    gpus->addWidget(m_memUtil);
    f->addRow(tr("GPU"), m_gpu);
    f->addRow(tr("GPUs (TP)"), gpus);
    f->addRow(tr("Weights"), m_weightDtype);
    f->addRow(tr("Activations"), m_activationGiB);
    return box;
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
    m_groupSize = new QSpinBox(m_quantGroup);
    m_groupSize->setObjectName(QStringLiteral("groupSizeSpin"));
    m_groupSize->setRange(1, core::kMaxHeadDim);
    m_groupSize->setKeyboardTracking(false);
    m_groupSize->setToolTip(tr("G elements share one scale (and zero): 32-128 is usual"));
    m_scaleType = new QComboBox(m_quantGroup);
    m_scaleType->setObjectName(QStringLiteral("scaleTypeCombo"));
    m_scaleType->addItem(tr("fp32 scales"), static_cast<int>(core::ScaleType::Fp32));
    m_scaleType->addItem(tr("fp16 scales"), static_cast<int>(core::ScaleType::Fp16));
    m_zeroPoint = new QCheckBox(tr("zero point (asymmetric)"), m_quantGroup);
    m_zeroPoint->setObjectName(QStringLiteral("zeroPointCheck"));
    m_formatInfo = new QLabel(m_quantGroup);
    m_formatInfo->setObjectName(QStringLiteral("formatInfo"));
    m_formatInfo->setWordWrap(true);
    auto* scales = new QHBoxLayout;
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
    m_prefixRequests = new QSpinBox(m_prefixGroup);
    m_prefixRequests->setObjectName(QStringLiteral("prefixRequestsSpin"));
    m_prefixRequests->setRange(0, static_cast<int>(core::kMaxRequests));
    m_prefixRequests->setSpecialValueText(tr("all requests"));
    m_prefixRequests->setKeyboardTracking(false);
    m_prefixRequests->setToolTip(tr("N: requests that share one copy of the prefix"));
    f->addRow(tr("Shared tokens"), m_prefixTokens);
    f->addRow(tr("Shared by"), m_prefixRequests);
    return m_prefixGroup;
}

QWidget* ScenarioPanel::buildWorkloadGroup() {
    auto* box = new QGroupBox(tr("Workload"));
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
    m_context->setRange(1, 1 << 24);
    m_context->setToolTip(tr("Tokens per request (prompt + output). Type 32K, 1M or 200000"));
    m_maxModelLen = new TokenSpinBox(box);
    m_maxModelLen->setObjectName(QStringLiteral("maxModelLenSpin"));
    m_maxModelLen->setRange(0, 1 << 24);
    m_maxModelLen->setToolTip(tr("vLLM --max-model-len: what an unpaged request reserves, and "
                                 "the M of vLLM's \"maximum concurrency\" line"));
    m_targetRequests = new QSpinBox(box);
    m_targetRequests->setObjectName(QStringLiteral("targetRequestsSpin"));
    m_targetRequests->setRange(0, static_cast<int>(core::kMaxRequests));
    m_targetRequests->setSpecialValueText(tr("as many as fit"));
    m_targetRequests->setKeyboardTracking(false);
    m_targetRequests->setToolTip(tr("Concurrency shown in the memory breakdown; beyond what fits, "
                                    "the GPUs needed are computed"));
    auto* ctx = new QHBoxLayout;
    ctx->addWidget(m_contextSlider, 1);
    ctx->addWidget(m_context);
    m_context->setMinimumWidth(80);
    f->addRow(tr("Context"), ctx);
    f->addRow(tr("Max model len"), m_maxModelLen);
    f->addRow(tr("Concurrency"), m_targetRequests);
    return box;
}

void ScenarioPanel::connectEdits() {
    connect(m_picker, &ModelPicker::modelChosen, this, &ScenarioPanel::onModelChosen);
    connect(m_importButton, &QPushButton::clicked, this, &ScenarioPanel::importRequested);
    connect(m_resetModel, &QPushButton::clicked, this, [this] { onModelChosen(m_catalogModel); });
    for (QSpinBox* s : {m_layers, m_qHeads, m_kvHeads, m_headDim})
        connect(s, &QSpinBox::valueChanged, this, &ScenarioPanel::onModelFieldEdited);
    connect(m_paramsB, &QDoubleSpinBox::valueChanged, this, &ScenarioPanel::onModelFieldEdited);
    connect(m_maxContext, &QSpinBox::valueChanged, this, &ScenarioPanel::onModelFieldEdited);

    auto edit = [this](auto fn) {
        return [this, fn](auto&&...) {
            if (m_updating)
                return;
            fn();
            commit();
        };
    };
    connect(m_gpu, &QComboBox::currentIndexChanged, this, edit([this] {
                if (const auto* g = io::findGpu(m_gpu->currentData().toString().toStdString()))
                    m_scenario.hardware.gpu = *g;
            }));
    connect(m_gpuCount, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.hardware.gpuCount = m_gpuCount->value(); }));
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
                    formatDim(m_scenario.model));
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

    connect(m_contextSlider, &QSlider::valueChanged, this, &ScenarioPanel::onContextSlider);
    connect(m_context, &QSpinBox::valueChanged, this, &ScenarioPanel::onContextSpin);
    connect(m_maxModelLen, &QSpinBox::valueChanged, this,
            edit([this] { m_scenario.workload.maxModelLen = m_maxModelLen->value(); }));
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
    commit();
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

void ScenarioPanel::setScenario(const core::Scenario& s) {
    m_scenario = s;
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
    core::ModelSpec m = std::move(result).value();
    if (auto problem = m.validate()) {
        emit errorOccurred(tr("Import config.json"),
                           tr("%1 is not usable: %2").arg(path, qs(*problem)));
        return false;
    }
    if (m.family.empty())
        m.family = "Imported";
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
    m_modelInfo->setText(info);
    m_modelInfo->setToolTip(m.notes.empty() ? QString() : qs(m.notes));

    // GQA choices: divisors of the q heads between 1 and q heads.
    m_gqaGroups->clear();
    for (int d = 1; d <= m.qHeads; ++d)
        if (m.qHeads % d == 0)
            m_gqaGroups->addItem(tr("%1 KV heads (%2 q heads each)").arg(d).arg(m.qHeads / d), d);
    setComboData(m_gqaGroups, m_scenario.levers.attention.gqaKvHeads);
    m_attentionMode->setItemText(0, tr("Native (%1 KV heads)").arg(m.kvHeads));
    m_attentionMode->setItemText(1, tr("MHA (%1 KV heads)").arg(m.qHeads));
    m_maxModelLen->setSpecialValueText(tr("model max (%1)").arg(formatTokensQ(m.maxContext)));
}

void ScenarioPanel::showScenario() {
    const QScopedValueRollback guard(m_updating, true);
    const core::Scenario& s = m_scenario;
    showModel();
    setComboData(m_gpu, qs(s.hardware.gpu.id));
    m_gpuCount->setValue(s.hardware.gpuCount);
    m_memUtil->setValue(s.hardware.memoryUtilization);
    setComboData(m_weightDtype,
                 s.hardware.weightDtype ? static_cast<int>(*s.hardware.weightDtype) : -1);
    // The reserve in use: the user's, or KV Ledger's estimate.
    m_activationGiB->setValue(core::bytesToGiB(
        s.hardware.activationBytes.value_or(core::computeLedger(s).activationBytes)));

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
}

void ScenarioPanel::updateEnabledStates() {
    const auto mode = static_cast<core::AttentionMode>(m_attentionMode->currentData().toInt());
    m_gqaGroups->setEnabled(mode == core::AttentionMode::Gqa && m_attentionGroup->isChecked());
    const auto& f = m_scenario.levers.quant.format;
    const bool grouped = f.granularity == core::Granularity::PerGroup ||
                         f.granularity == core::Granularity::KPerChannelVPerToken;
    const bool on = m_quantGroup->isChecked();
    m_groupSize->setEnabled(grouped && on);
    const bool scaled = core::isQuantized(f.dtype) && on;
    m_granularity->setEnabled(scaled);
    m_scaleType->setEnabled(scaled);
    m_zeroPoint->setEnabled(scaled);
    const int dim = formatDim(m_scenario.model);
    if (dim > 0 && !core::validate(f, dim)) {
        const double bits = 8.0 * double(core::kvBytesPerTokenPerHead(f, dim)) / (2.0 * dim);
        m_formatInfo->setText(tr("%1: %2 bits per element with scales")
                                  .arg(qs(core::formatLabel(f)))
                                  .arg(bits, 0, 'f', 2));
    }
}

bool ScenarioPanel::modelEdited() const {
    return !sameGeometry(m_scenario.model, m_catalogModel);
}

QString ScenarioPanel::validationMessage() const {
    return m_validation;
}

void ScenarioPanel::commit() {
    updateEnabledStates();
    std::optional<std::string> problem;
    const int dim = formatDim(m_scenario.model);
    if (m_scenario.levers.quant.enabled)
        problem = core::validate(m_scenario.levers.quant.format, dim);
    if (!problem)
        problem = m_scenario.validate();
    m_validation = problem ? qs(*problem) : QString();
    m_problem->setVisible(problem.has_value());
    if (problem) {
        m_problem->setText(
            QStringLiteral("<b>%1</b> %2").arg(tr("Not computed:"), m_validation.toHtmlEscaped()));
        return; // the charts keep the last valid scenario
    }
    emit scenarioChanged(m_scenario);
}

} // namespace kvl::widgets
