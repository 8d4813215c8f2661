#include "cli/studies/sweep_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <set>

#include "base/checked_math.hpp"
#include "base/reader.hpp"
#include "sim/core/metrics.hpp"
#include "sim/scenario/config_ref.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {
namespace {
namespace fs = std::filesystem;
using config::Location;
using config::MapReader;
using config::Node;

Location key_location(const YAML::Node& key, const std::string& file) {
  const YAML::Mark m = key.Mark();
  if (m.is_null()) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

// A scenario path relative to the sweep file, else a name under
// configs/scenarios/ (as devices and models resolve, SPEC 4b).
std::string resolve_base(const Node& node, const std::string& text, const std::string& file) {
  // error_code forms: a name the filesystem cannot even look up (too long,
  // say) is a base that does not exist, reported here at its line.
  std::error_code ec;
  const fs::path rel = fs::path(file).parent_path() / text;
  if (fs::is_regular_file(rel, ec)) return rel.lexically_normal().string();
  if (fs::is_regular_file(text, ec)) return text;
  const std::string dir = find_configs_dir(file);
  const fs::path named = fs::path(dir) / "scenarios" / (text + ".yaml");
  if (fs::is_regular_file(named, ec)) return named.string();
  const auto names = list_config_names(dir, "scenarios");
  std::string allowed = "a scenario path (relative to the sweep file) or one of:";
  for (const auto& n : names) allowed += " " + n;
  node.error(fmt::format("no scenario '{}'", text), allowed);
  return {};
}

// A device or model path in a sweep file is relative to the file, as its
// `base:` is (the lookup of sim/scenario/config_ref.hpp); names stay names.
std::string sweep_value(const std::string& key, const std::string& value, const std::string& file) {
  if ((key != "model" && key != "device") || !looks_like_config_path(value)) return value;
  return path_beside(value, file);
}

// The keys of a map whose keys are dotted scenario paths (set, grid, ranges):
// MapReader declares fixed keys, these are free, so they are walked here.
template <typename Fn>
void each_dotted_key(const Node& map, const std::string& file, SweepSpec& spec, Fn&& fn) {
  if (!map.defined()) return;
  if (!map.is_map()) {
    map.error("expected a map of dotted scenario keys", "key.path: value");
    return;
  }
  for (const auto& kv : map.raw()) {
    const std::string key = kv.first.as<std::string>();
    spec.key_locations[key] = key_location(kv.first, file);
    fn(key, Node(kv.second, map.path() + "." + key, file, &map.context()));
  }
}

void read_search(MapReader& top, SweepSpec& spec, bool allow) {
  if (!top.has("search")) return;
  const Node node = top.child("search");
  if (!allow) {
    node.error("a search section belongs to `kvsim search`", "run `kvsim search FILE`");
    return;
  }
  MapReader r(node);
  SearchSection s;
  s.rate_key = r.string("rate_key", s.rate_key);
  for (const Node& item : r.child("rates").items())
    if (auto v = item.as_double(1e-9, 1e9)) s.rates.push_back(*v);
  if (s.rates.empty() || !std::is_sorted(s.rates.begin(), s.rates.end()) ||
      std::adjacent_find(s.rates.begin(), s.rates.end()) != s.rates.end())
    r.child("rates").error("expected a non-empty list of strictly ascending rates", "[1, 2, 4, 8]");
  s.target_rate_per_s = r.number("target_rate_per_s", 0.0, 0.0, 1e9);
  s.max_instances = r.integer("max_instances", s.max_instances, 1, 1 << 20);
  s.objective = r.choice("objective", s.objective, {"least_devices", "throughput_per_device"});
  MapReader slo(r.child("slo"));
  const auto bound = [&](const char* key, std::optional<double>& out) {
    if (slo.has(key)) out = slo.number(key, std::nullopt, 1e-9, 1e12);
  };
  bound("ttft_p99_ms", s.slo.ttft_p99_ms);
  bound("tpot_p99_ms", s.slo.tpot_p99_ms);
  bound("ttft_p90_ms", s.slo.ttft_p90_ms);
  bound("tpot_p90_ms", s.slo.tpot_p90_ms);
  if (!s.slo.ttft_p99_ms && !s.slo.tpot_p99_ms && !s.slo.ttft_p90_ms && !s.slo.tpot_p90_ms)
    r.child("slo").error("expected at least one bound",
                         "ttft_p99_ms, tpot_p99_ms, ttft_p90_ms, tpot_p90_ms");
  slo.finish();
  r.finish();
  spec.search = s;
}

}  // namespace

const std::vector<std::string>& default_sweep_metrics() {
  static const std::vector<std::string> keys = {
      "requests.completed",  "requests.rejected",        "throughput.output_tokens_per_s",
      "latency_ms.ttft.p50", "latency_ms.ttft.p99",      "latency_ms.tpot.p50",
      "latency_ms.tpot.p99", "kv_cache.peak_used_bytes", "kv_cache.bytes_moved",
  };
  return keys;
}

SweepSpec load_sweep(const std::string& path, bool allow_search) {
  config::LoadContext ctx;
  const YAML::Node root = config::load_file(path, ctx);
  ctx.diagnostics.throw_if_any();
  SweepSpec spec;
  spec.file = path;
  MapReader top(Node(root, "", path, &ctx));
  spec.name = top.string("name", fs::path(path).stem().string());
  const Node base = top.child("base");
  if (const auto text = base.as_string()) spec.base = resolve_base(base, *text, path);
  // Variants are not regressions: the base's `expect` bounds describe the
  // base alone, so they are dropped rather than failing most variants.
  spec.sets.push_back("expect={}");

  each_dotted_key(top.child("set"), path, spec, [&](const std::string& key, const Node& v) {
    if (!v.is_scalar()) return v.error("expected a scalar value", "a number, word or string");
    spec.sets.push_back(key + "=" + sweep_value(key, v.raw().Scalar(), path));
  });
  spec.grid_location = top.has("grid")     ? top.child("grid").location()
                       : top.has("ranges") ? top.child("ranges").location()
                                           : Location{path, 1, 1};
  each_dotted_key(top.child("grid"), path, spec, [&](const std::string& key, const Node& v) {
    SweepAxis axis{key, {}};
    for (const Node& item : v.items()) {
      if (!item.is_scalar())
        item.error("expected a scalar value", "a number, word or string");
      else
        axis.values.push_back(sweep_value(key, item.raw().Scalar(), path));
    }
    if (v.is_sequence() && axis.values.empty()) v.error("expected at least one value", "[a, b]");
    spec.grid.push_back(std::move(axis));
  });
  each_dotted_key(top.child("ranges"), path, spec, [&](const std::string& key, const Node& v) {
    const auto items = v.items();
    if (items.size() != 2) return v.error("expected [low, high]", "[1, 8]");
    SweepRange r{key, 0, 0, true};
    const auto lo = items[0].as_double(-1e18, 1e18), hi = items[1].as_double(-1e18, 1e18);
    if (!lo || !hi) return;
    if (*hi < *lo) return v.error("high is below low", "[low, high] with low <= high");
    for (const Node& i : items)
      r.integer = r.integer && i.raw().Scalar().find_first_of(".eE") == std::string::npos;
    r.lo = *lo;
    r.hi = *hi;
    spec.ranges.push_back(r);
  });
  if (top.has("sample")) {
    MapReader s(top.child("sample"));
    SweepSample sample;
    sample.method = s.choice("method", sample.method, {"random", "latin_hypercube"});
    sample.count = s.integer("count", std::nullopt, 1, 100000);
    sample.seed =
        static_cast<uint64_t>(s.integer("seed", 1, 0, std::numeric_limits<int64_t>::max()));
    s.finish();
    spec.sample = sample;
    if (spec.ranges.empty())
      top.child("sample").error("a sample needs `ranges:` to draw from", "ranges: {key: [lo, hi]}");
  } else if (!spec.ranges.empty()) {
    top.child("ranges").error("ranges are drawn by a `sample:`",
                              "sample: {method: random, count: N}");
  }

  // sim.wall_s is the host's time: it would make sweep.csv differ run to run.
  std::vector<std::string> known = metric_key_names();
  std::erase(known, "sim.wall_s");
  if (top.has("metrics")) {
    for (const Node& item : top.child("metrics").items()) {
      const auto key = item.as_string();
      if (!key) continue;
      if (std::find(known.begin(), known.end(), *key) == known.end()) {
        const std::string near = config::closest_match(*key, known);
        item.error(fmt::format("unknown metric '{}'{}", *key,
                               near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)),
                   "a dotted numeric key of metrics.json (kvsim check lists them)");
      } else {
        spec.metrics.push_back(*key);
      }
    }
  } else {
    spec.metrics = default_sweep_metrics();
  }
  read_search(top, spec, allow_search);
  if (spec.grid.empty() && spec.ranges.empty() && !spec.search)
    top.child("grid").error("a sweep needs a grid or ranges", "grid: {key.path: [v1, v2]}");
  top.finish();
  ctx.diagnostics.throw_if_any();
  return spec;
}

