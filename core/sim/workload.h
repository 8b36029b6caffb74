#pragma once
// The traffic a simulation serves: when requests arrive (Poisson, bursty Gamma with a
// coefficient of variation, or a closed loop of fixed concurrency), how long their prompts and
// outputs are (fixed, uniform, lognormal or a histogram), and which of them share a prompt
// prefix. Or a trace read line by line (core/io/trace.h) through the same RequestSource.
//
// Deterministic for a seed on every platform: the generator and the distributions are written
// here (xoshiro256** seeded by splitmix64, Box-Muller normals, Marsaglia-Tsang gammas), not
// taken from <random>, whose distributions differ between standard libraries.

#include "core/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvl::core::sim {

// Limits that keep a simulation finite; past them a value is refused as absurd.
inline constexpr double kMinRate = 1e-6;            // requests per second
inline constexpr double kMaxRate = 1e6;             // requests per second
inline constexpr std::int64_t kMaxTokens = 1 << 24; // per prompt or output (16M)
inline constexpr std::int64_t kMaxSimRequests = 100'000'000;
inline constexpr double kMaxDurationS = 1e8;
inline constexpr std::int64_t kMaxConcurrency = 1'000'000;

class Rng {
public:
    explicit Rng(std::uint64_t seed);
    std::uint64_t next();
    double uniform();           // (0, 1)
    double normal();            // standard normal
    double exponential();       // mean 1
    double gamma(double shape); // scale 1
private:
    std::uint64_t m_s[4];
    bool m_hasSpare = false;
    double m_spare = 0;
};

// A distribution of token counts: "1024", "uniform:512:2048", "lognormal:MEAN:SIGMA" (MEAN the
// mean in tokens, SIGMA the standard deviation of the logarithm) or
// "hist:V1:W1,V2:W2,..." (value V with relative weight W).
struct LengthDist {
    enum class Kind : std::uint8_t { Fixed, Uniform, LogNormal, Histogram };
    Kind kind = Kind::Fixed;
    std::int64_t value = 1024; // Fixed
    std::int64_t lo = 0, hi = 0;
    double mean = 0, sigma = 0;
    std::vector<std::pair<std::int64_t, double>> bins;
    std::vector<double> cumulative; // of the bins' weights, normalised

    static LengthDist fixed(std::int64_t n) {
        LengthDist d;
        d.value = n;
        return d;
    }
    std::int64_t sample(Rng& rng) const; // in [1, kMaxTokens]
    double expected() const;             // the mean
    std::int64_t largest() const;        // the largest value it gives (lognormal: its p99.9)
    std::string text() const;            // as parsed
};
// The error names no option; the caller puts its own in front.
Result<LengthDist> parseLengthDist(std::string_view text);

enum class ArrivalKind : std::uint8_t { Poisson, Gamma, ClosedLoop };

struct WorkloadSpec {
    ArrivalKind arrival = ArrivalKind::Poisson;
    double rate = 1.0;            // requests per second (Poisson, Gamma)
    double cv = 1.0;              // Gamma: coefficient of variation of the gaps (1 = Poisson)
    std::int64_t concurrency = 0; // closed loop: clients, each sending again when served
    LengthDist prompt;
    LengthDist output = LengthDist::fixed(256);
    double prefixShare = 0;        // fraction of requests that start with a shared prefix
    std::int64_t prefixTokens = 0; // its length
    int prefixGroups = 1;          // distinct prefixes, chosen uniformly
    std::int64_t requests = 0;     // stop after this many arrivals (0 = by duration)
    double durationS = 0;          // stop arrivals after this time (0 = by requests)
    std::uint64_t seed = 1;
};
// Rates, lengths and counts within the limits above; the message names the field as the CLI's
// option ("rate", "prompt-tokens", ...), without the dashes.
struct WorkloadProblem {
    std::string option;
    std::string message;
};
std::optional<WorkloadProblem> workloadProblem(const WorkloadSpec& w);

// One request as it arrives.
struct ArrivingRequest {
    double arrivalS = 0;
    std::int64_t promptTokens = 0;
    std::int64_t outputTokens = 0;
    std::int64_t prefixId = -1;    // -1 = none
    std::int64_t prefixTokens = 0; // the shared part of the prompt (at most the prompt)
};

// Requests in order of arrival, pulled one at a time so that a trace of any length runs in
// bounded memory. next() returns false at the end or on an error (error() says which, one
// line naming the file and line).
class RequestSource {
public:
    virtual ~RequestSource() = default;
    virtual bool next(ArrivingRequest& out) = 0;
    virtual std::string error() const { return {}; }
    // A closed loop: the simulation asks for the next request when one is served.
    virtual bool closedLoop() const { return false; }
    virtual std::int64_t concurrency() const { return 0; }
    // A closed loop sends no new request after this time (0 = until its requests are out).
    virtual double closedLoopUntilS() const { return 0; }
};

// The synthetic workload of a WorkloadSpec (checked by workloadProblem first). In a closed
// loop, arrivalS is left 0 and the simulation sets it.
class SyntheticSource : public RequestSource {
public:
    explicit SyntheticSource(const WorkloadSpec& w);
    bool next(ArrivingRequest& out) override;
    bool closedLoop() const override { return m_w.arrival == ArrivalKind::ClosedLoop; }
    std::int64_t concurrency() const override { return m_w.concurrency; }
    double closedLoopUntilS() const override { return m_w.durationS; }

private:
    WorkloadSpec m_w;
    Rng m_rng;
    double m_t = 0;
    std::int64_t m_count = 0;
};

} // namespace kvl::core::sim
