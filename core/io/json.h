#pragma once
// JSON text → nlohmann::json, with the bounds that keep a hostile file cheap to refuse.
// nlohmann-json is the one JSON parser of KV Ledger (strict RFC 8259, exact 64-bit integers,
// byte positions in its errors); this adds what it does not have: limits checked while
// parsing, refusal of duplicate member names and of NUL bytes, and one-line messages that
// name the file. Readers do not use the result directly but through json_fields.h.
//
// The limits, in one place (the file size limit, kMaxFileBytes, is in files.h):
//   document size  kMaxJsonBytes  = 64 MiB (= kMaxFileBytes: every document is a file)
//   nesting depth  kMaxJsonDepth  = 256 levels (a config.json nests 3, a results file 4)
//   values         kMaxJsonValues = 2^20, counting every scalar, array and object (a bench
//                  results file of a few MiB holds ~10^5; a config.json ~10^3)
// Beyond them parsing stops at once: a 64 MiB array of zeros costs the first 2^20 values
// (~30 MB), not 1.4 GB.

#include "core/io/files.h"
#include "core/result.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvl::io {

inline constexpr std::size_t kMaxJsonBytes = static_cast<std::size_t>(kMaxFileBytes);
inline constexpr int kMaxJsonDepth = 256;
inline constexpr std::size_t kMaxJsonValues = std::size_t{1} << 20;

// Which JSON a reader takes. Strict is RFC 8259 (scenario files, catalogs, results). NonFinite
// also takes the tokens NaN, Infinity and -Infinity outside strings, which Python's json module
// writes for float('nan') / float('inf') and which HuggingFace ships in some config.json files
// (Nemotron-H's "time_step_limit": [0.0, Infinity]); they are read as the double NaN / +inf /
// -inf, which every numeric read of json_fields.h refuses, naming the field. For config.json
// only.
enum class JsonSyntax : std::uint8_t { Strict, NonFinite };

// Parses one JSON document. Errors (BadFile) read "<source>: not valid JSON: line 3,
// column 8: syntax error while parsing value - unexpected ','; ..." (nlohmann's explanation,
// its byte position turned into line and column), or name the limit that was exceeded.
// Never throws. Refuses NaN/Infinity (unless `syntax` is NonFinite), trailing text, duplicate
// member names, NUL bytes, invalid UTF-8 and numbers beyond a double's range.
Result<nlohmann::json> parseJson(std::string_view text, std::string_view source,
                                 JsonSyntax syntax = JsonSyntax::Strict);

// Shortest text that reads back as the same double ("0.1", "1e+300"); "null" for NaN and
// infinities. For messages.
std::string formatNumber(double value);

// `text` as a JSON string literal for a one-line message: quoted, control characters escaped,
// cut to about 40 characters ("\"a very long na...\"").
std::string quoteText(std::string_view text);

// nlohmann's dump for files KV Ledger writes (scenario files, kvledger --json): pretty with
// `indent` spaces (compact when negative), never throwing on invalid UTF-8 (replaced by
// U+FFFD).
template <class Json> std::string dumpJson(const Json& value, int indent = 2) {
    return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace kvl::io
