#pragma once
// kvprobe's JSON (schema_version 1, documented in gpu_probe/README.md; the fields are in
// results_schema.h). The GUI loads what `run` and `bench` write (results_io.h) and saves its own
// runs in the same form.
//
// Written by a small emitter rather than a JSON library: kvprobe builds on a GPU machine that
// has CMake, nvcc and a compiler and no JSON library, and writing JSON needs no parser, only
// string escaping, exact integers and round-trip doubles.

#include "gpu_probe/backend.h"
#include "gpu_probe/io/results_io.h"
#include "gpu_probe/run/probe.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvl::probe {

inline constexpr int kSchemaVersion = 1;

// When and where a report was made: "2026-11-29T10:21:22Z" (UTC) and the host name.
std::string utcNow();
std::string hostName();

// Pretty-printed JSON (two-space indent, nlohmann's layout). Strings are escaped (control
// characters as \u00XX, invalid UTF-8 replaced by U+FFFD); integers are exact; doubles are the
// shortest text that reads back bit for bit; NaN and infinities are written as null.
class JsonWriter {
public:
    JsonWriter& beginObject();
    JsonWriter& endObject();
    JsonWriter& beginArray();
    JsonWriter& endArray();
    JsonWriter& key(std::string_view name); // inside an object, before each value
    JsonWriter& value(std::string_view s);
    JsonWriter& value(const char* s) { return value(std::string_view(s)); }
    JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
    JsonWriter& value(bool b);
    JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
    JsonWriter& value(std::int64_t v);
    JsonWriter& value(double d);
    JsonWriter& null();
    // The document with a final newline. Precondition: every object and array closed.
    std::string finish();

private:
    struct Level {
        bool object;
        int count;
    };
    void beforeValue();
    void newline();
    // Ends the innermost object or array with `bracket`, on a line of its own unless empty.
    JsonWriter& close(char bracket);
    std::string m_out;
    std::vector<Level> m_stack;
    bool m_afterKey = false;
};

// The documents kvprobe writes, each ending in a newline.
std::string infoJson(const std::vector<BackendInfo>& backends, bool cudaCompiled); // info
std::string checkJson(const CheckReport& report);                                  // check
std::string runJson(const ProbeResult& result);   // run: the envelope and one row in results
std::string benchJson(const ProbeReport& report); // bench: rows and quality_vs_context
// A report in the bench layout, for saving the explorer's own runs (parseProbeReport reads it
// back). The date and host are the report's, or now and this host when it has none.
std::string probeReportToJson(const ProbeReport& report);

} // namespace kvl::probe
