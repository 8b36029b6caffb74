#pragma once
// CSV cells for every table and chart export (RFC 4180: a field in double quotes, a quote in it
// doubled), so that a model name or a step label with a comma or a quote stays one cell.

#include <QString>

namespace kvl::widgets {

inline QString csvQuote(const QString& s) {
    QString out = s;
    out.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + out + QLatin1Char('"');
}

} // namespace kvl::widgets
