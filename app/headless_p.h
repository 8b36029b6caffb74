#pragma once
// What the two headless GUI commands share: headless.cpp runs `export` from a ScenarioDocument
// and a ChartBook (no window), screenshot.cpp runs `--screenshot` (a picture of the window).

#include "cli.h"

#include "widgets/traffic/traffic_sim.h"

#include "core/scenario.h"

#include <QSize>
#include <QString>

#include <optional>
#include <string>

namespace kvl::app {

// Why a headless command stopped: its message and exit code (2: the options; 1: the run).
struct Failure {
    std::string message;
    int code = 2;
};

// What a command wrote: the file and the scenario's summary line.
struct Written {
    QString path;
    QString summary;
};

// Whether the options set any of the Traffic tab's workload and SLO.
bool hasTrafficOptions(const Invocation& o);
// The Traffic tab's workload and SLO from the options, into `in` (its charts, the report's
// Traffic page, --tab traffic), in simulate's options; the rate is the deployment's, as
// `simulate --rate` takes it (divided by `dataParallel`: the tab's is per replica). A value the
// tab's field cannot hold is refused, not changed.
std::optional<Failure> applyTrafficOptions(const Invocation& o, int dataParallel,
                                           widgets::TrafficInputs& in);

// --screenshot: the window at `size` showing the options' scenario, into its PNG.
std::optional<Failure> takeScreenshot(const Invocation& o, QSize size,
                                      const std::optional<core::Scenario>& reference,
                                      Written& written);

} // namespace kvl::app
