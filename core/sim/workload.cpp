#include "workload.h"

#include "core/units.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

namespace kvl::core::sim {

namespace {

std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

Error bad(std::string m) {
    return makeError(ErrorCode::BadInput, std::move(m));
}

std::optional<std::int64_t> wholeNumber(std::string_view t) {
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size() || t.empty())
        return std::nullopt;
    return v;
}

std::optional<double> realNumber(std::string_view t) {
    const std::string s(t);
    char* end = nullptr;
    const double v = s.empty() ? 0.0 : std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

std::vector<std::string_view> split(std::string_view t, char sep) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        const std::size_t at = t.find(sep, start);
        out.push_back(
            t.substr(start, at == std::string_view::npos ? t.size() - start : at - start));
        if (at == std::string_view::npos)
            return out;
        start = at + 1;
    }
}

std::string shortNumber(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return b;
}

const std::string kTokensRange = "1 to " + withThousands(kMaxTokens);

} // namespace

Rng::Rng(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (auto& s : m_s)
        s = splitmix(x);
}

std::uint64_t Rng::next() {
    const std::uint64_t result = rotl(m_s[1] * 5, 7) * 9;
    const std::uint64_t t = m_s[1] << 17;
    m_s[2] ^= m_s[0];
    m_s[3] ^= m_s[1];
    m_s[1] ^= m_s[2];
    m_s[0] ^= m_s[3];
    m_s[2] ^= t;
    m_s[3] = rotl(m_s[3], 45);
    return result;
}

double Rng::uniform() {
    // 53 random bits, never 0 (log(0) below) and never 1.
    return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double Rng::normal() {
    if (m_hasSpare) {
        m_hasSpare = false;
        return m_spare;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double a = 2.0 * 3.14159265358979323846 * uniform();
    m_spare = r * std::sin(a);
    m_hasSpare = true;
    return r * std::cos(a);
}

double Rng::exponential() {
    return -std::log(uniform());
}

double Rng::gamma(double shape) {
    // Marsaglia and Tsang (2000), "A simple method for generating gamma variables"; shape < 1
    // by the boost gamma(k) = gamma(k + 1) x U^(1/k).
    if (shape < 1.0)
        return gamma(shape + 1.0) * std::pow(uniform(), 1.0 / shape);
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
        double x = 0, v = 0;
        do {
            x = normal();
            v = 1.0 + c * x;
        } while (v <= 0);
        v = v * v * v;
        const double u = uniform();
        if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v))
            return d * v;
    }
}

std::int64_t LengthDist::sample(Rng& rng) const {
    std::int64_t v = value;
    switch (kind) {
    case Kind::Fixed:
        break;
    case Kind::Uniform:
        v = lo + static_cast<std::int64_t>(rng.uniform() * static_cast<double>(hi - lo + 1));
        break;
    case Kind::LogNormal: {
        // mean = exp(mu + sigma^2 / 2)
        const double mu = std::log(mean) - sigma * sigma / 2;
        v = std::llround(std::exp(mu + sigma * rng.normal()));
        break;
    }
    case Kind::Histogram: {
        const double u = rng.uniform();
        const auto it = std::lower_bound(cumulative.begin(), cumulative.end(), u);
        const std::size_t i = std::min<std::size_t>(
            static_cast<std::size_t>(it - cumulative.begin()), bins.size() - 1);
        v = bins[i].first;
        break;
    }
    }
    return std::clamp<std::int64_t>(v, 1, kMaxTokens);
}

double LengthDist::expected() const {
    switch (kind) {
    case Kind::Fixed:
        return static_cast<double>(value);
    case Kind::Uniform:
        return (static_cast<double>(lo) + static_cast<double>(hi)) / 2;
    case Kind::LogNormal:
        return mean;
    case Kind::Histogram: {
        double sum = 0, w = 0;
        for (const auto& [v, weight] : bins) {
            sum += static_cast<double>(v) * weight;
            w += weight;
        }
        return w > 0 ? sum / w : 0;
    }
    }
    return 0;
}

