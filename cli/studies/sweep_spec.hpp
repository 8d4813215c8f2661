#pragma once
// A sweep file (configs/sweeps/, SPEC 3 and 11 "Studies"): a base scenario,
// keys set in every variant, a grid of axes (any dotted scenario key), an
// optional sample over numeric ranges, the metrics to collect and, for
// `kvsim search`, an SLO search section. Read strictly (base/reader.hpp):
// unknown keys and bad values are errors with FILE:LINE:COL, exit 2.
//
// Every variant is the base scenario plus `--set` assignments, so every
// variant replays the identical request stream (same seed) unless a varied
// key touches the workload shape or the seed.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/diagnostics.hpp"

namespace kvsim {

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;  // as --set values (YAML scalars as written)
};

struct SweepRange {
  std::string key;
  double lo = 0, hi = 0;
  bool integer = false;  // both bounds written as integers: samples are integers
};

struct SweepSample {
  std::string method = "random";  // random | latin_hypercube
  int64_t count = 0;
  uint64_t seed = 1;
};

// The SLO of `kvsim search` (SPEC 11): percentiles of TTFT and TPOT.
struct SearchSlo {
  std::optional<double> ttft_p99_ms, tpot_p99_ms, ttft_p90_ms, tpot_p90_ms;
};

struct SearchSection {
  std::string rate_key = "workload.arrival.rate_per_s";
  std::vector<double> rates;  // ascending: a candidate that misses at one is not run higher
  SearchSlo slo;
  double target_rate_per_s = 0;  // the load to serve (0: the highest probed rate)
  int64_t max_instances = 64;
  std::string objective = "least_devices";  // least_devices | throughput_per_device
};

struct SweepSpec {
  std::string name;  // file stem unless `name:` says otherwise
  std::string file;
  std::string base;               // resolved scenario path
  std::vector<std::string> sets;  // `set:` applied to every variant
  std::vector<SweepAxis> grid;
  std::vector<SweepRange> ranges;
  std::optional<SweepSample> sample;
  std::vector<std::string> metrics;
  std::optional<SearchSection> search;
  // Where each key of set/grid/ranges was written, to point variant load
  // errors back at the sweep file instead of at `--set`.
  std::map<std::string, config::Location> key_locations;
  config::Location grid_location;  // the `grid:` (or `ranges:`) key, for its size
};

// The most variants a sweep or search expands: each is loaded once before
// any runs and listed in every report, so a grid past this is refused at
// its `grid:` key rather than exhausting memory (split it into sweeps).
constexpr size_t kMaxSweepVariants = 100000;
// A grid this large is announced before its variants are loaded.
constexpr size_t kAnnouncedSweepVariants = 1000;

// The number of variants (axis sizes and samples multiplied, overflow
// checked). Throws config::ConfigError above kMaxSweepVariants.
size_t sweep_variant_count(const SweepSpec& spec);

// The metrics collected when the file names none.
const std::vector<std::string>& default_sweep_metrics();

// Reads a sweep file. `allow_search`: whether a `search:` section is allowed
// (kvsim search) or an error (kvsim sweep). Throws config::ConfigError.
SweepSpec load_sweep(const std::string& path, bool allow_search);

struct SweepVariant {
  size_t index = 0;
  std::string label;                     // "kv_cache.block_size=16 parallel.tensor=2"
  std::vector<std::string> axis_values;  // one per grid axis then per range
  std::vector<std::string> sets;         // spec.sets then this variant's assignments
};

// Grid (first axis outermost) x samples (inner), in a fixed order. Throws
// as sweep_variant_count does.
std::vector<SweepVariant> expand_sweep(const SweepSpec& spec);

// Names of the columns of axis_values: grid keys then range keys.
std::vector<std::string> sweep_axis_keys(const SweepSpec& spec);

// Points of `count` samples over `ranges` (one vector of values per sample):
// random is uniform; latin_hypercube puts exactly one sample in each of
// `count` equal strata of every range. Deterministic for a seed on every
// platform (own generator, no std:: distributions).
std::vector<std::vector<double>> sample_ranges(const std::vector<SweepRange>& ranges,
                                               const SweepSample& sample);

// A number as a --set value: integers without a decimal point, others in
// the shortest form that reads back exactly.
std::string format_set_value(double v, bool integer);

// Moves diagnostics located at `--set KEY` to where KEY is written in the
// sweep file, so a bad grid value reads FILE:LINE:COL.
config::ConfigError relocate_to_sweep(const SweepSpec& spec, const config::ConfigError& e);

}  // namespace kvsim
