#include "widgets/traffic/traffic_fields.h"

#include <QString>

#include <algorithm>
#include <cmath>

namespace kvl::widgets {

double trafficFieldValue(const TrafficField& f, double v) {
    // QDoubleSpinBox::setValue: rounded as QString::number(v, 'f', decimals) reads back, then
    // bounded to the range.
    const double rounded = QString::number(v, 'f', f.decimals).toDouble();
    return std::clamp(rounded, f.lo, f.hi);
}

TrafficInputs heldTrafficInputs(const TrafficInputs& in) {
    TrafficInputs held = in;
    held.rate = trafficFieldValue(kTrafficRateField, in.rate);
    held.prompt = QString::fromStdString(in.prompt).trimmed().toStdString();
    held.output = QString::fromStdString(in.output).trimmed().toStdString();
    held.prefixShare = trafficFieldValue(kTrafficPrefixShareField, in.prefixShare);
    // The integer fields are bounded as QSpinBox bounds them; bounded here before any narrowing
    // (a 64-bit count cast to int first could wrap into the range).
    held.prefixTokens = std::clamp<std::int64_t>(in.prefixTokens, 0, kTrafficMaxPrefixTokens);
    held.sloTtftMs = trafficFieldValue(kTrafficSloTtftField, in.sloTtftMs);
    held.sloTpotMs = trafficFieldValue(kTrafficSloTpotField, in.sloTpotMs);
    held.attainment = trafficFieldValue(kTrafficAttainmentField, in.attainment * 100) / 100.0;
    held.requests = std::clamp<std::int64_t>(in.requests, kTrafficMinRequests, kTrafficMaxRequests);
    held.seed = std::clamp<std::uint64_t>(in.seed, 1, kTrafficMaxSeed);
    return held;
}

std::string followedTrafficPrompt(const core::Scenario& s, const std::string& output) {
    // The scenario's requests (and its shared prefix) are then what the simulation serves.
    const auto out = core::sim::parseLengthDist(output);
    const std::int64_t outTokens = out ? std::llround(out->expected()) : 256;
    return std::to_string(
        std::max<std::int64_t>(1, s.workload.context - std::max<std::int64_t>(0, outTokens)));
}

std::int64_t followedTrafficPrefix(const core::Scenario& s) {
    return s.levers.prefix.enabled ? s.levers.prefix.sharedTokens : 0;
}

TrafficInputs scenarioTrafficInputs(const core::Scenario& s, const core::SpeedAssumptions& speed) {
    TrafficInputs in;
    in.prompt = followedTrafficPrompt(s, in.output);
    const std::int64_t prefix = followedTrafficPrefix(s);
    in.prefixTokens = std::min<std::int64_t>(prefix, kTrafficMaxPrefixTokens);
    in.prefixShare = prefix > 0 ? 1.0 : 0.0;
    in.speed = speed;
    return heldTrafficInputs(in);
}

} // namespace kvl::widgets
