#include "widgets/probe/probe_panel.h"

#include "widgets/charts/chart_factory.h"
#include "widgets/export/atomic_write.h"
#include "widgets/probe/probe_charts.h"
#include "widgets/probe/probe_overlay.h"
#include "widgets/probe/probe_results_model.h"
#include "widgets/scenario/form_parts.h"

#include "gpu_probe/backend.h"
#include "gpu_probe/io/probe_json.h"
#include "gpu_probe/ops.h"
#include "gpu_probe/run/memory_guard.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace kvl::widgets {

namespace {

constexpr int kDefaultBatch = 4;
constexpr std::int64_t kMaxProbeContext = std::int64_t(1) << 24; // parseContextList's bound

QString probeFormatFor(const core::KvFormat& f) {
    const auto all = probe::allProbeFormats();
    for (const auto& p : all)
        if (p.format == f)
            return QString::fromStdString(p.id);
    for (const auto& p : all)
        if (p.format.dtype == f.dtype)
            return QString::fromStdString(p.id);
    return QStringLiteral("fp16");
}

} // namespace

std::int64_t probeContextFor(std::int64_t wanted, const ProbeRequest& request,
                             std::int64_t hostBudgetBytes) {
    std::int64_t ctx = std::clamp<std::int64_t>(wanted, 1, kMaxProbeContext);
    if (request.backend != "cpu")
        return ctx; // the device's own guard answers when Run is pressed
    const std::int64_t budget =
        hostBudgetBytes > 0 ? hostBudgetBytes : probe::hostAvailableBytes() / 2;
    if (budget <= 0)
        return ctx; // unknown: the guard still refuses a run that cannot fit
    probe::ProbePlan plan;
    plan.backend = request.backend;
    plan.model = request.model.layers.empty() ? probe::defaultModel() : request.model;
    // FP16 is the largest format the defaults check (the baseline): if it fits, they all do.
    plan.format = *probe::parseProbeFormat("fp16");
    plan.blockSize = request.blockSize;
    plan.batch = request.batches.empty() ? kDefaultBatch : request.batches.front();
    plan.prefixTokens = 0;
    plan.qualityRequests = request.qualityRequests;
    for (; ctx > 1; ctx /= 2) {
        plan.context = ctx;
        const auto need = probe::estimatePeakHostBytes(plan);
        if (need && *need <= budget)
            break;
    }
    return ctx;
}

std::variant<std::vector<std::int64_t>, QString> parseContextList(const QString& text) {
    std::vector<std::int64_t> out;
    const QStringList parts =
        text.split(QRegularExpression(QStringLiteral("[,;\\s]+")), Qt::SkipEmptyParts);
    for (const QString& raw : parts) {
        QString p = raw.trimmed().toUpper();
        std::int64_t mult = 1;
        if (p.endsWith(QLatin1Char('K'))) {
            mult = 1024;
            p.chop(1);
        } else if (p.endsWith(QLatin1Char('M'))) {
            mult = 1024 * 1024;
            p.chop(1);
        }
        bool ok = false;
        const qlonglong v = p.toLongLong(&ok);
        if (!ok || v < 1 || v * mult > (std::int64_t(1) << 24))
            return QObject::tr("context \"%1\" is not a token count from 1 to 16M (e.g. 512, 4K)")
                .arg(raw);
        if (std::find(out.begin(), out.end(), v * mult) == out.end())
            out.push_back(v * mult);
    }
    if (out.empty())
        return QObject::tr("give at least one context length (e.g. 512, 4K)");
    if (out.size() > 16)
        return QObject::tr("at most 16 context lengths");
    std::sort(out.begin(), out.end());
    return out;
}

// ------------------------------------------------------------------------------------------

StallMonitor::StallMonitor(QObject* parent) : QObject(parent), m_timer(new QTimer(this)) {
    m_timer->setTimerType(Qt::PreciseTimer);
    m_timer->setInterval(kIntervalMs);
    connect(m_timer, &QTimer::timeout, this, [this] {
        const qint64 now = m_clock.nsecsElapsed();
        m_maxGapMs = std::max(m_maxGapMs, double(now - m_lastNs) / 1e6);
        m_lastNs = now;
    });
}