std::int64_t LengthDist::largest() const {
    switch (kind) {
    case Kind::Fixed:
        return value;
    case Kind::Uniform:
        return hi;
    case Kind::LogNormal: {
        const double mu = std::log(mean) - sigma * sigma / 2;
        return std::clamp<std::int64_t>(std::llround(std::exp(mu + 3.09 * sigma)), 1, kMaxTokens);
    }
    case Kind::Histogram: {
        std::int64_t m = 0;
        for (const auto& b : bins)
            m = std::max(m, b.first);
        return m;
    }
    }
    return value;
}

std::string LengthDist::text() const {
    switch (kind) {
    case Kind::Fixed:
        return std::to_string(value);
    case Kind::Uniform:
        return "uniform:" + std::to_string(lo) + ":" + std::to_string(hi);
    case Kind::LogNormal:
        return "lognormal:" + shortNumber(mean) + ":" + shortNumber(sigma);
    case Kind::Histogram: {
        std::string t = "hist:";
        for (std::size_t i = 0; i < bins.size(); ++i) {
            if (i > 0)
                t += ',';
            t += std::to_string(bins[i].first);
            t += ':';
            t += shortNumber(bins[i].second);
        }
        return t;
    }
    }
    return {};
}

Result<LengthDist> parseLengthDist(std::string_view text) {
    const std::string shown(text);
    const std::string expect = "expected N, uniform:MIN:MAX, lognormal:MEAN:SIGMA or "
                               "hist:V:W,V:W,... with token counts from " +
                               kTokensRange + ", got '" + shown + "'";
    LengthDist d;
    auto tokens = [&](std::string_view t) -> std::optional<std::int64_t> {
        const auto v = wholeNumber(t);
        if (!v || *v < 1 || *v > kMaxTokens)
            return std::nullopt;
        return v;
    };
    if (const auto v = wholeNumber(text)) {
        if (*v < 1 || *v > kMaxTokens)
            return bad("must be from " + kTokensRange + " tokens, got " + shown);
        d.value = *v;
        return d;
    }
    const auto parts = split(text, ':');
    if (parts[0] == "uniform" && parts.size() == 3) {
        const auto lo = tokens(parts[1]), hi = tokens(parts[2]);
        if (!lo || !hi || *lo > *hi)
            return bad("expected uniform:MIN:MAX with 1 <= MIN <= MAX <= " +
                       withThousands(kMaxTokens) + ", got '" + shown + "'");
        d.kind = LengthDist::Kind::Uniform;
        d.lo = *lo;
        d.hi = *hi;
        return d;
    }
    if (parts[0] == "lognormal" && parts.size() == 3) {
        const auto mean = realNumber(parts[1]), sigma = realNumber(parts[2]);
        if (!mean || !sigma || *mean < 1 || *mean > static_cast<double>(kMaxTokens) ||
            *sigma <= 0 || *sigma > 4)
            return bad("expected lognormal:MEAN:SIGMA with MEAN from " + kTokensRange +
                       " tokens and SIGMA above 0 and at most 4, got '" + shown + "'");
        d.kind = LengthDist::Kind::LogNormal;
        d.mean = *mean;
        d.sigma = *sigma;
        return d;
    }
    if (parts[0] == "hist" && text.size() > 5) {
        d.kind = LengthDist::Kind::Histogram;
        double total = 0;
        for (const auto bin : split(text.substr(5), ',')) {
            const auto vw = split(bin, ':');
            const auto v = vw.size() == 2 ? tokens(vw[0]) : std::nullopt;
            const auto w = vw.size() == 2 ? realNumber(vw[1]) : std::nullopt;
            if (!v || !w || *w < 0)
                return bad("expected hist:V:W,V:W,... with V from " + kTokensRange +
                           " tokens and weights W >= 0, got '" + shown + "'");
            d.bins.emplace_back(*v, *w);
            total += *w;
        }
        if (!(total > 0) || d.bins.size() > 10000)
            return bad("a histogram needs 1 to 10,000 bins and a positive total weight, got '" +
                       shown + "'");
        double c = 0;
        for (const auto& b : d.bins) {
            c += b.second / total;
            d.cumulative.push_back(c);
        }
        return d;
    }
    return bad(expect);
}

