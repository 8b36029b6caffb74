#include "widgets/charts/chart_registry.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QStringList>

#include <array>

namespace kvl::widgets {

namespace {

constexpr ExportFormats kAll =
    ExportFormat::Png | ExportFormat::Pdf | ExportFormat::Svg | ExportFormat::Csv;
constexpr ExportFormats kCsv = ExportFormat::Csv;

// Ledger charts first, then the tables and charts of probe results (the menu's sections).
using S = ChartScope;
constexpr std::array<ChartSpec, 15> kCharts{{
    {ChartId::Memory, "memory", QT_TRANSLATE_NOOP("kvl::widgets::Charts", "&Memory chart"), kAll,
     false, false, S::Selected},
    {ChartId::Concurrency, "concurrency",
     QT_TRANSLATE_NOOP("kvl::widgets::Charts", "&Concurrency chart"), kAll, false, false,
     S::Requests},
    {ChartId::Breakdown, "breakdown", QT_TRANSLATE_NOOP("kvl::widgets::Charts", "&Breakdown chart"),
     kAll, false, false, S::PerGpu},
    {ChartId::SpeedConcurrency, "speed-concurrency",
     QT_TRANSLATE_NOOP("kvl::widgets::Charts", "Speed vs c&oncurrency chart (predicted)"), kAll,
     false, false, S::PerReplica},
    {ChartId::SpeedContext, "speed-context",
     QT_TRANSLATE_NOOP("kvl::widgets::Charts", "Speed vs conte&xt chart (predicted)"), kAll, false,
     false, S::PerReplica},
    {ChartId::GpusNeeded, "gpus-needed",
     QT_TRANSLATE_NOOP("kvl::widgets::Charts", "&GPUs needed chart"), kAll, false, false,
     S::ClusterGpus},
    {ChartId::Plan, "plan", QT_TRANSLATE_NOOP("kvl::widgets::Charts", "Deployment &plan table"),
     kCsv, false, true, S::Plan},
    {ChartId::TrafficTtft, "traffic-ttft",
     QT_TRANSLATE_NOOP("kvl::widgets::Charts", "&TTFT vs rate chart (simulated)"), kAll, false,
     false, S::PerReplica},
    {ChartId::TrafficTpot, "traffic-tpot",
     QT_TRANSLATE_NOOP("kvl::widgets::Charts", "TP&OT vs rate chart (simulated)"), kAll, false,
     false, S::PerReplica},
    {ChartId::TrafficTimeline, "traffic-timeline",
     QT_TRANSLATE_NOOP("kvl::widgets::Charts", "KV occupancy and &queue chart (simulated)"), kAll,
     false, false, S::PerReplica},
    {ChartId::Engines, "engines",
     QT_TRANSLATE_NOOP("kvl::widgets::Charts", "&Engines side by side chart"), kAll, false, false,
     S::Requests},
    {ChartId::Ladder, "ladder", QT_TRANSLATE_NOOP("kvl::widgets::Charts", "&Ladder table"), kAll,
     false, true, S::BytesRequests},
    {ChartId::Quality, "quality",
     QT_TRANSLATE_NOOP("kvl::widgets::Charts", "&Quality vs memory chart"), kAll, true, false,
     S::ProbedPerToken},
    {ChartId::Speed, "speed", QT_TRANSLATE_NOOP("kvl::widgets::Charts", "&Speed chart"), kAll, true,
     false, S::ProbedLayer},
    {ChartId::Probe, "probe", QT_TRANSLATE_NOOP("kvl::widgets::Charts", "Probe &results table"),
     kCsv, true, true, S::ProbedLayer},
}};

// Each ChartId names one row: chart_factory.cpp makes a chart from its row's id.
constexpr bool eachIdOnce() {
    for (std::size_t i = 0; i < kCharts.size(); ++i)
        for (std::size_t j = i + 1; j < kCharts.size(); ++j)
            if (kCharts[i].id == kCharts[j].id)
                return false;
    return true;
}
static_assert(kCharts.size() == std::size_t(ChartId::Probe) + 1 && eachIdOnce(),
              "one row per ChartId");

struct FormatInfo {
    ExportFormat format;
    const char* suffix;
    const char* filterName;
};
constexpr std::array<FormatInfo, 4> kFormats{{
    {ExportFormat::Png, "png", QT_TRANSLATE_NOOP("kvl::widgets::Charts", "PNG image")},
    {ExportFormat::Pdf, "pdf", QT_TRANSLATE_NOOP("kvl::widgets::Charts", "PDF document")},
    {ExportFormat::Svg, "svg", QT_TRANSLATE_NOOP("kvl::widgets::Charts", "SVG vector image")},
    {ExportFormat::Csv, "csv", QT_TRANSLATE_NOOP("kvl::widgets::Charts", "CSV data")},
}};

QString tr(const char* text) {
    return QCoreApplication::translate("kvl::widgets::Charts", text);
}

} // namespace

std::span<const ChartSpec> chartSpecs() {
    return kCharts;
}

const ChartSpec* findChartSpec(QStringView name) {
    for (const auto& c : kCharts)
        if (name == QLatin1String(c.name))
            return &c;
    return nullptr;
}

QString chartObjectName(const ChartSpec& spec) {
    return QLatin1String(spec.name) + QLatin1String("Chart");
}

QString chartMenuTitle(const ChartSpec& spec) {
    return tr(spec.menuTitle);
}

QString chartTitle(const ChartSpec& spec) {
    return chartMenuTitle(spec).remove(QLatin1Char('&'));
}

QString chartNames() {
    QStringList names;
    for (const auto& c : kCharts)
        names << QLatin1String(c.name);
    const QString last = names.takeLast();
    return names.join(QStringLiteral(", ")) + QStringLiteral(" or ") + last;
}

QString formatSuffixes(ExportFormats formats) {
    QStringList out;
    for (const auto& f : kFormats)
        if (formats.testFlag(f.format))
            out << QLatin1Char('.') + QLatin1String(f.suffix);
    return out.join(QLatin1Char('|'));
}

QString fileDialogFilter(ExportFormats formats) {
    QStringList out;
    for (const auto& f : kFormats)
        if (formats.testFlag(f.format))
            out << QStringLiteral("%1 (*.%2)").arg(tr(f.filterName), QLatin1String(f.suffix));
    return out.join(QStringLiteral(";;"));
}

std::optional<ExportFormat> formatOfPath(const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    for (const auto& f : kFormats)
        if (suffix == QLatin1String(f.suffix))
            return f.format;
    return std::nullopt;
}

QString formatSuffix(ExportFormat format) {
    for (const auto& f : kFormats)
        if (f.format == format)
            return QLatin1String(f.suffix);
    return {};
}

} // namespace kvl::widgets
