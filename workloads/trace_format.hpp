#pragma once
// Trace formats: one line parser per recorded-trace format, listed by name in
// the explicit table of trace_formats.cpp (`workload.trace.format: mooncake`).
// A parser turns one line of text into a TraceRecord or says what is wrong
// with it; it never reads the file itself, so the streaming, windowing and
// error policy (trace_file_reader.cpp) are the same for every format.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/units.hpp"

namespace kvsim {

// Tokens covered by one Mooncake hash id (Mooncake FAST'25 trace README:
// "each hash id stands for a block of 512 tokens").
constexpr int64_t kMooncakeBlockTokens = 512;

// One request as recorded.
struct TraceRecord {
  int64_t line = 0;  // 1-based line of the file it came from
  TimeNs time = 0;   // on the format's own clock (ns); only differences matter
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  // Mooncake prefix hash ids, one per 512-token block of the input; empty for
  // formats without prefix information.
  std::vector<int64_t> hash_ids;
  // The agentic format's session graph (trace_agentic.cpp); empty / -1 / 0
  // for every other format.
  std::string session_id, parent_session_id;
  int64_t branch_call = -1;
  TimeNs delay = 0;   // after the dependency completes
  bool timed = true;  // the record carries a timestamp
};

// What a parser says about one line.
enum class LineKind { record, blank, malformed };

struct LineResult {
  LineKind kind = LineKind::record;
  std::string problem;  // for malformed: what is wrong (names the field)
};

inline LineResult malformed_line(std::string problem) {
  return {LineKind::malformed, std::move(problem)};
}

// The deepest nesting a JSONL record may have: deeper than a record's shape
// needs (one object holding one list), refused before the parser builds it
// (a quoted deep value would recurse).
constexpr int kMaxTraceNesting = 8;

// Column layout of a CSV format, found by name in its header line, so extra
// columns and any column order are accepted.
struct CsvColumns {
  int time = -1;
  int input = -1;
  int output = -1;
  int count = 0;  // columns in the header
};

struct TraceFormat {
  const char* name;
  const char* description;
  // The header line a CSV format needs (its column names, comma separated);
  // nullptr for a format without a header (JSONL).
  const char* header;
  // Parses the header (CSV formats) into the column layout; returns a problem
  // or "" when it is usable.
  std::string (*read_header)(std::string_view line, CsvColumns& columns);
  // Parses one data line. `columns` is what read_header found.
  LineResult (*parse_line)(std::string_view line, const CsvColumns& columns, TraceRecord& out);
};

// The table, sorted by name; nullptr for an unknown name.
const std::vector<TraceFormat>& trace_format_table();
const TraceFormat* find_trace_format(std::string_view name);
std::vector<std::string> trace_formats();  // {"azure", "mooncake", "prefill_decode_csv"}

namespace detail {
// The formats (one file each).
LineResult parse_mooncake_line(std::string_view line, const CsvColumns& columns, TraceRecord& out);
// The same through a JSON parser for every line: parse_mooncake_line reads
// the traces' own shape directly and hands every other line to this one, so
// both agree on every line (tests compare them).
LineResult parse_mooncake_line_in_full(std::string_view line, const CsvColumns& columns,
                                       TraceRecord& out);
LineResult parse_agentic_line(std::string_view line, const CsvColumns& columns, TraceRecord& out);
std::string read_azure_header(std::string_view line, CsvColumns& columns);
LineResult parse_azure_line(std::string_view line, const CsvColumns& columns, TraceRecord& out);
std::string read_prefill_decode_header(std::string_view line, CsvColumns& columns);
LineResult parse_prefill_decode_line(std::string_view line, const CsvColumns& columns,
                                     TraceRecord& out);

// Shared by the CSV readers: a cell without its surrounding spaces, tabs and
// a trailing '\r' (a file written on Windows).
std::string_view trim_cell(std::string_view s);
// Shared by the CSV formats: splits a line on commas (no quoting: the traces
// hold numbers and timestamps only), trims spaces and a trailing '\r'.
std::vector<std::string_view> split_csv(std::string_view line);
// Finds the named columns of a header; a problem naming what is missing or "".
std::string find_columns(std::string_view header, const char* time_name, const char* input_name,
                         const char* output_name, CsvColumns& columns);
// A whole token count in [1, kMaxTokensPerValue]; a problem naming `field`
// (and `kind`: "prompt" or "output") or "".
std::string parse_token_count(std::string_view text, const char* field, const char* kind,
                              int64_t& out);
// The prompt and output counts of a CSV record (columns.input/.output, named
// input_name/output_name in problems); CSV traces carry no hash ids. A
// problem or "".
std::string parse_token_columns(const std::vector<std::string_view>& cells,
                                const CsvColumns& columns, const char* input_name,
                                const char* output_name, TraceRecord& out);
}  // namespace detail

}  // namespace kvsim