void StallMonitor::start() {
    m_maxGapMs = 0;
    m_clock.start();
    m_lastNs = 0;
    m_timer->start();
}

void StallMonitor::stop() {
    m_timer->stop();
}

bool StallMonitor::isRunning() const {
    return m_timer->isActive();
}

// ------------------------------------------------------------------------------------------

ProbePanel::ProbePanel(QWidget* parent)
    : QWidget(parent), m_worker(new ProbeWorker(this)), m_stall(new StallMonitor(this)),
      m_model(new ProbeResultsModel(this)) {
    buildUi();
    connect(m_worker, &ProbeWorker::progressChanged, this, [this](int p, const QString& stage) {
        m_progress->setValue(p);
        m_stage->setText(stage);
    });
    connect(m_worker, &ProbeWorker::finished, this, &ProbePanel::onFinished);
    updateBackendInfo();
    // The context default depends on the backend (the CPU's is bounded by host memory).
    connect(m_backend, &QComboBox::currentIndexChanged, this, [this] { applyDefaults(false); });
    setRunning(false);
}

ProbePanel::~ProbePanel() = default;

void ProbePanel::buildUi() {
    QScrollArea* scroll = buildControls();
    QWidget* results = buildResults();

    m_quality = static_cast<QualityChart*>(createChart(*findChartSpec(u"quality")));
    m_speed = static_cast<SpeedChart*>(createChart(*findChartSpec(u"speed")));
    auto* charts = new QSplitter(Qt::Horizontal);
    charts->addWidget(m_quality);
    charts->addWidget(m_speed);
    m_splitter = new QSplitter(Qt::Vertical);
    m_splitter->addWidget(results);
    m_splitter->addWidget(charts);
    m_splitter->setStretchFactor(0, 2);
    m_splitter->setStretchFactor(1, 3);

    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(scroll);
    layout->addWidget(m_splitter, 1);
    m_source->setText(tr("<b>No measurements yet.</b> Press Run to measure on this machine, or "
                         "open a results file written by <tt>kvprobe bench --json</tt> on a GPU "
                         "machine."));
}

QScrollArea* ProbePanel::buildControls() {
    auto* controls = new QWidget;
    auto* cl = new QVBoxLayout(controls);
    cl->setContentsMargins(0, 0, 4, 0);
    cl->addWidget(buildBackendBox());
    cl->addWidget(buildMeasureBox());
    cl->addWidget(buildRunBox());
    cl->addLayout(buildFileButtons());
    cl->addStretch(1);

    auto* scroll = new QScrollArea;
    scroll->setWidget(controls);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setMinimumWidth(260);
    scroll->setMaximumWidth(340);
    return scroll;
}

QGroupBox* ProbePanel::buildBackendBox() {
    auto* backendBox = new QGroupBox(tr("Backend"));
    auto* bl = new QVBoxLayout(backendBox);
    m_backend = new QComboBox;
    m_backend->setObjectName(QStringLiteral("backendCombo"));
    m_backend->setToolTip(tr("Where the KV store and paged-attention kernels run"));
    m_backend->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_backend->setMinimumContentsLength(18);
    bl->addWidget(m_backend);
    m_backendInfo = new QLabel;
    m_backendInfo->setObjectName(QStringLiteral("backendInfo"));
    m_backendInfo->setWordWrap(true);
    m_backendInfo->setTextInteractionFlags(Qt::TextSelectableByMouse);
    bl->addWidget(m_backendInfo);
    return backendBox;
}

