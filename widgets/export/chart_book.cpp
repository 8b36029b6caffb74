#include "widgets/export/chart_book.h"

#include "widgets/charts/breakdown_chart.h"
#include "widgets/charts/chart_factory.h"
#include "widgets/charts/curve_chart.h"
#include "widgets/charts/engines_view.h"
#include "widgets/charts/ladder_model.h"
#include "widgets/charts/speed_chart.h"
#include "widgets/deployment/deployment_panel.h"
#include "widgets/deployment/plan_model.h"
#include "widgets/probe/probe_charts.h"
#include "widgets/probe/probe_results_model.h"
#include "widgets/state/scenario_document.h"
#include "widgets/traffic/traffic_charts.h"
#include "widgets/traffic/traffic_fields.h"
#include "widgets/traffic/traffic_panel.h"

#include "core/io/catalog.h"

#include <QApplication>
#include <QDir>

namespace kvl::widgets {

ChartBook::ChartBook(const ScenarioDocument* doc, QObject* parent)
    : QObject(parent), m_doc(doc), m_ladder(new LadderModel(this)),
      m_planModel(new PlanTableModel(this)), m_probeModel(new ProbeResultsModel(this)),
      m_enginesModel(new EnginesModel(this)) {
    // A new view (scenario, units, scope, reference) reaches each chart when it is next read,
    // as a tab behind another takes it when it comes to the front.
    connect(doc, &ScenarioDocument::viewChanged, this, &ChartBook::markStale);
}

ChartBook::~ChartBook() = default;

void ChartBook::markStale() {
    m_fed.clear(); // (each chart's caption follows the document itself)
    m_plan.reset();
    m_traffic.reset();
}

Status ChartBook::loadProbeResults(const QString& path) {
    auto loaded = probe::loadProbeReport(QDir::toNativeSeparators(path).toStdString());
    if (!loaded)
        return loaded.error();
    m_probe = std::move(loaded.value());
    m_probeOrigin = probeFileOrigin(path);
    // What the window does on the probe's reportChanged: the speed model calibrated from it.
    m_calibration = calibrationFromReport(*m_probe, io::builtinGpus());
    markStale();
    return {};
}

bool ChartBook::hasProbeResults() const {
    return m_probe && !m_probe->rows.empty();
}

const probe::ProbeReport& ChartBook::probeReport() const {
    static const probe::ProbeReport none;
    return m_probe ? *m_probe : none;
}

TrafficInputs ChartBook::trafficInputs() const {
    // The tab's speed model is the probe's calibration once results are loaded, else core's.
    const core::SpeedAssumptions speed =
        m_probe ? m_calibration.assumptions : core::SpeedAssumptions{};
    TrafficInputs in =
        m_trafficInputs ? *m_trafficInputs : scenarioTrafficInputs(m_doc->scenario(), speed);
    in.speed = speed;
    return in;
}

void ChartBook::setTrafficInputs(const TrafficInputs& in) {
    m_trafficInputs = heldTrafficInputs(in);
    m_traffic.reset();
    for (const char* name : {"traffic-ttft", "traffic-tpot", "traffic-timeline"})
        m_fed.remove(QLatin1String(name));
}

ChartWidget* ChartBook::made(const ChartSpec& spec) {
    const QString name = QLatin1String(spec.name);
    auto it = m_charts.find(name);
    if (it != m_charts.end())
        return it->second.get();
    ChartWidget* c = createChart(spec);
    setDocumentCaptionSource(c, m_doc);
    m_charts.emplace(name, std::unique_ptr<ChartWidget>(c));
    return c;
}

ChartWidget* ChartBook::chart(const QString& name) {
    const ChartSpec* spec = findChartSpec(name);
    if (!spec || spec->table)
        return nullptr;
    ChartWidget* c = made(*spec);
    if (!m_fed.contains(name)) {
        m_fed.insert(name);
        feed(*spec, c);
    }
    return c;
}

// Each chart takes what its tab gives it in the window.
void ChartBook::feed(const ChartSpec& spec, ChartWidget* c) {
    const LedgerView& v = m_doc->view();
    const QLatin1String name(spec.name);
    // Worked out before a call reads them (an argument's order of evaluation is unspecified).
    if (name.startsWith(QLatin1String("traffic-")))
        traffic();
    if (name == QLatin1String("gpus-needed"))
        plan();
    const QString trafficStatus = m_traffic ? QString() : trafficNotSimulatedText(v);
    if (auto* curve = qobject_cast<CurveChart*>(c)) {
        curve->setView(v);
        if (m_probe)
            curve->setProbeReport(*m_probe);
    } else if (auto* breakdown = qobject_cast<BreakdownChart*>(c)) {
        breakdown->setView(v);
    } else if (auto* speed = qobject_cast<PredictedSpeedChart*>(c)) {
        speed->setView(v);
        speed->setCalibration(m_calibration);
    } else if (auto* gpus = qobject_cast<GpusNeededChart*>(c)) {
        gpus->setPlan(m_plan, m_planRequest.users, m_planRequest.context, m_planRequest.maxGpus);
    } else if (auto* latency = qobject_cast<TrafficLatencyChart*>(c)) {
        latency->setResult(m_traffic, trafficStatus);
    } else if (auto* timeline = qobject_cast<TrafficTimelineChart*>(c)) {
        timeline->setResult(m_traffic, trafficStatus);
    } else if (auto* engines = qobject_cast<EnginesChart*>(c)) {
        engines->setView(v);
    } else if (auto* measured = qobject_cast<ProbeChart*>(c)) {
        measured->setView(v);
        if (m_probe)
            measured->setReport(*m_probe);
    }
    // The Ledger tab's charts are vLLM's accounting whatever the engine: their titles say so.
    if (name == QLatin1String("memory") || name == QLatin1String("concurrency") ||
        name == QLatin1String("breakdown"))
        c->setTitleNote(engineRulesNote(*v.snapshot));
}

std::shared_ptr<const core::PlanResult> ChartBook::plan() {
    // The plan the Deployment tab makes of a scenario whose fields nobody edited.
    if (!m_plan && m_doc->hasScenario()) {
        const LedgerSnapshot& snap = m_doc->snapshot();
        m_planRequest = planRequestFor(snap.scenario, defaultPlanFields(snap));
        m_plan = runPlan(m_planRequest).result;
    }
    return m_plan;
}

std::shared_ptr<const TrafficResult> ChartBook::traffic() {
    // The Traffic tab simulates a valid scenario only (traffic_panel.cpp setView).
    if (!m_traffic && m_doc->hasScenario() && !m_doc->snapshot().invalid)
        m_traffic = std::make_shared<const TrafficResult>(
            computeTraffic(m_doc->snapshot().scenario, trafficInputs()));
    return m_traffic;
}

LadderModel* ChartBook::ladderModel() {
    if (!m_fed.contains(QStringLiteral("ladder"))) {
        m_fed.insert(QStringLiteral("ladder"));
        m_ladder->setView(m_doc->view());
        if (m_probe)
            m_ladder->setSpeedAssumptions(m_calibration.assumptions);
    }
    return m_ladder;
}

PlanTableModel* ChartBook::planModel() {
    if (!m_fed.contains(QStringLiteral("plan"))) {
        m_fed.insert(QStringLiteral("plan"));
        m_planModel->setPlan(plan(), m_doc->view().units);
    }
    return m_planModel;
}

ProbeResultsModel* ChartBook::probeModel() {
    if (!m_fed.contains(QStringLiteral("probe"))) {
        m_fed.insert(QStringLiteral("probe"));
        m_probeModel->setUnits(m_doc->view().units);
        if (m_probe)
            m_probeModel->setReport(*m_probe);
        else
            m_probeModel->clear();
    }
    return m_probeModel;
}

EnginesModel* ChartBook::enginesModel() {
    // The table shows the comparison the chart draws (one computation, as on the Engines tab).
    auto* c = static_cast<EnginesChart*>(chart(QStringLiteral("engines")));
    if (m_enginesModel->comparison() != c->comparison().get())
        m_enginesModel->setComparison(c->comparison());
    return m_enginesModel;
}

QString ChartBook::tableCsv(const QString& name) {
    if (name == QLatin1String("plan"))
        return planModel()->csv();
    if (name == QLatin1String("probe"))
        return probeModel()->csv();
    return {};
}

ChartSource ChartBook::source() {
    ChartSource src;
    src.view = m_doc->view();
    src.chart = [this](const QString& name) { return chart(name); };
    src.tableCsv = [this](const QString& name) { return tableCsv(name); };
    src.ladder = ladderModel();
    src.font = QApplication::font();
    src.palette = QApplication::palette();
    return src;
}

bool ChartBook::exportChart(const QString& name, const QString& path, double scale, QSize size,
                            QString* error) {
    return exportRegistryChart(source(), name, path, scale, size, error);
}

ReportInputs ChartBook::reportInputs() {
    ReportExtras extras;
    extras.calibration = m_calibration;
    extras.plan = plan();
    extras.planUsers = m_planRequest.users;
    extras.traffic = traffic();
    extras.engines = enginesModel();
    if (hasProbeResults()) {
        extras.probe = probeModel();
        extras.probeSource = probeSourceText(*m_probe, m_probeOrigin);
    }
    return widgets::reportInputs(source(), extras);
}

bool ChartBook::exportReport(const QString& path, QString* error) {
    return writeReviewReport(path, reportInputs(), error);
}

} // namespace kvl::widgets