std::optional<WorkloadProblem> workloadProblem(const WorkloadSpec& w) {
    auto problem = [](std::string o, std::string m) {
        return std::optional<WorkloadProblem>(WorkloadProblem{std::move(o), std::move(m)});
    };
    if (w.arrival == ArrivalKind::ClosedLoop) {
        if (w.concurrency < 1 || w.concurrency > kMaxConcurrency)
            return problem("concurrency", "must be from 1 to " + withThousands(kMaxConcurrency) +
                                              ", got " + std::to_string(w.concurrency));
    } else if (!std::isfinite(w.rate) || w.rate < kMinRate || w.rate > kMaxRate) {
        return problem("rate", "must be from " + shortNumber(kMinRate) + " to " +
                                   withThousands(static_cast<std::int64_t>(kMaxRate)) +
                                   " requests per second, got " + shortNumber(w.rate));
    }
    if (w.arrival == ArrivalKind::Gamma && (!std::isfinite(w.cv) || w.cv <= 0 || w.cv > 100))
        return problem("burstiness", "the coefficient of variation must be above 0 and at most "
                                     "100, got " +
                                         shortNumber(w.cv));
    if (!std::isfinite(w.prefixShare) || w.prefixShare < 0 || w.prefixShare > 1)
        return problem("prefix-share",
                       "must be a fraction from 0 to 1, got " + shortNumber(w.prefixShare));
    if (w.prefixTokens < 0 || w.prefixTokens > kMaxTokens)
        return problem("prefix-tokens", "must be from 0 to " + withThousands(kMaxTokens) +
                                            ", got " + std::to_string(w.prefixTokens));
    if (w.prefixGroups < 1 || w.prefixGroups > 1'000'000)
        return problem("prefix-groups",
                       "must be from 1 to 1,000,000, got " + std::to_string(w.prefixGroups));
    if (w.requests < 0 || w.requests > kMaxSimRequests)
        return problem("requests", "must be from 1 to " + withThousands(kMaxSimRequests) +
                                       ", got " + std::to_string(w.requests));
    if (!std::isfinite(w.durationS) || w.durationS < 0 || w.durationS > kMaxDurationS)
        return problem("duration", "must be above 0 and at most " +
                                       withThousands(static_cast<std::int64_t>(kMaxDurationS)) +
                                       " seconds, got " + shortNumber(w.durationS));
    if (w.requests == 0 && w.durationS == 0)
        return problem("requests", "give --requests N or --duration S (the simulation must end)");
    return std::nullopt;
}

SyntheticSource::SyntheticSource(const WorkloadSpec& w) : m_w(w), m_rng(w.seed) {}

bool SyntheticSource::next(ArrivingRequest& out) {
    if (m_w.requests > 0 && m_count >= m_w.requests)
        return false;
    if (m_w.arrival != ArrivalKind::ClosedLoop) {
        double gap = 0;
        if (m_w.arrival == ArrivalKind::Poisson) {
            gap = m_rng.exponential() / m_w.rate;
        } else {
            // Gamma gaps of mean 1/rate and CV c: shape 1/c^2, scale c^2/rate.
            const double shape = 1.0 / (m_w.cv * m_w.cv);
            gap = m_rng.gamma(shape) / (shape * m_w.rate);
        }
        // The first request arrives at 0, so that a run of N requests spans (N - 1) gaps.
        if (m_count > 0)
            m_t += gap;
        if (m_w.durationS > 0 && m_t > m_w.durationS)
            return false;
    }
    out = ArrivingRequest{};
    out.arrivalS = m_t;
    out.promptTokens = m_w.prompt.sample(m_rng);
    out.outputTokens = m_w.output.sample(m_rng);
    if (m_w.prefixShare > 0 && m_w.prefixTokens > 0 && m_rng.uniform() < m_w.prefixShare) {
        out.prefixId = m_w.prefixGroups > 1
                           ? static_cast<std::int64_t>(m_rng.next() %
                                                       static_cast<std::uint64_t>(m_w.prefixGroups))
                           : 0;
        out.prefixTokens = std::min(m_w.prefixTokens, out.promptTokens);
    }
    ++m_count;
    return true;
}

} // namespace kvl::core::sim
