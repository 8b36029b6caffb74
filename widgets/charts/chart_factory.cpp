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

ChartWidget* makeChart(QStringView name, QWidget* p) {
    if (name == u"memory")
        return new CurveChart(CurveKind::Memory, p);
    if (name == u"concurrency")
        return new CurveChart(CurveKind::Concurrency, p);
    if (name == u"breakdown")
        return new BreakdownChart(p);
    if (name == u"speed-concurrency")
        return new PredictedSpeedChart(SpeedView::Concurrency, p);
    if (name == u"speed-context")
        return new PredictedSpeedChart(SpeedView::Context, p);
    if (name == u"gpus-needed")
        return new GpusNeededChart(p);
    if (name == u"traffic-ttft")
        return new TrafficLatencyChart(TrafficMetric::Ttft, p);
    if (name == u"traffic-tpot")
        return new TrafficLatencyChart(TrafficMetric::Tpot, p);
    if (name == u"traffic-timeline")
        return new TrafficTimelineChart(p);
    if (name == u"engines")
        return new EnginesChart(p);
    if (name == u"quality")
        return new QualityChart(p);
    if (name == u"speed")
        return new SpeedChart(p);
    return nullptr;
}

} // namespace

ChartWidget* createChart(const ChartSpec& spec, QWidget* parent) {
    if (spec.table)
        return nullptr;
    ChartWidget* c = makeChart(QString::fromLatin1(spec.name), parent);
    if (c)
        c->setObjectName(chartObjectName(spec));
    return c;
}

} // namespace kvl::widgets