std::vector<std::string> sweep_axis_keys(const SweepSpec& spec) {
  std::vector<std::string> keys;
  for (const auto& a : spec.grid) keys.push_back(a.key);
  for (const auto& r : spec.ranges) keys.push_back(r.key);
  return keys;
}

std::string format_set_value(double v, bool integer) {
  if (integer) return fmt::format("{}", static_cast<int64_t>(std::llround(v)));
  return fmt::format("{}", v);
}

size_t sweep_variant_count(const SweepSpec& spec) {
  int64_t count = 1;
  double approx = 1;  // for the message, when the count itself overflows
  std::string product;
  bool overflow = false;
  const auto times = [&](size_t n, const std::string& what) {
    approx *= static_cast<double>(n);
    const auto next = checked_mul(count, static_cast<int64_t>(n));
    overflow = overflow || !next || *next > static_cast<int64_t>(kMaxSweepVariants);
    if (next) count = *next;
    product += (product.empty() ? "" : " x ") + fmt::format("{} {}", n, what);
  };
  for (const auto& axis : spec.grid) times(axis.values.size(), axis.key);
  if (spec.sample) times(static_cast<size_t>(spec.sample->count), "samples");
  if (overflow) {
    config::Diagnostic d;
    d.where = spec.grid_location;
    d.key_path = spec.grid.empty() ? "sample.count" : "grid";
    d.problem = fmt::format("{:.0f} variants ({}), more than a sweep runs", approx, product);
    d.allowed =
        fmt::format("at most {} variants; split the grid into several sweeps", kMaxSweepVariants);
    throw config::ConfigError({d});
  }
  return static_cast<size_t>(count);
}

