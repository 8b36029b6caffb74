#include "widgets/charts/axis_tickers_p.h"

#include <cmath>
#include <cstdint>

namespace kvl::widgets {

namespace {
std::int64_t roundToInt64(double v) {
    return static_cast<std::int64_t>(std::llround(v));
}
} // namespace

FormattedLogTicker::FormattedLogTicker(double logBase, int subTickCount, int smallDigits,
                                       Format format)
    : m_smallDigits(smallDigits), m_format(format) {
    setLogBase(logBase);
    setSubTickCount(subTickCount);
}

QString FormattedLogTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    if (tick < 1)
        return QString::number(tick, 'g', m_smallDigits);
    return QString::fromStdString(m_format(roundToInt64(tick)));
}

TokenLogTicker::TokenLogTicker() : FormattedLogTicker(2, 0, 3, core::formatTokens) {}

ByteLogTicker::ByteLogTicker(core::UnitSystem units) : m_units(units) {
    setUnits(units);
}

void ByteLogTicker::setUnits(core::UnitSystem units) {
    m_units = units;
    setLogBase(units == core::UnitSystem::Binary ? 2 : 10);
    setSubTickCount(units == core::UnitSystem::Binary ? 0 : 8);
}

QString ByteLogTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    if (tick < 1)
        return QString();
    return QString::fromStdString(core::formatBytes(roundToInt64(tick), m_units, 0));
}

CountLogTicker::CountLogTicker() : FormattedLogTicker(10, 8, 2, core::withThousands) {}

ByteLinearTicker::ByteLinearTicker(core::UnitSystem units) : m_units(units) {
    setTickCount(6);
}

double ByteLinearTicker::getTickStep(const QCPRange& range) {
    const double unit =
        m_units == core::UnitSystem::Binary ? double(core::kGiB) : double(core::kGB);
    const double exact = range.size() / unit / std::max(1, tickCount());
    // Round steps of whole GiB / GB (1, 2, 5, 10, 20, ...) or fractions below one.
    const double mag = std::pow(10.0, std::floor(std::log10(std::max(exact, 1e-6))));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
        step = m * mag;
        if (step >= exact)
            break;
    }
    return step * unit;
}

QString ByteLinearTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    const double unit =
        m_units == core::UnitSystem::Binary ? double(core::kGiB) : double(core::kGB);
    const double v = tick / unit;
    const QString suffix =
        m_units == core::UnitSystem::Binary ? QStringLiteral(" GiB") : QStringLiteral(" GB");
    if (std::abs(v - std::round(v)) < 1e-9)
        return QString::number(static_cast<long long>(std::llround(v))) + suffix;
    return QString::number(v, 'g', 3) + suffix;
}

} // namespace kvl::widgets
