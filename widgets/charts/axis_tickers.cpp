#include "widgets/charts/axis_tickers_p.h"

#include <cmath>
#include <cstdint>

namespace kvl::widgets {

namespace {
std::int64_t roundToInt64(double v) {
    return static_cast<std::int64_t>(std::llround(v));
}
} // namespace

TokenLogTicker::TokenLogTicker() {
    setLogBase(2);
    setSubTickCount(0);
}

QString TokenLogTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    if (tick < 1)
        return QString::number(tick, 'g', 3);
    return QString::fromStdString(core::formatTokens(roundToInt64(tick)));
}

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

CountLogTicker::CountLogTicker() {
    setLogBase(10);
    setSubTickCount(8);
}

QString CountLogTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    if (tick < 1)
        return QString::number(tick, 'g', 2);
    return QString::fromStdString(core::withThousands(roundToInt64(tick)));
}

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
