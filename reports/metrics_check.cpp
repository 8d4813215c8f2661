#include "reports/metrics_check.hpp"

#include "base/input_file.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/diagnostics.hpp"
#include "reports/input_error.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

std::string show(const nlohmann::ordered_json* v) {
  if (v == nullptr) return "(missing)";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number_float()) return fmt::format("{}", v->get<double>());
  return v->dump();
}

bool matches(const std::vector<std::string>& patterns, const std::string& key) {
  if (patterns.empty()) return true;
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return fnmatch(p.c_str(), key.c_str(), 0) == 0; });
}

}  // namespace

MetricsCheckResult check_metrics(const nlohmann::ordered_json& metrics,
                                 const nlohmann::ordered_json& baseline,
                                 const MetricsCheckOptions& options) {
  // The baseline's keys in its order, then keys only the new file has.
  std::vector<std::string> keys = metric_leaf_keys(baseline, /*numeric_only=*/false);
  for (const auto& k : metric_leaf_keys(metrics, /*numeric_only=*/false))
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);

  MetricsCheckResult r;
  for (const auto& key : keys) {
    if (std::find(options.skipped_keys.begin(), options.skipped_keys.end(), key) !=
        options.skipped_keys.end()) {
      r.skipped.push_back(key);
      continue;
    }
    if (!options.ignored_patterns.empty() && matches(options.ignored_patterns, key)) {
      ++r.keys_ignored;
      continue;
    }
    if (!matches(options.key_patterns, key)) continue;
    ++r.keys_compared;
    const auto* v = find_metric(metrics, key);
    const auto* b = find_metric(baseline, key);
    MetricDifference d{key, show(v), show(b), std::nullopt, std::nullopt, false};
    if (v != nullptr && b != nullptr && v->is_number() && b->is_number()) {
      const double x = v->get<double>();
      const double y = b->get<double>();
      if (x == y) continue;
      d.abs_diff = x - y;
      if (y != 0) d.rel_diff = (x - y) / std::fabs(y);
      const double tol = std::max(options.abs_tol, options.rel_tol * std::fabs(y));
      d.beyond_tolerance = std::fabs(x - y) > tol;
    } else {
      if (v != nullptr && b != nullptr && *v == *b) continue;
      d.beyond_tolerance = true;  // missing on one side, a type change, or a string change
    }
    r.differences.push_back(std::move(d));
  }
  return r;
}

bool MetricsCheckResult::passed() const {
  return std::none_of(differences.begin(), differences.end(),
                      [](const MetricDifference& d) { return d.beyond_tolerance; });
}

std::string MetricsCheckResult::format(const MetricsCheckOptions& options) const {
  std::string out;
  int failing = 0;
  for (const auto& d : differences) {
    failing += d.beyond_tolerance ? 1 : 0;
    std::string delta;
    if (d.abs_diff) {
      delta = fmt::format(" ({:+g}", *d.abs_diff);
      delta += d.rel_diff ? fmt::format(", {:+.3f}%)", *d.rel_diff * 100.0) : ")";
    }
    out += fmt::format("{} {}: {} vs baseline {}{}\n", d.beyond_tolerance ? "FAIL" : "ok  ", d.key,
                       d.value, d.baseline, delta);
  }
  std::string skipped_text;
  for (const auto& s : skipped) skipped_text += (skipped_text.empty() ? "" : ", ") + s;
  out += fmt::format(
      "check: {} keys compared, {} differ, {} beyond tolerance (rel-tol {}, abs-tol {}){}{}\n",
      keys_compared, differences.size(), failing, options.rel_tol, options.abs_tol,
      skipped_text.empty() ? "" : "; skipped " + skipped_text + " (host time, not deterministic)",
      keys_ignored == 0 ? "" : fmt::format("; {} provenance keys not compared", keys_ignored));
  return out;
}

nlohmann::ordered_json read_metrics_file(const std::string& path) {
  nlohmann::ordered_json doc = read_json_file(path);
  if (!doc.is_object())
    throw_input_error(path, "", "is not a JSON object of metrics",
                      "a metrics.json written by kvsim run");
  return doc;
}

nlohmann::ordered_json read_json_file(const std::string& path) {
  // A directory or a device (/dev/zero never ends) is refused unread.
  std::string s;
  if (const std::string problem = read_input_file(path, s); !problem.empty())
    throw_input_error(path, "",
                      problem.find("not a regular file") != std::string::npos
                          ? problem
                          : "cannot read the file: " + problem,
                      "a metrics.json file");
  // A metrics.json is a few levels deep; a document nested far deeper would
  // only exhaust the stack of the code that walks it (a crash, not an error).
  constexpr int kMaxDepth = 64;
  bool too_deep = false;
  const auto guard = [&](int depth, nlohmann::json::parse_event_t, nlohmann::ordered_json&) {
    if (depth > kMaxDepth) too_deep = true;
    return !too_deep;
  };
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(s, guard);
  } catch (const nlohmann::json::parse_error& e) {
    // Byte offset -> line and column, so the error points where an editor can go.
    int line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < s.size(); ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    config::Diagnostics d;
    d.error({path, line, col}, "", "invalid JSON", "a metrics.json written by kvsim run");
    d.throw_if_any();
    throw;
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double (1e400): the library names the token, not
    // its offset, so the token's first occurrence locates it.
    const std::string what = e.what();
    const size_t open = what.find('\'');
    const size_t close = what.rfind('\'');
    const std::string token =
        open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
    int line = 1, col = 1;
    const size_t at = token.empty() ? std::string::npos : s.find(token);
    for (size_t i = 0; at != std::string::npos && i < at; ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    config::Diagnostics d;
    d.error({path, line, col}, "",
            fmt::format("number '{}' is beyond the range of a double", token),
            "a metrics.json written by kvsim run");
    d.throw_if_any();
    throw;
  }
  if (too_deep)
    throw_input_error(path, "", fmt::format("JSON nested deeper than {} levels", kMaxDepth),
                      "a metrics.json written by kvsim run");
  return doc;
}

}  // namespace kvsim