QGroupBox* ProbePanel::buildMeasureBox() {
    auto* whatBox = new QGroupBox(tr("What to measure"));
    auto* form = new QFormLayout(whatBox);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_modelLabel = new QLabel;
    m_modelLabel->setObjectName(QStringLiteral("probeModelLabel"));
    m_modelLabel->setWordWrap(true);
    form->addRow(tr("Layer:"), m_modelLabel);
    form->addRow(tr("Formats:"), buildFormatList());
    // A field that follows the scenario until the user edits it; `edited` remembers the edit.
    auto followingSpin = [this](const char* name, int lo, int hi, const QString& tip,
                                bool& edited) {
        auto* s = new QSpinBox;
        s->setObjectName(QLatin1String(name));
        s->setRange(lo, hi);
        s->setToolTip(tip);
        connect(s, &QSpinBox::valueChanged, this, [flag = &edited] { *flag = true; });
        return s;
    };
    m_batch = followingSpin("batchSpin", 1, 256,
                            tr("Requests decoded together (one query token each)"), m_editedBatch);
    form->addRow(tr("Batch:"), m_batch);
    m_contexts = new QLineEdit;
    m_contexts->setObjectName(QStringLiteral("contextsEdit"));
    m_contexts->setToolTip(tr("Tokens per request, comma separated (512, 4K, 16K). Follows the "
                              "scenario's context until edited; on the CPU it is halved until "
                              "the run fits in half of the free memory"));
    connect(m_contexts, &QLineEdit::textEdited, this, [this] { m_editedContexts = true; });
    form->addRow(tr("Contexts:"), m_contexts);
    m_block = followingSpin("blockSpin", 1, 1024,
                            tr("Tokens per page (vLLM --block-size); KIVI formats round up to 32"),
                            m_editedBlock);
    form->addRow(tr("Block size:"), m_block);
    m_prefix =
        followingSpin("prefixSpin", 0, 1 << 24,
                      tr("Prompt tokens shared by every request of the batch (its full blocks "
                         "are stored once)"),
                      m_editedPrefix);
    m_prefix->setSingleStep(128);
    form->addRow(tr("Shared prefix:"), m_prefix);
    form->addRow(tr("Repeats:"), buildRepeatsRow());
    m_defaultsButton = namedButton(tr("Reset to Scenario"), "defaultsButton",
                                   tr("Model layer, KV format, block size, prefix and context from "
                                      "the scenario on the left"));
    connect(m_defaultsButton, &QPushButton::clicked, this, &ProbePanel::resetToScenario);
    form->addRow(QString(), m_defaultsButton);
    return whatBox;
}

QListWidget* ProbePanel::buildFormatList() {
    m_formats = new QListWidget;
    m_formats->setObjectName(QStringLiteral("formatList"));
    m_formats->setToolTip(tr("KV formats to store and attend over; the scenario's format and the "
                             "FP16 baseline are checked by default"));
    for (const auto& f : probe::allProbeFormats()) {
        auto* item = new QListWidgetItem(QString::fromStdString(f.label), m_formats);
        item->setToolTip(tr("%1: %2 (kvprobe --kv-dtype %3)")
                             .arg(QString::fromStdString(f.label), qs(core::formatLabel(f.format)),
                                  QString::fromStdString(f.id)));
        item->setData(Qt::UserRole, QString::fromStdString(f.id));
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
        item->setCheckState(Qt::Unchecked);
    }
    m_formats->setMinimumHeight(110);
    connect(m_formats, &QListWidget::itemChanged, this, [this] { m_editedFormats = true; });
    return m_formats;
}

QHBoxLayout* ProbePanel::buildRepeatsRow() {
    auto* rowRT = new QHBoxLayout;
    m_repeats = namedSpin("repeatsSpin", 1, 100, 3,
                          tr("Timed repeats after one warm-up; the median is shown"));
    m_threads =
        namedSpin("threadsSpin", 1, std::max(1, probe::defaultThreads()), defaultProbeThreads(),
                  tr("CPU threads for the probe; (cores - 1) by default, so the window "
                     "keeps a core and stays responsive"));
    rowRT->addWidget(m_repeats);
    rowRT->addWidget(new QLabel(tr("threads")));
    rowRT->addWidget(m_threads);
    return rowRT;
}

QGroupBox* ProbePanel::buildRunBox() {
    auto* runBox = new QGroupBox(tr("Run"));
    auto* rl = new QVBoxLayout(runBox);
    auto* buttons = new QHBoxLayout;
    m_runButton = namedButton(tr("Run"), "runButton",
                              tr("Measure on a worker thread; the window stays usable"));
    m_runButton->setDefault(true);
    m_cancelButton = namedButton(tr("Cancel"), "cancelButton");
    buttons->addWidget(m_runButton, 1);
    buttons->addWidget(m_cancelButton);
    rl->addLayout(buttons);
    m_progress = new QProgressBar;
    m_progress->setObjectName(QStringLiteral("progressBar"));
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    rl->addWidget(m_progress);
    m_stage = new QLabel;
    m_stage->setObjectName(QStringLiteral("stageLabel"));
    m_stage->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    rl->addWidget(m_stage);
    connect(m_runButton, &QPushButton::clicked, this, [this] { run(); });
    connect(m_cancelButton, &QPushButton::clicked, this, &ProbePanel::cancel);
    return runBox;
}

