#pragma once
// Every chart and table KV Ledger exports, in one list: its name (kvledger export --chart, the
// object and file names), its title (the Export menu), its formats and how the view is made.
// The Export menu, the charts' context menus, the headless export, its checks and --help all
// read this list, so a new chart is one row here, its ChartId and case in chart_factory.cpp and
// its place in a layout. It includes no chart: the command line links it (kvl_chart_registry, Qt
// Core only) to name the charts without linking the widgets.

#include <QFlags>
#include <QString>
#include <QStringView>

#include <cstdint>
#include <optional>
#include <span>

namespace kvl::widgets {

enum class ExportFormat : unsigned { Png = 0x1, Pdf = 0x2, Svg = 0x4, Csv = 0x8 };
Q_DECLARE_FLAGS(ExportFormats, ExportFormat)

// What a chart's figures are counted over, for the caption of its exports ("figures per
// GPU" on a chart of requests per replica would mislead a slide's reader). status_text.h
// chartScopeText turns it, with the window's scope, into the caption's words.
enum class ChartScope : std::uint8_t {
    Selected,       // bytes at the window's scope (View > Figures): memory
    Requests,       // requests per replica, or in the cluster when that scope is chosen
    BytesRequests,  // bytes at the window's scope and requests as Requests: the ladder
    PerGpu,         // memory of one GPU whatever the scope: the breakdown
    PerReplica,     // one replica whatever the scope: speed, the traffic simulation
    ClusterGpus,    // GPUs of the whole deployment: GPUs needed
    Plan,           // memory per GPU, requests per replica and cluster: the plan table
    ProbedLayer,    // one layer as the probe measured it: probe speed, results
    ProbedPerToken, // KV bytes per token of the whole model, from one measured layer: quality
};

// Which chart or table a row is: chart_factory.cpp's switch makes each chart from it, so the
// names live in this list alone and a row without a case is a compiler warning.
enum class ChartId : std::uint8_t {
    Memory,
    Concurrency,
    Breakdown,
    SpeedConcurrency,
    SpeedContext,
    GpusNeeded,
    Plan,
    TrafficTtft,
    TrafficTpot,
    TrafficTimeline,
    Engines,
    Ladder,
    Quality,
    Speed,
    Probe,
};

struct ChartSpec {
    ChartId id;
    const char* name;      // "memory"
    const char* menuTitle; // "&Memory chart" (translated with chartMenuTitle)
    ExportFormats formats;
    bool measured; // shows probe results: the Export menu's second section, and headless
                   // export needs --probe-results
    // A table, exported from its model as CSV and drawn as a table image (table_export.h) in
    // the image formats it lists; otherwise a chart that createChart (chart_factory.h) makes.
    bool table;
    ChartScope scope;
};
// The largest PNG export in pixels (width x height x scale^2): the bound of --scale and --size.
inline constexpr double kMaxPngPixels = 100e6;

std::span<const ChartSpec> chartSpecs();
const ChartSpec* findChartSpec(QStringView name);

QString chartObjectName(const ChartSpec& spec); // "memoryChart"
QString chartMenuTitle(const ChartSpec& spec);  // translated, with its mnemonic
QString chartTitle(const ChartSpec& spec);      // translated, without the mnemonic

// "memory, concurrency, breakdown, speed-concurrency, ..., quality, speed or probe"
QString chartNames();
// ".png|.pdf|.svg|.csv"
QString formatSuffixes(ExportFormats formats);
// "PNG image (*.png);;PDF document (*.pdf);;..."
QString fileDialogFilter(ExportFormats formats);
// The format of a file name's suffix (case-insensitive), if it is one of ours.
std::optional<ExportFormat> formatOfPath(const QString& path);
QString formatSuffix(ExportFormat format); // "png"

} // namespace kvl::widgets

Q_DECLARE_OPERATORS_FOR_FLAGS(kvl::widgets::ExportFormats)
