#pragma once
// The devices a chart (ChartWidget::renderFile) and a table (renderTableFile) are exported
// through, set up alike: 96 dpi, the CSS pixel, and a page or view box the picture's size.

#include "widgets/charts/chart_registry.h"
#include "widgets/export/atomic_write.h"

#include <QSize>
#include <QString>

class QIODevice;
class QImage;
class QPdfWriter;
class QSvgGenerator;

namespace kvl::widgets {

// One page `size` points large, no margins, at 96 dpi, "KV Ledger" its creator.
void setUpPdfWriter(QPdfWriter& writer, QSize size, const QString& title);
// Writing to `out`, `size` pixels at 96 dpi: the width and height (in mm) then give renderers
// such as rsvg-convert the viewBox's size in pixels, not 4/3 of it (Qt's default is 72 dpi).
void setUpSvgGenerator(QSvgGenerator& generator, QIODevice* out, QSize size, const QString& title,
                       const QString& description);
// 96 dpi, as QCustomPlot::savePng writes it.
void setScreenDpi(QImage& image);
// What writeFileAtomically checks a file of `format` to be (CSV: plain data).
FileKind fileKindOf(ExportFormat format);

} // namespace kvl::widgets
