// Mooncake FAST'25 traces (kvcache-ai/Mooncake, FAST25-release/traces): one
// JSON object per line, {"timestamp": ms from the trace start, "input_length",
// "output_length", "hash_ids": [one id per 512-token block of the input]}.
// An id stands for its block and every block before it (a prefix hash), so two
// requests share a cached prefix exactly as long as their leading ids agree.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "workloads/trace_format.hpp"

namespace kvsim::detail {
namespace {

using nlohmann::json;

LineResult malformed(std::string problem) {
  return {LineKind::malformed, std::move(problem)};
}

// A token count field as the shared CSV rule checks it (>= 1, bounded).
std::string read_count(const json& object, const char* field, const char* kind, int64_t& out) {
  const auto it = object.find(field);
  if (it == object.end()) return fmt::format("the field \"{}\" is missing", field);
  if (!it->is_number_integer())
    return fmt::format("\"{}\" is {}, not a whole number", field, it->dump());
  return parse_token_count(std::to_string(it->get<int64_t>()), field, kind, out);
}

}  // namespace

LineResult parse_mooncake_line(std::string_view line, const CsvColumns& columns, TraceRecord& out) {
  (void)columns;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return {LineKind::blank, {}};
  const json object = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return malformed("not valid JSON");
  if (!object.is_object()) return malformed("not a JSON object");

  const auto ts = object.find("timestamp");
  if (ts == object.end()) return malformed("the field \"timestamp\" is missing");
  if (!ts->is_number())
    return malformed(fmt::format("\"timestamp\" is {}, not a number", ts->dump()));
  const double ms = ts->get<double>();
  if (!(ms >= 0) || ms > 1e12)
    return malformed(
        fmt::format("\"timestamp\" is {}: milliseconds from the trace start, >= 0", ts->dump()));
  out.time = static_cast<TimeNs>(std::llround(ms * 1e6));

  if (auto p = read_count(object, "input_length", "prompt", out.input_tokens); !p.empty())
    return malformed(p);
  if (auto p = read_count(object, "output_length", "output", out.output_tokens); !p.empty())
    return malformed(p);

  const auto ids = object.find("hash_ids");
  if (ids == object.end()) return malformed("the field \"hash_ids\" is missing");
  if (!ids->is_array()) return malformed("\"hash_ids\" is not a list");
  out.hash_ids.clear();
  for (const json& id : *ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      return malformed(fmt::format("\"hash_ids\" holds {}, not a whole number >= 0", id.dump()));
    out.hash_ids.push_back(id.get<int64_t>());
  }
  // One id per 512-token block (the trace's own invariant): a request whose
  // ids do not cover its input cannot be given content.
  const int64_t expected = (out.input_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
  if (static_cast<int64_t>(out.hash_ids.size()) != expected)
    return malformed(fmt::format(
        "\"hash_ids\" has {} ids but input_length {} needs ceil({} / {}) = {}", out.hash_ids.size(),
        out.input_tokens, out.input_tokens, kMooncakeBlockTokens, expected));
  return {};
}

}  // namespace kvsim::detail
