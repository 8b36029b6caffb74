#pragma once
// kvprobe's results schema (schema_version 1, documented in gpu_probe/README.md) as field
// tables. The writer (probe_json.cpp) and the reader (results_io.cpp) both iterate them, so
// every key, its type, range and when it is required are written down once.

#include "gpu_probe/run/probe.h"

#include <array>
#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

namespace kvl::probe::schema {

// The document's own keys, read and written by hand around the tables.
inline constexpr std::string_view kTool = "tool";
inline constexpr std::string_view kToolName = "kvprobe";
inline constexpr std::string_view kSchemaVersionKey = "schema_version";
inline constexpr std::string_view kCommand = "command";
inline constexpr std::string_view kResults = "results";
inline constexpr std::string_view kQualityVsContext = "quality_vs_context";
inline constexpr std::string_view kFormatLabel = "format_label"; // quality_vs_context entries
inline constexpr std::string_view kPoints = "points";

// Bounds far beyond any real measurement (each exact in a double, as all bounds here).
inline constexpr double kMaxBytes = double(std::int64_t(1) << 56); // 64 PiB: beyond any pool
inline constexpr double kMaxCount = double(std::int64_t(1) << 40); // tokens, pages
inline constexpr double kMaxDims = double(1 << 20);                // heads, head_dim, block
inline constexpr double kMaxReal = 1e15;                           // ms, GB/s, tokens/s, errors
inline constexpr std::size_t kMaxRows = 100000;                    // entries of any array
inline constexpr std::size_t kMaxText = 4096;                      // characters of any string

enum class Need : std::uint8_t {
    Optional, // may be absent: absent reads as the member's default
    Always,   // required
    WhenOk,   // required in a row that succeeded (a failed row may stop before shapes are known)
    Marker,   // its presence means the field's group was measured; required within the group
};

// Speed and quality fields are written only when measured (speedMeasured / qualityMeasured).
enum class Group : std::uint8_t { Always, Speed, Quality };

// The member a key maps to; monostate: a constant with no member ("layers": always 1).
// A ProbeStatus is written twice: "ok" (a boolean, what every reader checks) and "status"
// ("ok", "failed" or "cancelled"); an Error is written as its message.
struct OkOf {
    ProbeStatus ProbeResult::*member;
};
template <class S>
using Member = std::variant<std::monostate, bool S::*, std::string S::*, int S::*,
                            std::int64_t S::*, double S::*, std::vector<QualityPoint> S::*,
                            std::vector<std::string> S::*, ProbeStatus S::*, Error S::*, OkOf>;

template <class S> struct Field {
    std::string_view key;
    Member<S> member;
    Need need = Need::Optional;
    Group group = Group::Always;
    double lo = 0;               // numbers: the accepted range [lo, hi]
    double hi = kMaxReal;        //
    bool positiveWhenOk = false; // integers: at least 1 in a row that succeeded
};

using R = ProbeResult;
using Q = QualityPoint;
using P = ProbeReport;

// One row of `results`, in the order written.
inline const auto kResultFields = std::to_array<Field<R>>({
    {"ok", OkOf{&R::status}, Need::Always},
    {"status", &R::status},
    {"error", &R::error},
    {"format", &R::formatId, Need::Always},
    {"format_label", &R::formatLabel},
    {"dtype", &R::dtype},
    {"model", &R::modelId},
    {"kv_heads", &R::kvHeads, Need::WhenOk, Group::Always, 0, kMaxDims, true},
    {"q_heads", &R::qHeads, Need::WhenOk, Group::Always, 0, kMaxDims, true},
    {"head_dim", &R::headDim, Need::WhenOk, Group::Always, 0, kMaxDims, true},
    {"block_size", &R::blockSize, Need::WhenOk, Group::Always, 0, kMaxDims, true},
    {"batch", &R::batch, Need::WhenOk, Group::Always, 0, double(1 << 24), true},
    {"context", &R::context, Need::WhenOk, Group::Always, 0, kMaxCount, true},
    {"prefix_tokens", &R::prefixTokens, Need::Optional, Group::Always, 0, kMaxCount},
    {"layers", std::monostate{}, Need::Optional, Group::Always, 0, kMaxDims}, // kvprobe: 1
    {"page_bytes", &R::pageBytes, Need::WhenOk, Group::Always, 0, kMaxBytes},
    {"predicted_pool_bytes", &R::predictedPoolBytes, Need::WhenOk, Group::Always, 0, kMaxBytes},
    {"pool_bytes", &R::poolBytes, Need::WhenOk, Group::Always, 0, kMaxBytes},
    {"allocated_pool_bytes", &R::allocatedPoolBytes, Need::Optional, Group::Always, 0, kMaxBytes},
    {"device_pool_bytes", &R::devicePoolBytes, Need::Optional, Group::Always, 0, kMaxBytes},
    {"device_account", &R::deviceAccountKind},
    {"allocator_granularity_bytes", &R::allocatorGranularity, Need::Optional, Group::Always, 0,
     kMaxBytes},
    {"memory_error_pct", &R::memoryErrorPct, Need::Optional, Group::Always, -1e9, 1e9},
    {"pages_used", &R::pagesUsed, Need::WhenOk, Group::Always, 0, kMaxCount},
    {"pages_saved", &R::pagesSaved, Need::WhenOk, Group::Always, 0, kMaxCount},
    // Speed (the yardsticks of the same run first: the device copy, and the read stream where
    // the backend has one; absent from files of an older kvprobe, read as 0).
    {"copy_gbs", &R::copyGBs, Need::Optional, Group::Speed},
    {"read_gbs", &R::readGBs, Need::Optional, Group::Speed},
    {"store_ms", &R::storeMs, Need::Optional, Group::Speed},
    {"store_bytes", &R::storeBytes, Need::Optional, Group::Speed, 0, kMaxBytes},
    {"store_gbs", &R::storeGBs, Need::Optional, Group::Speed},
    {"store_pct_of_copy", &R::storePctOfCopy, Need::Optional, Group::Speed},
    {"attention_ms", &R::attentionMs, Need::Marker, Group::Speed},
    {"attention_bytes", &R::attentionBytes, Need::Optional, Group::Speed, 0, kMaxBytes},
    {"tokens_per_s", &R::tokensPerS, Need::Optional, Group::Speed},
    {"attention_gbs", &R::attentionGBs, Need::Optional, Group::Speed},
    {"pct_of_copy", &R::attentionPctOfCopy, Need::Optional, Group::Speed},
    // Quality (vs FP64 on the unquantized data).
    {"data", &R::dataSource, Need::Optional, Group::Quality},
    {"rel_l2_error", &R::relL2, Need::Marker, Group::Quality},
    {"max_abs_error", &R::maxAbs, Need::Optional, Group::Quality},
    {"top8_agreement", &R::top8, Need::Optional, Group::Quality, 0, 1},
    {"kernel_vs_reference_rel_l2", &R::kernelVsRefRelL2, Need::Optional, Group::Quality},
    {"k_rel_l2_error", &R::kRelL2, Need::Optional, Group::Quality},
    {"v_rel_l2_error", &R::vRelL2, Need::Optional, Group::Quality},
    {"k_max_abs_error", &R::kMaxAbs, Need::Optional, Group::Quality},
    {"v_max_abs_error", &R::vMaxAbs, Need::Optional, Group::Quality},
    // Always, last.
    {"quality_vs_context", &R::qualityVsContext},
    {"notes", &R::notes},
});

// Whether a row carries the group's fields (the writer writes them only then; the reader
// sets the flag when the group's marker key is present).
inline bool R::*groupFlag(Group g) {
    return g == Group::Speed     ? &R::speedMeasured
           : g == Group::Quality ? &R::qualityMeasured
                                 : nullptr;
}

// One point of a quality-vs-context sweep.
inline const auto kPointFields = std::to_array<Field<Q>>({
    {"context", &Q::context, Need::Always, Group::Always, 1, kMaxCount},
    {"rel_l2_error", &Q::relL2, Need::Always},
    {"max_abs_error", &Q::maxAbs},
    {"top8_agreement", &Q::top8, Need::Optional, Group::Always, 0, 1},
    {"kernel_vs_reference_rel_l2", &Q::kernelVsRefRelL2},
});

// The report's envelope, after tool, schema_version and command; then come results and
// quality_vs_context.
inline const auto kReportFields = std::to_array<Field<P>>({
    {"backend", &P::backend, Need::Always},
    {"device", &P::device},
    {"date", &P::date}, // ISO 8601 UTC
    {"host", &P::host},
    {"copy_bandwidth_gbs", &P::copyGBs},
    {"read_bandwidth_gbs", &P::readGBs}, // 0 (or absent: an older kvprobe) when not measured
    {"status", &P::status},
    {"error", &P::error},
});

} // namespace kvl::probe::schema