std::vector<SweepVariant> expand_sweep(const SweepSpec& spec) {
  sweep_variant_count(spec);
  std::vector<std::vector<std::string>> points(1);
  for (const auto& axis : spec.grid) {
    std::vector<std::vector<std::string>> next;
    for (const auto& p : points)
      for (const auto& v : axis.values) {
        next.push_back(p);
        next.back().push_back(v);
      }
    points = std::move(next);
  }
  std::vector<std::vector<std::string>> samples(1);
  if (spec.sample) {
    samples.clear();
    for (const auto& s : sample_ranges(spec.ranges, *spec.sample)) {
      std::vector<std::string> text;
      for (size_t i = 0; i < s.size(); ++i)
        text.push_back(format_set_value(s[i], spec.ranges[i].integer));
      samples.push_back(std::move(text));
    }
  }
  const auto keys = sweep_axis_keys(spec);
  std::vector<SweepVariant> out;
  for (const auto& p : points)
    for (const auto& s : samples) {
      SweepVariant v;
      v.index = out.size();
      v.axis_values = p;
      v.axis_values.insert(v.axis_values.end(), s.begin(), s.end());
      v.sets = spec.sets;
      for (size_t i = 0; i < keys.size(); ++i) {
        const std::string a = keys[i] + "=" + v.axis_values[i];
        v.sets.push_back(a);
        if (!v.label.empty()) v.label += ' ';
        v.label += a;
      }
      if (v.label.empty()) v.label = "base";
      out.push_back(std::move(v));
    }
  return out;
}

config::ConfigError relocate_to_sweep(const SweepSpec& spec, const config::ConfigError& e) {
  std::vector<config::Diagnostic> out = e.diagnostics();
  for (auto& d : out) {
    if (d.where.file.rfind("--set ", 0) != 0) continue;
    const auto it = spec.key_locations.find(d.where.file.substr(6));
    if (it != spec.key_locations.end()) d.where = it->second;
  }
  return config::ConfigError(std::move(out));
}

}  // namespace kvsim
