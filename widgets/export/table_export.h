#pragma once
// A table (the lever ladder) as an image: its header and rows drawn with their own alignment,
// fonts and colours, a title above and the export caption below, to PNG, PDF or SVG through
// the charts' path (rendered to memory, verified, then writeFileAtomically).

#include "widgets/charts/chart_colors.h"
#include "widgets/charts/chart_registry.h"

#include "core/result.h"

#include <QByteArray>
#include <QFont>
#include <QSize>
#include <QString>

class QAbstractItemModel;
class QPainter;

namespace kvl::widgets {

struct TableImage {
    const QAbstractItemModel* model = nullptr;
    QString title;
    QString caption; // status_text.h exportCaption
    QFont font;
    ChartColors colors = ChartColors::light();
    // A bar chart under the table, one bar per row: the row's value in `barColumn` (read with
    // `barRole`, a number), labelled with its first column and the cell's text; -1 for none.
    int barColumn = -1;
    int barRole = Qt::DisplayRole;
};

// The size the table and its bar chart need (at least 900 pixels wide, so a 2x PNG is 1800
// wide). A larger size gives the bar chart the extra height, never empty space.
QSize tableImageSize(const TableImage& table);
// Draws the table into (0,0)-(size); cells elide when the size is smaller than needed.
void paintTable(QPainter* painter, const TableImage& table, QSize size);
// The file's bytes in `format` (not CSV) at `size`, grown to tableImageSize where that is
// larger (empty: tableImageSize). Checked complete.
Result<QByteArray> renderTableFile(const TableImage& table, ExportFormat format, double scale = 1.0,
                                   QSize size = {});

} // namespace kvl::widgets
