#pragma once
// Log-axis tickers with domain labels: tokens ("256", "1K", "32K", "1M"), bytes ("64 MiB",
// "1 GiB" or "100 MB", "1 GB") and counts ("1", "10", "1,000").
// Private to kvl_widgets (the _p suffix, as in Qt): only widgets' .cpp files include it, so
// QCustomPlot stays out of every public header.

#include "core/scenario.h"
#include "core/units.h"

#include <qcustomplot.h>

#include <cstdint>
#include <string>

namespace kvl::widgets {

// A log axis whose ticks from 1 up are spelled by `format` and those below 1 are plain numbers
// of `smallDigits` significant digits: the token and count axes differ only in these.
class FormattedLogTicker : public QCPAxisTickerLog {
public:
    using Format = std::string (*)(std::int64_t);
    FormattedLogTicker(double logBase, int subTickCount, int smallDigits, Format format);

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar,
                         int precision) override;

private:
    int m_smallDigits;
    Format m_format;
};

class TokenLogTicker : public FormattedLogTicker {
public:
    TokenLogTicker();
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

class CountLogTicker : public FormattedLogTicker {
public:
    CountLogTicker();
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