QHBoxLayout* ProbePanel::buildFileButtons() {
    auto* files = new QHBoxLayout;
    m_openButton =
        namedButton(tr("Open Results..."), "openResultsButton",
                    tr("Load `kvprobe bench --json` or `kvprobe run --json` output, e.g. "
                       "from a GPU machine"));
    m_saveButton = namedButton(tr("Save Results..."), "saveResultsButton",
                               tr("Save the shown results as kvprobe JSON"));
    files->addWidget(m_openButton);
    files->addWidget(m_saveButton);
    // The window owns the file dialogs (File > Open Probe Results...); the buttons ask for them.
    connect(m_openButton, &QPushButton::clicked, this, &ProbePanel::openResultsRequested);
    connect(m_saveButton, &QPushButton::clicked, this, &ProbePanel::saveResultsRequested);
    return files;
}

QWidget* ProbePanel::buildResults() {
    auto* results = new QWidget;
    auto* resl = new QVBoxLayout(results);
    resl->setContentsMargins(0, 0, 0, 0);
    m_source = new QLabel;
    m_source->setObjectName(QStringLiteral("sourceLabel"));
    m_source->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_source->setWordWrap(true);
    m_source->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    resl->addWidget(m_source);
    // The cache caveat is a badge, not a tooltip: a reader of the speed columns must see it.
    m_caveat = new QLabel;
    m_caveat->setObjectName(QStringLiteral("cacheCaveat"));
    m_caveat->setWordWrap(true);
    m_caveat->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_caveat->setStyleSheet(QStringLiteral("QLabel { background: #fff3cd; color: #664d03; "
                                           "border: 1px solid #e0c36a; border-radius: 3px; "
                                           "padding: 2px 4px; }"));
    m_caveat->setVisible(false);
    resl->addWidget(m_caveat);
    m_message = new QLabel;
    m_message->setObjectName(QStringLiteral("messageLabel"));
    m_message->setWordWrap(true);
    m_message->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_message->setVisible(false);
    resl->addWidget(m_message);
    m_view = resultsTable(m_model, "resultsView");
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setStretchLastSection(true);
    resl->addWidget(m_view, 1);
    resl->addWidget(buildQualityGuide());
    return results;
}

QLabel* ProbePanel::buildQualityGuide() {
    // What the quality columns mean for serving, from published results: FP8 / INT8 KV are
    // near lossless on GSM8K and MMLU, INT4 with per-group scales costs ~0.2-0.3 perplexity,
    // and 2-bit per-token quantization breaks down unless keys are quantized per channel
    // (KIVI, arXiv 2402.02750; KVQuant, arXiv 2401.18079).
    m_qualityGuide = new QLabel;
    m_qualityGuide->setObjectName(QStringLiteral("qualityGuide"));
    m_qualityGuide->setWordWrap(true);
    m_qualityGuide->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_qualityGuide->setText(
        tr("<b>What quality is acceptable:</b> FP8 and INT8 KV are about lossless on GSM8K and "
           "MMLU; INT4 with per-group scales costs about +0.2-0.3 perplexity; INT2 per token "
           "breaks the model (KIVI's per-channel keys keep 2 bits usable). The error columns "
           "compare one layer's attention output with FP16's: lower relative L2 and higher "
           "top-8 agreement are better."));
    return m_qualityGuide;
}

