#include "widgets/charts/chart_factory.h"

#include "widgets/charts/breakdown_chart.h"
#include "widgets/charts/curve_chart.h"
#include "widgets/charts/engines_view.h"
#include "widgets/charts/speed_chart.h"
#include "widgets/deployment/plan_model.h"
#include "widgets/probe/probe_charts.h"
#include "widgets/traffic/traffic_charts.h"

namespace kvl::widgets {

namespace {

ChartWidget* makeChart(ChartId id, QWidget* p) {
    switch (id) {
    case ChartId::Memory:
        return new CurveChart(CurveKind::Memory, p);
    case ChartId::Concurrency:
        return new CurveChart(CurveKind::Concurrency, p);
    case ChartId::Breakdown:
        return new BreakdownChart(p);
    case ChartId::SpeedConcurrency:
        return new PredictedSpeedChart(SpeedView::Concurrency, p);
    case ChartId::SpeedContext:
        return new PredictedSpeedChart(SpeedView::Context, p);
    case ChartId::GpusNeeded:
        return new GpusNeededChart(p);
    case ChartId::TrafficTtft:
        return new TrafficLatencyChart(TrafficMetric::Ttft, p);
    case ChartId::TrafficTpot:
        return new TrafficLatencyChart(TrafficMetric::Tpot, p);
    case ChartId::TrafficTimeline:
        return new TrafficTimelineChart(p);
    case ChartId::Engines:
        return new EnginesChart(p);
    case ChartId::Quality:
        return new QualityChart(p);
    case ChartId::Speed:
        return new SpeedChart(p);
    case ChartId::Plan: // tables: table_export.h draws them from their models
    case ChartId::Ladder:
    case ChartId::Probe:
        return nullptr;
    }
    return nullptr;
}

} // namespace

ChartWidget* createChart(const ChartSpec& spec, QWidget* parent) {
    if (spec.table)
        return nullptr;
    ChartWidget* c = makeChart(spec.id, parent);
    if (c)
        c->setObjectName(chartObjectName(spec));
    return c;
}

} // namespace kvl::widgets
