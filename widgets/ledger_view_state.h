#pragma once
// Everything the window shows for one scenario, computed in one go (sub-millisecond) and
// handed to the charts, the ladder table and the status bar as one value.

#include "core/ledger.h"
#include "core/units.h"

#include <QMetaType>
#include <QString>

#include <cstdint>
#include <optional>
#include <vector>

namespace kvl::widgets {

inline QString qs(const std::string& s) {
    return QString::fromStdString(s);
}
inline QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

struct LedgerSnapshot {
    core::Scenario scenario;
    core::LedgerResult ledger;
    std::vector<core::LadderStep> ladder;
    core::SweepResult sweep;
    // The concurrency the breakdown shows: the scenario's target requests when set, else as
    // many whole requests of the context as fit.
    std::int64_t requests = 0;
    bool requestsAreTarget = false;
    std::optional<core::GpusNeeded> gpusNeeded; // when the target does not fit
};

LedgerSnapshot computeSnapshot(const core::Scenario& s);

// "Llama-3-8B | GQA-8 | INT8 | paged 16 | prefix 2K -> 66 KiB/token | 2.06 GiB @32K |
//  31 requests on H100 SXM 80GB"
QString summaryLine(const LedgerSnapshot& snap, core::UnitSystem units);

QString formatBytesQ(std::int64_t bytes, core::UnitSystem units, int decimals = 2);
QString formatBytesQ(double bytes, core::UnitSystem units, int decimals = 2);
QString formatTokensQ(std::int64_t tokens);
QString thousandsQ(std::int64_t value);

} // namespace kvl::widgets

Q_DECLARE_METATYPE(kvl::widgets::LedgerSnapshot)
