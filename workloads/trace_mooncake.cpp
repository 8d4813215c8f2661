// Mooncake FAST'25 traces (kvcache-ai/Mooncake, FAST25-release/traces): one
// JSON object per line, {"timestamp": ms from the trace start, "input_length",
// "output_length", "hash_ids": [one id per 512-token block of the input]}.
// An id stands for its block and every block before it (a prefix hash), so two
// requests share a cached prefix exactly as long as their leading ids agree.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "workloads/distribution.hpp"
#include "workloads/mooncake_record_fields.hpp"
#include "workloads/trace_format.hpp"

namespace kvsim::detail {
namespace {

using nlohmann::json;

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
        if (++open > kMaxTraceNesting) {
          if (problem.empty())
            problem = fmt::format("nested deeper than {} levels", kMaxTraceNesting);
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

// The shape every line of the published traces has, read without building
// a JSON value: one flat object holding exactly the four fields, each once,
// in any order; numbers written as plain digits (the timestamp may carry a
// fraction) and within the ranges the full reader accepts. Returns false on
// anything else (an escape, an exponent, a sign, another field, a value out
// of range) without deciding anything: the full reader below then reads the
// line, so what a line means and every message about it come from one place.
// Integers of up to 18 digits fit int64 whichever way nlohmann would store
// them, and a fraction is converted correctly rounded, as strtod does.
class FlatRecordScanner {
 public:
  explicit FlatRecordScanner(std::string_view line)
      : p_(line.data()), end_(line.data() + line.size()) {}

  bool scan(TraceRecord& out) {
    enum Field { kTimestamp = 1, kInput = 2, kOutput = 4, kHashIds = 8 };
    int seen = 0;
    double ms = 0;
    int64_t input = 0, output = 0;
    if (!expect('{')) return false;
    for (;;) {
      std::string_view key;
      if (!read_key(key) || !expect(':')) return false;
      int field = 0;
      bool ok = false;
      if (key == "timestamp") {
        field = kTimestamp;
        ok = read_number(ms);
      } else if (key == "input_length") {
        field = kInput;
        ok = read_whole(input);
      } else if (key == "output_length") {
        field = kOutput;
        ok = read_whole(output);
      } else if (key == "hash_ids") {
        field = kHashIds;
        ok = read_ids(out.hash_ids);
      }
      if (!ok || (seen & field) != 0) return false;
      seen |= field;
      skip_space();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (!expect('}')) return false;
      break;
    }
    skip_space();
    if (p_ != end_ || seen != (kTimestamp | kInput | kOutput | kHashIds)) return false;
    if (!(ms >= 0) || ms > 1e12) return false;
    if (input < 1 || input > kMaxTokensPerValue || output < 1 || output > kMaxTokensPerValue)
      return false;
    if (static_cast<int64_t>(out.hash_ids.size()) !=
        (input + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens)
      return false;
    out.time = static_cast<TimeNs>(std::llround(ms * 1e6));
    out.input_tokens = input;
    out.output_tokens = output;
    return true;
  }

 private:
  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  bool expect(char c) {
    skip_space();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool read_key(std::string_view& key) {
    if (!expect('"')) return false;
    const char* begin = p_;
    while (p_ < end_ && *p_ != '"') {
      if (*p_ == '\\' || static_cast<unsigned char>(*p_) < 0x20) return false;
      ++p_;
    }
    if (p_ == end_) return false;
    key = std::string_view(begin, static_cast<size_t>(p_ - begin));
    ++p_;
    return true;
  }
  // Digits without a sign or a leading zero (JSON), at most 18 of them. Only
  // the first 18 are accumulated (18 digits always fit in int64_t); a longer
  // run is scanned to its end and left to the full parser.
  bool read_digits(int64_t& value) {
    skip_space();
    const char* begin = p_;
    value = 0;
    for (; p_ < end_ && *p_ >= '0' && *p_ <= '9'; ++p_) {
      if (p_ - begin < 18) value = value * 10 + (*p_ - '0');
    }
    const auto n = p_ - begin;
    return n >= 1 && n <= 18 && (n == 1 || *begin != '0');
  }
  bool read_whole(int64_t& value) { return read_digits(value) && !at_number_continuation(); }
  bool read_number(double& value) {
    int64_t whole = 0;
    const char* begin = (skip_space(), p_);
    if (!read_digits(whole)) return false;
    if (p_ < end_ && *p_ == '.') {
      const char* fraction = ++p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      if (p_ == fraction) return false;
      const auto [ptr, ec] = std::from_chars(begin, p_, value);
      if (ec != std::errc() || ptr != p_) return false;
    } else {
      value = static_cast<double>(whole);
    }
    return !at_number_continuation();
  }
  // An exponent or a fraction where a whole number ended: not this shape.
  bool at_number_continuation() const {
    return p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E');
  }
  bool read_ids(std::vector<int64_t>& ids) {
    ids.clear();
    if (!expect('[')) return false;
    skip_space();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    for (;;) {
      int64_t id = 0;
      if (!read_whole(id)) return false;
      ids.push_back(id);
      skip_space();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      return expect(']');
    }
  }

  const char* p_;
  const char* end_;
};

}  // namespace

// A token count field (mooncake_record_fields.hpp) as the shared CSV rule checks it (>= 1,
// bounded).
std::string read_count(const json& object, const char* field, const char* kind, int64_t& out) {
  const auto it = object.find(field);
  if (it == object.end()) return fmt::format("the field \"{}\" is missing", field);
  if (!it->is_number_integer())
    return fmt::format("\"{}\" is {}, not a whole number", field, it->dump());
  return parse_token_count(std::to_string(it->get<int64_t>()), field, kind, out);
}

std::string read_hash_ids(const json& object, int64_t input_tokens, std::vector<int64_t>& ids) {
  const auto it = object.find("hash_ids");
  if (it == object.end()) return "the field \"hash_ids\" is missing";
  if (!it->is_array()) return "\"hash_ids\" is not a list";
  ids.clear();
  for (const json& id : *it) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      return fmt::format("\"hash_ids\" holds {}, not a whole number >= 0", id.dump());
    ids.push_back(id.get<int64_t>());
  }
  // One id per 512-token block (the trace's own invariant): a request whose
  // ids do not cover its input cannot be given content.
  const int64_t expected = (input_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
  if (static_cast<int64_t>(ids.size()) != expected)
    return fmt::format("\"hash_ids\" has {} ids but input_length {} needs ceil({} / {}) = {}",
                       ids.size(), input_tokens, input_tokens, kMooncakeBlockTokens, expected);
  return {};
}

LineResult parse_mooncake_line(std::string_view line, const CsvColumns& columns, TraceRecord& out) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return {LineKind::blank, {}};
  if (FlatRecordScanner(line).scan(out)) return {};
  return parse_mooncake_line_in_full(line, columns, out);
}

LineResult parse_mooncake_line_in_full(std::string_view line, const CsvColumns& columns,
                                       TraceRecord& out) {
  (void)columns;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return {LineKind::blank, {}};
  std::string problem;
  const json object = parse_line_json(line, problem);
  if (!problem.empty()) return malformed_line(problem);
  if (!object.is_object()) return malformed_line("not a JSON object");

  const auto ts = object.find("timestamp");
  if (ts == object.end()) return malformed_line("the field \"timestamp\" is missing");
  if (!ts->is_number())
    return malformed_line(fmt::format("\"timestamp\" is {}, not a number", ts->dump()));
  const double ms = ts->get<double>();
  if (!(ms >= 0) || ms > 1e12)
    return malformed_line(
        fmt::format("\"timestamp\" is {}: milliseconds from the trace start, >= 0", ts->dump()));
  out.time = static_cast<TimeNs>(std::llround(ms * 1e6));

  if (auto p = read_count(object, "input_length", "prompt", out.input_tokens); !p.empty())
    return malformed_line(p);
  if (auto p = read_count(object, "output_length", "output", out.output_tokens); !p.empty())
    return malformed_line(p);

  if (auto p = read_hash_ids(object, out.input_tokens, out.hash_ids); !p.empty())
    return malformed_line(p);
  return {};
}

}  // namespace kvsim::detail
