#include "widgets/export/chart_export.h"

#include "widgets/charts/chart_colors.h"
#include "widgets/charts/chart_registry.h"
#include "widgets/charts/ladder_model.h"
#include "widgets/charts/speed_chart.h"
#include "widgets/export/atomic_write.h"
#include "widgets/export/export_devices.h"
#include "widgets/export/table_export.h"
#include "widgets/state/scenario_document.h"
#include "widgets/state/status_text.h"

#include "core/engines.h"

#include <QCoreApplication>
#include <QDate>
#include <QFileInfo>

namespace kvl::widgets {

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("kvl::widgets::ChartExport", text);
}

// A table as an image (the ladder): drawn through the same verified, atomic path as a chart.
Status writeLadderImage(const ChartSource& src, const ChartSpec& spec, ExportFormat format,
                        const QString& path, double scale, QSize size) {
    TableImage table;
    table.model = src.ladder;
    table.title = tr("Lever ladder: each step adds one lever of the scenario (%1)")
                      .arg(scopeLabel(src.view.scope));
    table.caption =
        exportCaption(*src.view.snapshot, src.view.scope, spec.scope, QDate::currentDate());
    table.font = src.font;
    table.colors = ChartColors::fromPalette(src.palette); // --theme, View > Theme
    table.barColumn = LadderModel::RequestsColumn;        // and requests per step
    table.barRole = LadderModel::ExactValueRole;
    const auto bytes = renderTableFile(table, format, scale, size);
    return bytes ? writeFileAtomically(path, *bytes, fileKindOf(format)) : Status(bytes.error());
}

} // namespace

bool exportRegistryChart(const ChartSource& src, const QString& name, const QString& path,
                         double scale, QSize size, QString* error) {
    auto fail = [error](const QString& message) {
        if (error)
            *error = message;
        return false;
    };
    const ChartSpec* spec = findChartSpec(name);
    if (!spec)
        return fail(tr("Unknown chart \"%1\": use %2").arg(name, chartNames()));
    const auto format = formatOfPath(path);
    if (!format || !spec->formats.testFlag(*format))
        return fail(tr("The %1 exports to %2, not \"%3\"")
                        .arg(chartTitle(*spec).toLower(), formatSuffixes(spec->formats),
                             QFileInfo(path).suffix()));
    Status written;
    if (!spec->table)
        written = src.chart(name)->exportTo(path, scale, size);
    else if (*format == ExportFormat::Csv)
        written = writeFileAtomically(path, (name == QLatin1String("ladder")
                                                 ? ladderCsv(*src.ladder, src.view)
                                                 : src.tableCsv(name))
                                                .toUtf8());
    else
        written = writeLadderImage(src, *spec, *format, path, scale, size);
    return written ? true : fail(qs(written.error().message));
}

QString ladderCsv(const LadderModel& ladder, const LedgerView& view) {
    return withCsvComments(ladder.csv(),
                           csvComments(*view.snapshot, view.scope, findChartSpec(u"ladder")->scope,
                                       QDate::currentDate()));
}

ChartWidget::CaptionSource documentCaptionSource(const ScenarioDocument* doc, ChartScope scope) {
    return {[doc, scope] {
                const LedgerView& v = doc->view();
                return v.snapshot ? exportCaption(*v.snapshot, v.scope, scope, QDate::currentDate())
                                  : QString();
            },
            [doc, scope] {
                const LedgerView& v = doc->view();
                return v.snapshot ? csvComments(*v.snapshot, v.scope, scope, QDate::currentDate())
                                  : QStringList();
            }};
}

void setDocumentCaptionSource(ChartWidget* chart, const ScenarioDocument* doc) {
    // Each chart's scope words come from its registry entry.
    const ChartSpec* spec = findChartSpec(chart->objectName().chopped(int(qstrlen("Chart"))));
    chart->setCaptionSource(documentCaptionSource(doc, spec ? spec->scope : ChartScope::Selected));
    // Every export carries the scenario it shows: the caption is worked out again, when next
    // read, after each new view.
    QObject::connect(doc, &ScenarioDocument::viewChanged, chart, &ChartWidget::invalidateCaption);
}

QString engineRulesNote(const LedgerSnapshot& snap) {
    return snap.engine ? tr("(vLLM's rules, not %1's)")
                             .arg(qs(core::engineDisplayName(snap.engine->engine)))
                       : QString();
}

ReportInputs reportInputs(const ChartSource& src, const ReportExtras& extras) {
    ReportInputs in;
    in.snapshot = src.view.snapshot.get();
    in.reference = src.view.reference.get();
    in.memoryChart = src.chart(QStringLiteral("memory"));
    in.concurrencyChart = src.chart(QStringLiteral("concurrency"));
    in.breakdownChart = src.chart(QStringLiteral("breakdown"));
    in.ladder = src.ladder;
    in.units = src.view.units;
    in.scope = src.view.scope;
    // The predicted Speed chart, its calibration and the plan.
    in.predictedSpeedChart =
        static_cast<PredictedSpeedChart*>(src.chart(QStringLiteral("speed-concurrency")));
    in.calibration = extras.calibration;
    in.plan = extras.plan;
    in.planUsers = extras.planUsers;
    if (extras.traffic) {
        in.traffic = extras.traffic;
        in.trafficTtftChart = src.chart(QStringLiteral("traffic-ttft"));
        in.trafficTpotChart = src.chart(QStringLiteral("traffic-tpot"));
        in.trafficTimelineChart = src.chart(QStringLiteral("traffic-timeline"));
    }
    in.enginesChart = src.chart(QStringLiteral("engines"));
    in.engines = extras.engines;
    if (extras.probe) {
        in.probe = extras.probe;
        in.qualityChart = src.chart(QStringLiteral("quality"));
        in.speedChart = src.chart(QStringLiteral("speed"));
        in.probeSource = extras.probeSource;
    }
    return in;
}

} // namespace kvl::widgets