void ProbePanel::updateBackendInfo() {
    m_backend->clear();
    QStringList reasons;
    for (const auto& b : probe::listBackends()) {
        const QString name = QString::fromStdString(b.name).toUpper();
        if (b.available) {
            m_backend->addItem(QStringLiteral("%1: %2").arg(name, QString::fromStdString(b.device)),
                               QString::fromStdString(b.name));
            if (!b.details.empty())
                m_backend->setItemData(m_backend->count() - 1, QString::fromStdString(b.details),
                                       Qt::ToolTipRole);
        } else {
            m_backend->addItem(tr("%1: unavailable").arg(name), QString::fromStdString(b.name));
            // Shown, but not selectable: the reason is right below.
            if (auto* item = qobject_cast<QStandardItemModel*>(m_backend->model()))
                item->item(m_backend->count() - 1)->setEnabled(false);
            reasons << tr("%1 unavailable: %2").arg(name, QString::fromStdString(b.reason));
        }
    }
    // A GPU, when there is one, is what the user wants to measure.
    const int cuda = m_backend->findData(QStringLiteral("cuda"));
    bool cudaOk = false;
    for (const auto& b : probe::listBackends())
        cudaOk |= b.name == "cuda" && b.available;
    m_backend->setCurrentIndex(cudaOk && cuda >= 0 ? cuda
                                                   : m_backend->findData(QStringLiteral("cpu")));
    m_backendInfo->setText(reasons.isEmpty() ? tr("CUDA device available")
                                             : reasons.join(QLatin1Char('\n')));
}

void ProbePanel::setView(const LedgerView& view) {
    if (view.snapshot != m_snapshot) {
        m_snapshot = view.snapshot;
        applyDefaults(false);
    }
    m_model->setUnits(view.units);
    m_quality->setView(view);
    m_speed->setView(view);
}

void ProbePanel::resetToScenario() {
    applyDefaults(true);
}

void ProbePanel::applyDefaults(bool force) {
    if (!m_snapshot)
        return;
    const core::Scenario& s = m_snapshot->scenario;
    core::ModelSpec model = s.model;
    QString modelNote;
    if (model.isMla() || model.validate()) {
        model = probe::defaultModel();
        modelNote = tr(" (the scenario's model has no full-attention layer to probe)");
    }
    m_runModel = model;
    m_modelLabel->setText(tr("%1: %2 q / %3 KV heads x head_dim %4%5")
                              .arg(qs(model.name))
                              .arg(model.qHeads)
                              .arg(model.kvHeads)
                              .arg(model.headDim)
                              .arg(modelNote));
    if (force)
        m_editedFormats = m_editedBatch = m_editedContexts = m_editedBlock = m_editedPrefix = false;
    if (!m_editedFormats) {
        const QString scen = probeFormatFor(m_snapshot->ledger.kv.format);
        QSignalBlocker b(m_formats);
        for (int i = 0; i < m_formats->count(); ++i) {
            QListWidgetItem* it = m_formats->item(i);
            const QString id = it->data(Qt::UserRole).toString();
            it->setCheckState(id == scen || id == QLatin1String("fp16") ? Qt::Checked
                                                                        : Qt::Unchecked);
        }
    }
    if (!m_editedBatch) {
        QSignalBlocker b(m_batch);
        m_batch->setValue(kDefaultBatch);
    }
    ProbeRequest fit;
    fit.backend = m_backend->currentData().toString().toStdString();
    fit.model = m_runModel;
    fit.blockSize = m_block->value();
    fit.batches = {m_batch->value()};
    // Worked out again only when what it depends on changed: on the CPU it reads the host's free
    // memory (/proc, cgroup files), and applyDefaults runs at every scenario change (a tenth of
    // a slider step's GUI time in perf).
    const QString key = QStringLiteral("%1|%2|%3|%4x%5x%6x%7|%8|%9|%10")
                            .arg(s.workload.context)
                            .arg(qs(fit.backend), qs(m_runModel.name))
                            .arg(m_runModel.layers.size())
                            .arg(m_runModel.qHeads)
                            .arg(m_runModel.kvHeads)
                            .arg(m_runModel.headDim)
                            .arg(fit.blockSize)
                            .arg(m_batch->value())
                            .arg(m_hostBudgetBytes);
    if (force || key != m_contextKey) { // Reset reads the free memory again
        m_contextKey = key;
        m_contextForKey = probeContextFor(s.workload.context, fit, m_hostBudgetBytes);
    }
    const std::int64_t ctx = m_contextForKey;
    if (!m_editedContexts && m_contexts->text() != formatTokensQ(ctx))
        m_contexts->setText(formatTokensQ(ctx));
    if (!m_editedBlock) {
        QSignalBlocker b(m_block);
        // The block size vLLM runs with (0 in the scenario is "vLLM's choice", not 0 tokens).
        const int block = m_snapshot->ledger.blockSize;
        m_block->setValue(s.levers.paging.enabled && block > 0 ? block : 16);
    }
    if (!m_editedPrefix) {
        QSignalBlocker b(m_prefix);
        const std::int64_t prefix =
            s.levers.prefix.enabled ? std::min(s.levers.prefix.sharedTokens, ctx / 2) : 0;
        m_prefix->setValue(int(std::clamp<std::int64_t>(prefix, 0, m_prefix->maximum())));
    }
}

