#pragma once
// The header row of a table model's HTML copy (the ladder's, the engines' and the probe results'
// tables): each column's header, escaped, with its line breaks as <br>.

#include <QAbstractItemModel>
#include <QString>

namespace kvl::widgets {

inline QString htmlHeaderCells(const QAbstractItemModel& model) {
    QString out;
    for (int c = 0; c < model.columnCount(); ++c)
        out += QStringLiteral("<th>%1</th>")
                   .arg(model.headerData(c, Qt::Horizontal)
                            .toString()
                            .toHtmlEscaped()
                            .replace(QLatin1Char('\n'), QStringLiteral("<br>")));
    return out;
}

} // namespace kvl::widgets
