#pragma once
// `kvsim check METRICS --baseline BASE` (SPEC 3/9): compares two metrics.json
// documents key by key and lists every difference. A difference fails when
// |value - baseline| > max(abs_tol, rel_tol * |baseline|); a key present on one
// side only, or a string key that differs, always fails. sim.wall_s (host
// time, never deterministic) is skipped by default, and so is the
// provenance section (which build and which scenario file wrote the file:
// two builds of one behaviour must still compare equal).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kvsim {

struct MetricsCheckOptions {
  double rel_tol = 0.0;
  double abs_tol = 0.0;
  // Glob patterns (`*` any run of characters, `?` one); empty: every key.
  std::vector<std::string> key_patterns;
  std::vector<std::string> skipped_keys = {"sim.wall_s"};
  // Glob patterns of keys that are not metrics at all.
  std::vector<std::string> ignored_patterns = {"provenance.*"};
};

struct MetricDifference {
  std::string key;
  std::string value, baseline;  // as printed; "(missing)" when absent
  std::optional<double> abs_diff, rel_diff;
  bool beyond_tolerance = false;
};

struct MetricsCheckResult {
  int keys_compared = 0;
  std::vector<std::string> skipped;  // keys skipped by default (present in either file)
  int keys_ignored = 0;              // keys matching ignored_patterns
  std::vector<MetricDifference> differences;
  bool passed() const;
  // One line per difference, then a summary line.
  std::string format(const MetricsCheckOptions& options) const;
};

MetricsCheckResult check_metrics(const nlohmann::ordered_json& metrics,
                                 const nlohmann::ordered_json& baseline,
                                 const MetricsCheckOptions& options);

// Reads a JSON file; throws config::ConfigError (FILE:LINE:COL) when the file
// is missing or is not JSON.
nlohmann::ordered_json read_json_file(const std::string& path);
// read_json_file, and exit 2 unless the document is an object (a metrics.json).
nlohmann::ordered_json read_metrics_file(const std::string& path);

}  // namespace kvsim