std::variant<ProbeRequest, QString> ProbePanel::request() const {
    ProbeRequest r;
    r.backend = m_backend->currentData().toString().toStdString();
    r.model = m_runModel.layers.empty() ? probe::defaultModel() : m_runModel;
    for (int i = 0; i < m_formats->count(); ++i)
        if (m_formats->item(i)->checkState() == Qt::Checked)
            r.formatIds.push_back(m_formats->item(i)->data(Qt::UserRole).toString().toStdString());
    if (r.formatIds.empty())
        return tr("Check at least one KV format to measure");
    auto ctx = parseContextList(m_contexts->text());
    if (auto* e = std::get_if<QString>(&ctx))
        return *e;
    r.contexts = std::get<std::vector<std::int64_t>>(ctx);
    r.batches = {m_batch->value()};
    r.blockSize = m_block->value();
    r.prefixTokens = m_prefix->value();
    r.repeats = m_repeats->value();
    r.threads = m_threads->value();
    return r;
}

bool ProbePanel::run() {
    if (isRunning()) {
        setMessage(tr("A probe run is already going"), true);
        return false;
    }
    auto req = request();
    if (auto* e = std::get_if<QString>(&req)) {
        setMessage(*e, true);
        return false;
    }
    if (Status started = m_worker->start(std::get<ProbeRequest>(req)); !started) {
        setMessage(QString::fromStdString(started.error().message), true);
        return false;
    }
    m_lastCancelLatencyMs = -1;
    m_cancelClock.invalidate();
    m_runClock.start();
    m_stall->start();
    setRunning(true);
    setMessage({}, false);
    emit runStarted();
    return true;
}

void ProbePanel::cancel() {
    if (!isRunning())
        return;
    m_cancelClock.start();
    m_stage->setText(tr("cancelling..."));
    m_worker->cancel();
}

bool ProbePanel::isRunning() const {
    return m_worker->isRunning();
}

void ProbePanel::setRunning(bool running) {
    m_runButton->setEnabled(!running);
    m_cancelButton->setEnabled(running);
    for (QWidget* w : std::initializer_list<QWidget*>{m_backend, m_formats, m_batch, m_contexts,
                                                      m_block, m_prefix, m_repeats, m_threads,
                                                      m_defaultsButton, m_openButton})
        w->setEnabled(!running);
    if (!running)
        m_stage->setText(m_progress->value() >= 100 ? tr("done") : QString());
}

