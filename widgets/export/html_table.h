#pragma once
// A table model's HTML copy (the ladder's, the engines' and the probe results' tables, for the
// review report): the header row, each column's header escaped with its line breaks as <br>,
// then a row per model row, each cell as the model writes it.

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

// `<table attributes>`, the header row, then each row of `model` with its cells as
// `cell(row, column)` returns them (whole <td> elements), then `</table>`.
template <class Cell>
QString htmlTable(const QAbstractItemModel& model, const QString& attributes, Cell cell) {
    QString out = QStringLiteral("<table ") + attributes + QStringLiteral("><tr>");
    out += htmlHeaderCells(model);
    out += QStringLiteral("</tr>");
    for (int r = 0; r < model.rowCount(); ++r) {
        out += QStringLiteral("<tr>");
        for (int c = 0; c < model.columnCount(); ++c)
            out += cell(r, c);
        out += QStringLiteral("</tr>");
    }
    return out + QStringLiteral("</table>");
}

} // namespace kvl::widgets
