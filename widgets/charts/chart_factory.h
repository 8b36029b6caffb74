#pragma once
// Makes the chart widget of a chart registry row: the one place that knows every chart class,
// kept apart from the registry so that naming the charts (the command line, --help) does not
// pull in the widgets.

#include "widgets/charts/chart_registry.h"

class QWidget;

namespace kvl::widgets {

class ChartWidget;

// The chart of `spec`, named chartObjectName(spec); nullptr for a table (spec.table).
ChartWidget* createChart(const ChartSpec& spec, QWidget* parent = nullptr);

} // namespace kvl::widgets
