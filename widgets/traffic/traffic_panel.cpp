#include "widgets/traffic/traffic_panel.h"

#include "widgets/charts/chart_factory.h"
#include "widgets/charts/chart_registry.h"
#include "widgets/scenario/form_parts.h"
#include "widgets/scenario/token_spin_box.h"
#include "widgets/state/latest_job.h"
#include "widgets/traffic/traffic_charts.h"
#include "widgets/traffic/traffic_fields.h"

#include "core/io/scenario_file.h"

#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <cerrno>
#include <cmath>

#ifdef Q_OS_LINUX
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace kvl::widgets {

namespace {
constexpr int kDebounceMs = 200;
constexpr int kPollMs = 50;
// The worker's nice increment over the GUI thread: 0. Measured on the shared 2-core VM
// (tests/bench/bench_traffic_stall, four runs): at 0 a 16 ms timer fires 3-10 ms late at p95
// while the worker recomputes (36 ms at worst); at +10, 1.3-6 ms, but in two of the runs,
// under other processes' load, that worker finished 2-3 jobs in 3-4 s where the one at 0
// finished 17: past the 1 s recompute budget. Both keep p95 within the frame.
constexpr int kWorkerNice = 0;

// Lowers the calling worker thread's priority to `nice` above where it started (Linux: a
// thread's own nice value, setpriority on its id); never raises it back.
void lowerThisThread(int nice) {
#ifdef Q_OS_LINUX
    thread_local int applied = 0;
    if (nice <= applied)
        return;
    const auto tid = static_cast<id_t>(::gettid());
    errno = 0;
    const int now = ::getpriority(PRIO_PROCESS, tid);
    if (errno == 0 && ::setpriority(PRIO_PROCESS, tid, now + (nice - applied)) == 0)
        applied = nice;
#else
    (void)nice;
#endif
}

} // namespace

QString trafficNotSimulatedText(const LedgerView& view) {
    return view.snapshot
               ? TrafficPanel::tr("Not simulated: %1").arg(qs(view.snapshot->ledger.error))
               : TrafficPanel::tr("Not simulated yet");
}

TrafficPanel::TrafficPanel(QWidget* parent) : QWidget(parent) {
    m_debounce = new QTimer(this);
    m_debounce->setSingleShot(true);
    m_debounce->setInterval(kDebounceMs);
    connect(m_debounce, &QTimer::timeout, this, [this] { start(); });
    m_poll = new QTimer(this);
    m_poll->setInterval(kPollMs);
    connect(m_poll, &QTimer::timeout, this, [this] {
        if (m_job)
            m_progress->setValue(m_job->permille.load());
    });
    // Two threads: a cancelled job may still be stopping when the next one starts.
    m_pool.setMaxThreadCount(2);
    m_workerNice = kWorkerNice;
    buildUi();
}

TrafficPanel::~TrafficPanel() {
    if (m_job)
        m_job->cancel.store(true); // the worker stops within a few engine steps
}

void TrafficPanel::buildUi() {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    createInputs();
    layout->addLayout(buildInputGrid());
    layout->addLayout(buildRunRow());
    m_assumptions = new QLabel;
    m_assumptions->setObjectName(QStringLiteral("trafficAssumptionsLabel"));
    m_assumptions->setWordWrap(true);
    QFont small = m_assumptions->font();
    small.setPointSizeF(small.pointSizeF() * 0.9);
    m_assumptions->setFont(small);
    layout->addWidget(m_assumptions);
    layout->addWidget(buildResults(), 1);
    m_status->setText(tr("Not simulated yet"));
    m_assumptions->setText(qs(trafficAssumptions(inputs())));
    setCharts(tr("Not simulated yet"));
}

template <class Spin> Spin* TrafficPanel::input(Spin* spin, const char* name, const QString& tip) {
    spin->setObjectName(QLatin1String(name));
    spin->setToolTip(tip);
    spin->setKeyboardTracking(false); // typing "2000" simulates once, not at 2, 20, 200
    connect(spin, &Spin::valueChanged, this, &TrafficPanel::onInputsEdited);
    return spin;
}

QDoubleSpinBox* TrafficPanel::inputSpin(const char* name, const TrafficField& field, double value,
                                        const QString& suffix, const QString& tip) {
    auto* s = new QDoubleSpinBox;
    s->setRange(field.lo, field.hi);
    s->setDecimals(field.decimals);
    s->setValue(value);
    s->setSuffix(suffix);
    return input(s, name, tip);
}

QSpinBox* TrafficPanel::countSpin(const char* name, int lo, int hi, int value, const QString& tip) {
    auto* s = new QSpinBox;
    s->setRange(lo, hi);
    s->setValue(value);
    return input(s, name, tip);
}

QLineEdit* TrafficPanel::lengthEdit(const char* name, const QString& text) {
    auto* e = new QLineEdit(text);
    e->setObjectName(QLatin1String(name));
    e->setToolTip(tr("Tokens: a number (1024), uniform:LO:HI, lognormal:MEAN:SIGMA or "
                     "hist:V1:W1,V2:W2,… (as kvledger simulate takes them)"));
    e->setMaximumWidth(150);
    connect(e, &QLineEdit::editingFinished, this, &TrafficPanel::onInputsEdited);
    return e;
}

void TrafficPanel::createInputs() {
    m_rate = inputSpin("trafficRateSpin", kTrafficRateField, 0, tr(" req/s"),
                       tr("Arrival rate per replica for the occupancy and queue chart (Poisson); "
                          "auto = 80% of the scenario's sustainable rate"));
    m_rate->setSpecialValueText(tr("auto"));
    m_prompt = lengthEdit("trafficPromptEdit", QStringLiteral("1024"));
    m_output = lengthEdit("trafficOutputEdit", QStringLiteral("256"));
    m_prefixShare = inputSpin("trafficPrefixShareSpin", kTrafficPrefixShareField, 0, QString(),
                              tr("The share of requests that start with the shared prefix"));
    m_prefixTokens = new TokenSpinBox;
    m_prefixTokens->setObjectName(QStringLiteral("trafficPrefixTokensSpin"));
    m_prefixTokens->setRange(0, kTrafficMaxPrefixTokens);
    m_prefixTokens->setSpecialValueText(tr("none"));
    m_prefixTokens->setKeyboardTracking(false);
    m_prefixTokens->setToolTip(tr("The shared prefix's tokens (a system prompt); vLLM's prefix "
                                  "cache serves its full blocks once the +prefix lever is on"));
    connect(m_prefixTokens, &QSpinBox::valueChanged, this, &TrafficPanel::onInputsEdited);
    m_sloTtft = inputSpin("trafficSloTtftSpin", kTrafficSloTtftField, 2000, tr(" ms"),
                          tr("Time to first token objective (0 = none)"));
    m_sloTtft->setSpecialValueText(tr("none"));
    m_sloTpot = inputSpin("trafficSloTpotSpin", kTrafficSloTpotField, 100, tr(" ms"),
                          tr("Time per output token objective (0 = none)"));
    m_sloTpot->setSpecialValueText(tr("none"));
    m_attainment = inputSpin("trafficAttainmentSpin", kTrafficAttainmentField, 99, tr(" %"),
                             tr("The share of requests that must meet both objectives"));
    m_requests = countSpin("trafficRequestsSpin", kTrafficMinRequests, kTrafficMaxRequests, 400,
                           tr("Requests simulated per point: more is steadier and slower"));
    m_seed = countSpin("trafficSeedSpin", 1, kTrafficMaxSeed, 1,
                       tr("Seed of the arrivals and lengths: the same seed, the same result"));
}

QGridLayout* TrafficPanel::buildInputGrid() {
    auto* form = new QGridLayout;
    form->setHorizontalSpacing(8);
    // Three rows of three fields: the window keeps its minimum width at laptop sizes.
    auto* prefix = new QHBoxLayout;
    prefix->setContentsMargins(0, 0, 0, 0);
    prefix->addWidget(m_prefixTokens, 1);
    prefix->addWidget(buddyLabel(tr("of"), m_prefixShare));
    prefix->addWidget(m_prefixShare, 1);
    addLabelledRow(form, 0,
                   {{tr("R&ate:"), m_rate},
                    {tr("Pro&mpt tokens:"), m_prompt},
                    {tr("O&utput tokens:"), m_output}});
    addLabelledRow(form, 1,
                   {{tr("Shared &prefix:"), m_prefixTokens, prefix},
                    {tr("Re&quests:"), m_requests},
                    {tr("S&eed:"), m_seed}});
    addLabelledRow(
        form, 2,
        {{tr("SLO TT&FT:"), m_sloTtft}, {tr("TP&OT:"), m_sloTpot}, {tr("for"), m_attainment}});
    form->setColumnStretch(6, 1);
    return form;
}

QHBoxLayout* TrafficPanel::buildRunRow() {
    auto* run = new QHBoxLayout;
    m_progress = new QProgressBar;
    m_progress->setObjectName(QStringLiteral("trafficProgress"));
    m_progress->setRange(0, 1000);
    m_progress->setTextVisible(false);
    m_progress->setMaximumWidth(160);
    m_progress->setVisible(false);
    m_cancelButton = namedButton(tr("Cancel"), "trafficCancelButton");
    m_cancelButton->setEnabled(false);
    connect(m_cancelButton, &QPushButton::clicked, this, [this] {
        cancel();
        emit jobCancelled();
    });
    m_status = new QLabel;
    m_status->setObjectName(QStringLiteral("trafficStatusLabel"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    run->addWidget(m_progress);
    run->addWidget(m_cancelButton);
    run->addWidget(m_status, 1);
    return run;
}

QTableWidget* TrafficPanel::buildRateTable() {
    m_table = new QTableWidget(0, 4);
    m_table->setObjectName(QStringLiteral("trafficRateTable"));
    m_table->setHorizontalHeaderLabels(
        {tr("Ladder step"), tr("req/s at SLO"), tr("× baseline"), tr("Note")});
    m_table->horizontalHeaderItem(1)->setToolTip(
        tr("The sustainable rate: requests per second per replica at the SLO"));
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->setWordWrap(false);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setToolTip(tr("The largest arrival rate per replica at which the share of requests "
                           "asked for meets both objectives, per ladder step (simulated)"));
    return m_table;
}

QSplitter* TrafficPanel::buildResults() {
    m_ttft = static_cast<TrafficLatencyChart*>(createChart(*findChartSpec(u"traffic-ttft")));
    m_tpot = static_cast<TrafficLatencyChart*>(createChart(*findChartSpec(u"traffic-tpot")));
    m_timeline =
        static_cast<TrafficTimelineChart*>(createChart(*findChartSpec(u"traffic-timeline")));
    buildRateTable();

    auto* top = new QSplitter(Qt::Horizontal);
    top->addWidget(m_ttft);
    top->addWidget(m_tpot);
    top->setChildrenCollapsible(false);
    auto* bottom = new QSplitter(Qt::Horizontal);
    bottom->addWidget(m_timeline);
    bottom->addWidget(m_table);
    bottom->setChildrenCollapsible(false);
    bottom->setStretchFactor(0, 1);
    bottom->setStretchFactor(1, 1);
    auto* split = new QSplitter(Qt::Vertical);
    split->setObjectName(QStringLiteral("trafficSplitter"));
    split->addWidget(top);
    split->addWidget(bottom);
    split->setChildrenCollapsible(false);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    return split;
}

void TrafficPanel::setDebounceMs(int ms) {
    m_debounce->setInterval(ms);
}

TrafficInputs TrafficPanel::inputs() const {
    TrafficInputs in;
    in.rate = m_rate->value();
    in.prompt = m_prompt->text().trimmed().toStdString();
    in.output = m_output->text().trimmed().toStdString();
    in.prefixShare = m_prefixShare->value();
    in.prefixTokens = m_prefixTokens->value();
    in.sloTtftMs = m_sloTtft->value();
    in.sloTpotMs = m_sloTpot->value();
    in.attainment = m_attainment->value() / 100.0;
    in.requests = m_requests->value();
    in.seed = static_cast<std::uint64_t>(m_seed->value());
    in.speed = m_speed;
    return in;
}

void TrafficPanel::setInputs(const TrafficInputs& in) {
    {
        const QSignalBlocker b1(m_rate), b2(m_prompt), b3(m_output), b4(m_prefixShare),
            b5(m_prefixTokens), b6(m_sloTtft), b7(m_sloTpot), b8(m_attainment), b9(m_requests),
            b10(m_seed);
        m_rate->setValue(in.rate);
        m_prompt->setText(qs(in.prompt));
        m_output->setText(qs(in.output));
        m_prefixShare->setValue(in.prefixShare);
        m_prefixTokens->setValue(static_cast<int>(in.prefixTokens));
        m_sloTtft->setValue(in.sloTtftMs);
        m_sloTpot->setValue(in.sloTpotMs);
        m_attainment->setValue(in.attainment * 100);
        m_requests->setValue(static_cast<int>(in.requests));
        m_seed->setValue(static_cast<int>(in.seed));
    }
    onInputsEdited();
}

QString TrafficPanel::inputError() const {
    std::string error;
    (void)trafficWorkload(inputs(), 1, &error);
    return qs(error);
}

void TrafficPanel::setSpeedAssumptions(const core::SpeedAssumptions& a) {
    m_speed = a;
    onInputsEdited();
}

void TrafficPanel::setView(const LedgerView& view) {
    if (!view.snapshot || view.snapshot->invalid) {
        // Nothing to simulate: never the previous scenario's curves.
        m_haveScenario = false;
        cancel();
        m_result.reset();
        m_stale = true;
        const QString why = trafficNotSimulatedText(view);
        m_status->setText(why);
        setCharts(why);
        return;
    }
    const core::Scenario& s = view.snapshot->scenario;
    std::string key = io::scenarioToJson(s);
    if (m_haveScenario && key == m_scenarioKey)
        return; // units or scope: the figures are per replica and in ms either way
    m_scenarioKey = std::move(key);
    m_scenario = s;
    m_haveScenario = true;
    // The prompt follows the scenario's context (less the output) until the user edits it
    // (traffic_fields.h: the same rule as a book without this tab).
    if (m_prompt->text() == m_followedPrompt) {
        m_followedPrompt = qs(followedTrafficPrompt(s, m_output->text().trimmed().toStdString()));
        const QSignalBlocker b(m_prompt);
        m_prompt->setText(m_followedPrompt);
    }
    // The shared prefix follows the scenario's prefix lever until the user edits it.
    const std::int64_t prefix = followedTrafficPrefix(s);
    if (prefix != m_followedPrefix) {
        m_followedPrefix = prefix;
        const QSignalBlocker b1(m_prefixTokens), b2(m_prefixShare);
        m_prefixTokens->setValue(
            static_cast<int>(std::min<std::int64_t>(prefix, kTrafficMaxPrefixTokens)));
        m_prefixShare->setValue(prefix > 0 ? 1.0 : 0.0);
    }
    onInputsEdited();
}

void TrafficPanel::onInputsEdited() {
    m_stale = true;
    m_assumptions->setText(qs(trafficAssumptions(inputs())));
    // The running job answers what is no longer asked: it stops now, and its result is dropped.
    if (m_running) {
        if (m_job)
            m_job->cancel.store(true);
        ++m_generation;
        m_running = false;
        m_poll->stop();
    }
    schedule();
}

void TrafficPanel::schedule() {
    if (!m_haveScenario)
        return;
    if (!isVisible()) {
        m_debounce->stop(); // runs when shown (showEvent)
        return;
    }
    m_progress->setVisible(true);
    m_progress->setValue(0);
    m_cancelButton->setEnabled(true);
    m_status->setText(tr("Simulating…"));
    m_debounce->start();
}

void TrafficPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (m_stale && !m_running && m_haveScenario)
        schedule();
}

quint64 TrafficPanel::start() {
    m_debounce->stop();
    if (!m_haveScenario)
        return m_generation;
    if (m_job)
        m_job->cancel.store(true);
    const quint64 gen = ++m_generation;
    const TrafficInputs in = inputs();
    const core::Scenario s = m_scenario;
    m_job = std::make_shared<Job>();
    m_running = true;
    m_progress->setVisible(true);
    m_progress->setValue(0);
    m_cancelButton->setEnabled(true);
    m_status->setText(tr("Simulating %1 requests per point…").arg(thousandsQ(in.requests)));
    // The previous curves answer another question: they go until the new ones come.
    setCharts(tr("Simulating…"));
    m_poll->start();
    // The worker gets copies only: the scenario, the inputs and the job's shared flags.
    const std::shared_ptr<Job> job = m_job;
    whenLatestFinishes(
        this,
        QtConcurrent::run(&m_pool,
                          [s, in, job, nice = m_workerNice] {
                              lowerThisThread(nice);
                              return computeTraffic(s, in, &job->cancel, [job](double f) {
                                  job->permille.store(static_cast<int>(std::lround(f * 1000)));
                              });
                          }),
        gen, &m_generation, &m_discarded, [this](TrafficResult r) { onFinished(std::move(r)); });
    return gen;
}

void TrafficPanel::onFinished(TrafficResult r) {
    m_job.reset();
    m_running = false;
    m_poll->stop();
    m_progress->setVisible(false);
    m_cancelButton->setEnabled(false);
    if (r.cancelled) {
        ++m_discarded;
        return;
    }
    showResult(std::move(r));
}

void TrafficPanel::computeNow() {
    if (!m_haveScenario || resultIsCurrent())
        return;
    m_debounce->stop();
    if (m_job)
        m_job->cancel.store(true);
    ++m_generation; // an in-flight result is stale now
    m_running = false;
    m_poll->stop();
    m_progress->setVisible(false);
    m_cancelButton->setEnabled(false);
    showResult(computeTraffic(m_scenario, inputs()));
}

void TrafficPanel::cancel() {
    const bool pending = m_debounce->isActive();
    m_debounce->stop();
    if (!m_running && !pending)
        return;
    if (m_job)
        m_job->cancel.store(true);
    m_job.reset();
    if (m_running)
        ++m_generation;
    m_running = false;
    m_poll->stop();
    m_progress->setVisible(false);
    m_cancelButton->setEnabled(false);
    m_status->setText(tr("Cancelled: the charts are not of this scenario; change an input or "
                         "the scenario to simulate again"));
    setCharts(tr("Cancelled"));
}

void TrafficPanel::showResult(TrafficResult result) {
    m_result = std::make_shared<const TrafficResult>(std::move(result));
    m_stale = false;
    setCharts(QString());
    fillTable();
    const TrafficResult& r = *m_result;
    QString text;
    if (!r.error.empty()) {
        text = tr("Not simulated: %1").arg(qs(r.error));
    } else if (const TrafficStep* cur = r.currentStep()) {
        text = cur->found
                   ? tr("<b>%1 req/s per replica</b> at the SLO (%2). At %3 req/s: p99 TTFT %4 ms, "
                        "p99 TPOT %5 ms.")
                         .arg(trafficRateQ(cur->sustainableRate), qs(cur->label).toHtmlEscaped(),
                              trafficRateQ(r.currentRate))
                         .arg(r.current.ttftMs.p99, 0, 'f', 0)
                         .arg(r.current.tpotMs.p99, 0, 'f', 1)
                   : tr("No rate meets the SLO for %1: %2")
                         .arg(qs(cur->label).toHtmlEscaped(), qs(cur->note).toHtmlEscaped());
        text += QLatin1Char(' ') + tr("%1 simulations.").arg(r.runs);
    }
    m_status->setText(text);
    emit resultShown();
}

void TrafficPanel::setCharts(const QString& status) {
    m_ttft->setResult(m_result, status);
    m_tpot->setResult(m_result, status);
    m_timeline->setResult(m_result, status);
}

void TrafficPanel::fillTable() {
    m_table->setRowCount(0);
    if (!m_result)
        return;
    const auto& steps = m_result->steps;
    double baseline = 0;
    if (!steps.empty() && steps.front().id == core::LadderStepId::Baseline && steps.front().found)
        baseline = steps.front().sustainableRate;
    m_table->setRowCount(static_cast<int>(steps.size()));
    for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
        const TrafficStep& st = steps[static_cast<std::size_t>(i)];
        auto item = [](const QString& text, bool right = false) {
            auto* it = new QTableWidgetItem(text);
            if (right)
                it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            return it;
        };
        auto* name = item(st.current ? tr("%1 (current)").arg(qs(st.label)) : qs(st.label));
        if (st.current) {
            QFont f = name->font();
            f.setBold(true);
            name->setFont(f);
        }
        m_table->setItem(i, 0, name);
        m_table->setItem(i, 1,
                         item(st.found ? trafficRateQ(st.sustainableRate) : tr("none"), true));
        m_table->setItem(
            i, 2,
            item(baseline > 0 && st.found
                     ? QStringLiteral("×%1").arg(st.sustainableRate / baseline, 0, 'f', 2)
                     : QStringLiteral("–"),
                 true));
        m_table->setItem(i, 3, item(qs(st.note)));
        m_table->item(i, 3)->setToolTip(qs(st.note));
        m_table->item(i, 0)->setToolTip(qs(st.note));
    }
    // The note column only when a step has one (a step that does not run says why).
    bool notes = false;
    for (const TrafficStep& st : steps)
        notes = notes || !st.note.empty();
    m_table->setColumnHidden(3, !notes);
}

QString TrafficPanel::statusText() const {
    return m_status->text();
}

} // namespace kvl::widgets
