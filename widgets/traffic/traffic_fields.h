#pragma once
// The Traffic tab's inputs as its fields hold them: each numeric field's range and decimals,
// and the prompt and shared prefix that follow the scenario until edited. The tab configures
// its fields from these, and ChartBook and `kvledger export` (which have no tab) take the same
// values through them, so a headless traffic chart answers what the tab would show and an
// option the tab could not hold is refused, not silently changed.

#include "widgets/traffic/traffic_sim.h"

#include "core/scenario.h"

namespace kvl::widgets {

// A QDoubleSpinBox's configuration: the value is rounded to `decimals`, then bounded.
struct TrafficField {
    double lo = 0;
    double hi = 0;
    int decimals = 0;
};
inline constexpr TrafficField kTrafficRateField{0, 100000, 2}; // req/s per replica; 0 = auto
inline constexpr TrafficField kTrafficPrefixShareField{0, 1, 2};
inline constexpr TrafficField kTrafficSloTtftField{0, 1e7, 0};     // ms; 0 = none
inline constexpr TrafficField kTrafficSloTpotField{0, 1e6, 1};     // ms; 0 = none
inline constexpr TrafficField kTrafficAttainmentField{50, 100, 1}; // percent
inline constexpr int kTrafficMaxPrefixTokens = 1 << 20;
inline constexpr int kTrafficMinRequests = 20;
inline constexpr int kTrafficMaxRequests = 100000;
inline constexpr int kTrafficMaxSeed = 1 << 30;

// What a field configured as `f` holds after setValue(v) (QDoubleSpinBox's rounding and bound).
double trafficFieldValue(const TrafficField& f, double v);
// `in` as the tab's fields would hold it (rounded, bounded, lengths trimmed).
TrafficInputs heldTrafficInputs(const TrafficInputs& in);
// The prompt length the tab follows for `s`: its context less the output's expected length.
std::string followedTrafficPrompt(const core::Scenario& s, const std::string& output);
// The shared prefix the tab follows for `s` (0: the prefix lever is off).
std::int64_t followedTrafficPrefix(const core::Scenario& s);
// The tab's inputs for `s` when no field was edited, with the speed model's assumptions.
TrafficInputs scenarioTrafficInputs(const core::Scenario& s, const core::SpeedAssumptions& speed);

} // namespace kvl::widgets
