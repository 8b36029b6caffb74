#pragma once
// Chart colours derived from the widget palette, so light and dark themes both read well.
// Series hues follow the Okabe-Ito colour-blind-safe set, lightened on dark backgrounds.

#include <QColor>
#include <QPalette>

#include <array>

namespace kvl::widgets {

struct ChartColors {
    bool dark = false;
    QColor background, foreground, axis, grid, subGrid, legendBackground;
    QColor current; // the current scenario, emphasized
    QColor kvLine;  // memory available for KV
    QColor cursor;
    QColor cap;                  // vLLM's limits drawn on a chart (max_num_seqs)
    std::array<QColor, 5> steps; // baseline, +attention, +quant, +paging, +prefix
    QColor weights, kv, activations, free, reserved, overflow;

    static ChartColors fromPalette(const QPalette& palette);
    // The light colours, for printed reports whatever the screen theme.
    static ChartColors light();
};

} // namespace kvl::widgets
