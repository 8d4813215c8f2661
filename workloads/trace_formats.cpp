// The table of trace formats and the helpers the CSV formats share.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "workloads/distribution.hpp"
#include "workloads/trace_format.hpp"

namespace kvsim {

const std::vector<TraceFormat>& trace_format_table() {
  // Every format `workload.trace.format` accepts, sorted by name. Adding one:
  // write its line parser in its own trace_*.cpp and list it here; a test
  // compares trace_formats() with the documented names.
  static const std::vector<TraceFormat> table = {
      {"agentic",
       "agent sessions, JSONL: Mooncake fields + session_id, parent_session_id, branch_call, "
       "timestamp (root's first call) or delay ms after the dependency completes",
       nullptr, nullptr, detail::parse_agentic_line},
      {"azure",
       "Azure LLM inference trace 2023 (TIMESTAMP,ContextTokens,GeneratedTokens; wall clock)",
       "TIMESTAMP,ContextTokens,GeneratedTokens", detail::read_azure_header,
       detail::parse_azure_line},
      {"mooncake",
       "Mooncake FAST'25 JSONL (timestamp ms, input_length, output_length, hash_ids per 512 "
       "tokens)",
       nullptr, nullptr, detail::parse_mooncake_line},
      {"prefill_decode_csv",
       "CSV arrived_at (s),num_prefill_tokens,num_decode_tokens (Vidur / Splitwise traces)",
       "arrived_at,num_prefill_tokens,num_decode_tokens", detail::read_prefill_decode_header,
       detail::parse_prefill_decode_line},
  };
  return table;
}

const TraceFormat* find_trace_format(std::string_view name) {
  for (const TraceFormat& f : trace_format_table())
    if (name == f.name) return &f;
  return nullptr;
}

std::vector<std::string> trace_formats() {
  std::vector<std::string> names;
  for (const TraceFormat& f : trace_format_table()) names.emplace_back(f.name);
  std::sort(names.begin(), names.end());
  return names;
}

namespace detail {
std::string_view trim_cell(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_csv(std::string_view line) {
  std::vector<std::string_view> cells;
  size_t begin = 0;
  while (true) {
    const size_t comma = line.find(',', begin);
    cells.push_back(
        trim_cell(line.substr(begin, comma == std::string_view::npos ? line.npos : comma - begin)));
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return cells;
}

std::string find_columns(std::string_view header, const char* time_name, const char* input_name,
                         const char* output_name, CsvColumns& columns) {
  const std::vector<std::string_view> cells = split_csv(header);
  columns = CsvColumns{};
  columns.count = static_cast<int>(cells.size());
  for (int i = 0; i < columns.count; ++i) {
    const std::string_view c = cells[static_cast<size_t>(i)];
    if (c == time_name) columns.time = i;
    if (c == input_name) columns.input = i;
    if (c == output_name) columns.output = i;
  }
  std::vector<std::string> missing;
  if (columns.time < 0) missing.emplace_back(time_name);
  if (columns.input < 0) missing.emplace_back(input_name);
  if (columns.output < 0) missing.emplace_back(output_name);
  if (missing.empty()) return {};
  return fmt::format("the header '{}' lacks the column{} {}", trim_cell(header),
                     missing.size() > 1 ? "s" : "", fmt::join(missing, ", "));
}

std::string parse_token_count(std::string_view text, const char* field, const char* kind,
                              int64_t& out) {
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty()) return fmt::format("{} is empty", field);
  if (ec != std::errc() || ptr != text.data() + text.size())
    return fmt::format("{} '{}' is not a whole number of tokens", field, text);
  if (value < 1)
    return fmt::format("{} is {}: a request needs at least 1 {} token", field, value, kind);
  if (value > kMaxTokensPerValue)
    return fmt::format("{} is {}: beyond the {} tokens kvsim accepts per request", field, value,
                       kMaxTokensPerValue);
  out = value;
  return {};
}

std::string parse_token_columns(const std::vector<std::string_view>& cells,
                                const CsvColumns& columns, const char* input_name,
                                const char* output_name, TraceRecord& out) {
  if (auto p = parse_token_count(cells[static_cast<size_t>(columns.input)], input_name, "prompt",
                                 out.input_tokens);
      !p.empty())
    return p;
  if (auto p = parse_token_count(cells[static_cast<size_t>(columns.output)], output_name, "output",
                                 out.output_tokens);
      !p.empty())
    return p;
  out.hash_ids.clear();
  return {};
}

}  // namespace detail
}  // namespace kvsim