void ProbePanel::onFinished(const probe::ProbeReport& rep) {
    m_stall->stop();
    m_lastStallMs = m_stall->maxStallMs();
    if (m_cancelClock.isValid())
        m_lastCancelLatencyMs = double(m_cancelClock.nsecsElapsed()) / 1e6;
    const double secs = double(m_runClock.elapsed()) / 1000.0;
    bool ok = false;
    if (rep.status == probe::ProbeStatus::Cancelled) {
        m_progress->setValue(0);
        setMessage(tr("Cancelled after %1 s (stopped %2 ms after Cancel%3); the results shown "
                      "before are kept.")
                       .arg(secs, 0, 'f', 1)
                       .arg(m_lastCancelLatencyMs, 0, 'f', 0)
                       .arg(m_worker->windingDown() > 0
                                ? tr("; an uninterruptible step winds down in the background")
                                : QString()),
                   true);
    } else if (rep.okRows() == 0) {
        m_progress->setValue(0);
        QString why = QString::fromStdString(rep.error.message);
        for (const auto& r : rep.rows)
            if (why.isEmpty() && !r.error.message.empty())
                why = QString::fromStdString(r.formatLabel + ": " + r.error.message);
        setMessage(tr("The probe failed: %1. The results shown before are kept.")
                       .arg(why.isEmpty() ? tr("no measurement succeeded") : why),
                   true);
    } else {
        m_progress->setValue(100);
        showReport(rep, tr("this machine"));
        const int failed = int(rep.rows.size()) - rep.okRows();
        if (failed > 0)
            setMessage(
                tr("%n measurement(s) failed; see the table rows marked failed.", nullptr, failed),
                true);
        else
            setMessage(
                tr("Measured %n format/context combination(s) in %1 s.", nullptr, rep.okRows())
                    .arg(secs, 0, 'f', 1),
                false);
        ok = true;
    }
    setRunning(false);
    emit runFinished(ok);
}

void ProbePanel::showReport(const probe::ProbeReport& report, const QString& origin) {
    m_origin = origin;
    m_model->setReport(report);
    m_quality->setReport(report);
    m_speed->setReport(report);
    // The read stream is the CPU's decode yardstick (calibration.h); older files have none.
    const QString bandwidth = report.readGBs > 0
                                  ? tr("copy %1 GB/s, read stream %2 GB/s")
                                        .arg(report.copyGBs, 0, 'f', 1)
                                        .arg(report.readGBs, 0, 'f', 1)
                                  : tr("copy bandwidth %1 GB/s").arg(report.copyGBs, 0, 'f', 1);
    m_source->setText(tr("<b>Measured on %1</b> &nbsp;(%2, %3; %4) &nbsp; "
                         "All bytes are one layer; hover a cell for details.")
                          .arg(QString::fromStdString(report.label()).toHtmlEscaped(),
                               backendLabel(report).toHtmlEscaped(), origin.toHtmlEscaped(),
                               bandwidth));
    m_source->setToolTip(
        QString::fromStdString(report.device + ", host " + report.host + ", " + report.date));
    const QString caveat = cacheCaveat(report);
    m_caveat->setText(caveat.isEmpty() ? QString()
                                       : QStringLiteral("<b>%1</b>").arg(caveat.toHtmlEscaped()));
    m_caveat->setVisible(!caveat.isEmpty());
    emit reportChanged(report);
}

const probe::ProbeReport& ProbePanel::report() const {
    return m_model->report();
}

bool ProbePanel::hasResults() const {
    return !m_model->isEmpty();
}

QString ProbePanel::sourceText() const {
    if (!hasResults())
        return {};
    return probeSourceText(report(), m_origin);
}

bool ProbePanel::loadResults(const QString& path, QString* error) {
    auto loaded = probe::loadProbeReport(QDir::toNativeSeparators(path).toStdString());
    if (!loaded) {
        const QString e = QString::fromStdString(loaded.error().message);
        if (error)
            *error = e;
        setMessage(
            tr("Could not open the probe results: %1. The results shown before are kept.").arg(e),
            true);
        return false;
    }
    const auto& rep = loaded.value();
    showReport(rep, probeFileOrigin(path));
    setMessage(tr("Loaded %n measurement(s) from %1.", nullptr, int(rep.rows.size()))
                   .arg(QDir::toNativeSeparators(path)),
               false);
    return true;
}

bool ProbePanel::saveResults(const QString& path, QString* error) const {
    const auto saved =
        writeFileAtomically(path, QByteArray::fromStdString(probe::probeReportToJson(report())));
    if (!saved && error)
        *error = qs(saved.error().message);
    return saved.ok();
}

void ProbePanel::setMessage(const QString& text, bool error) {
    m_messageText = text;
    m_messageError = error;
    m_message->setVisible(!text.isEmpty());
    m_message->setText(text);
    m_message->setStyleSheet(error ? QStringLiteral("QLabel { color: #d0352b; font-weight: bold; }")
                                   : QString());
    emit messageChanged(text, error);
}

} // namespace kvl::widgets
