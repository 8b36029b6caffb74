#pragma once
// Log-axis tickers with domain labels: tokens ("256", "1K", "32K", "1M"), bytes ("64 MiB",
// "1 GiB" or "100 MB", "1 GB") and counts ("1", "10", "1,000").
// Private to kvl_widgets (the _p suffix, as in Qt): only widgets' .cpp files include it, so
// QCustomPlot stays out of every public header.

#include "core/scenario.h"
#include "core/units.h"

#include <qcustomplot.h>

namespace kvl::widgets {

class TokenLogTicker : public QCPAxisTickerLog {
public:
    TokenLogTicker();

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar,
                         int precision) override;
};

class ByteLogTicker : public QCPAxisTickerLog {
public:
    explicit ByteLogTicker(core::UnitSystem units);
    void setUnits(core::UnitSystem units);

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar,
                         int precision) override;

private:
    core::UnitSystem m_units;
};

class CountLogTicker : public QCPAxisTickerLog {
public:
    CountLogTicker();

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar,
                         int precision) override;
};

// Linear byte axis (the breakdown): ticks at round numbers of GiB or GB.
class ByteLinearTicker : public QCPAxisTicker {
public:
    explicit ByteLinearTicker(core::UnitSystem units);
    void setUnits(core::UnitSystem units) { m_units = units; }

protected:
    double getTickStep(const QCPRange& range) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar,
                         int precision) override;

private:
    core::UnitSystem m_units;
};

} // namespace kvl::widgets
