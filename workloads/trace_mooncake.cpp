// Mooncake FAST'25 traces (kvcache-ai/Mooncake, FAST25-release/traces): one
// JSON object per line, {"timestamp": ms from the trace start, "input_length",
// "output_length", "hash_ids": [one id per 512-token block of the input]}.
// An id stands for its block and every block before it (a prefix hash), so two
// requests share a cached prefix exactly as long as their leading ids agree.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "workloads/trace_format.hpp"

namespace kvsim::detail {
namespace {

using nlohmann::json;

LineResult malformed(std::string problem) {
  return {LineKind::malformed, std::move(problem)};
}

// A line of this format is one flat object with one list in it.
constexpr int kMaxNesting = 8;

// Parses a line as nlohmann would, but refuses what it accepts silently: a
// field written twice (its last value would win) and deep nesting (a message
// quoting such a value would recurse). Returns a discarded value and the
// reason on either.
json parse_line_json(std::string_view line, std::string& problem) {
  std::vector<std::set<std::string>> fields_of_open_objects;
  int open = 0;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        fields_of_open_objects.emplace_back();
        [[fallthrough]];
      case json::parse_event_t::array_start:
        if (++open > kMaxNesting) {
          if (problem.empty()) problem = fmt::format("nested deeper than {} levels", kMaxNesting);
          return false;  // not kept: a deep value is never built
        }
        break;
      case json::parse_event_t::object_end:
        if (!fields_of_open_objects.empty()) fields_of_open_objects.pop_back();
        [[fallthrough]];
      case json::parse_event_t::array_end:
        --open;
        break;
      case json::parse_event_t::key:
        if (!fields_of_open_objects.empty() && parsed.is_string() &&
            !fields_of_open_objects.back().insert(parsed.get<std::string>()).second &&
            problem.empty())
          problem = fmt::format("the field {} is written twice", parsed.dump());
        break;
      default:
        break;
    }
    return true;
  };
  json value = json::parse(line.begin(), line.end(), check, /*allow_exceptions=*/false);
  if (value.is_discarded()) problem = "not valid JSON";
  return problem.empty() ? value : json(json::value_t::discarded);
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
  std::string problem;
  const json object = parse_line_json(line, problem);
  if (!problem.empty()) return malformed(problem);
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
