#pragma once
// A request trace for the traffic simulation (core/sim), read line by line so that a trace of a
// million requests runs in bounded memory: JSONL (one object a line) or CSV (a header line,
// then one request a line), with the fields
//   arrival_s      seconds from the start, in order (never before the previous line's)
//   prompt_tokens  1 to 16,777,216
//   output_tokens  1 to 16,777,216
//   prefix_id      optional: requests of one id share their first prefix_tokens tokens
//   prefix_tokens  optional: that length (default: the simulation's --prefix-tokens)
// Blank lines and lines starting with '#' are skipped. A bad line stops the simulation with
// one line naming the file and the line number: "trace.csv:17: prompt_tokens: ...".

#include "core/io/files.h"
#include "core/result.h"
#include "core/sim/workload.h"

#include <cstdint>
#include <memory>
#include <string>

namespace kvl::io {

inline constexpr std::size_t kMaxTraceLineBytes = 64 * 1024;

class TraceSource : public core::sim::RequestSource {
public:
    // Opens the file (RegularFile's checks) and reads the CSV header when it is CSV: a name
    // ending in .csv, or one not ending in .jsonl/.json whose first line does not start '{'.
    static Result<std::unique_ptr<TraceSource>> open(const std::string& path,
                                                     std::int64_t defaultPrefixTokens = 0);
    bool next(core::sim::ArrivingRequest& out) override;
    std::string error() const override { return m_error; }
    std::int64_t lineNumber() const { return m_line; }

private:
    explicit TraceSource(RegularFile file);
    bool readLine(std::string& line); // false at the end or on an error
    bool fail(const std::string& message);
    bool parseCsv(const std::string& line, core::sim::ArrivingRequest& out);
    bool parseJsonl(const std::string& line, core::sim::ArrivingRequest& out);
    bool check(core::sim::ArrivingRequest& out, bool hasPrefixTokens);

    RegularFile m_file;
    std::string m_buf;
    std::size_t m_pos = 0;
    bool m_eof = false;
    std::int64_t m_line = 0;
    bool m_csv = false;
    int m_col[5] = {-1, -1, -1, -1, -1}; // CSV: arrival, prompt, output, prefix id, prefix tokens
    int m_columns = 0;
    double m_last = 0;
    std::int64_t m_defaultPrefix = 0;
    std::string m_error;
    std::string m_pendingLine; // the first data line, read while sniffing the format
    bool m_hasPending = false;
};

} // namespace kvl::io
