#pragma once
// `kvsim compare SCENARIO --vary KEY=V1,V2 [--vary ...]` (SPEC 3/9): a grid of
// variants of one scenario, each applied through the same `--set` mechanism
// (load_scenario(path, overrides)), so every variant replays the identical
// request stream unless a varied key touches `workload` or `seed`. Writes
// compare.json/.csv/.md/.html and one run folder per variant inside one
// output folder that appears whole or not at all.
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "reports/run_series.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {

struct VaryAxis {
  std::string key;
  std::vector<std::string> values;
  // Named variants (--variant): value i stands for the assignments sets[i]
  // instead of key=values[i]. Empty for a --vary axis.
  std::vector<std::vector<std::string>> sets;
};

// "kv_cache.block_size=64,128" -> {key, values}. Throws config::ConfigError
// pointing at --vary.
VaryAxis parse_vary(const std::string& text);

// Every --variant "LABEL: KEY=VALUE[; KEY=VALUE...]" as one axis, key
// "variant", in the order given: variants that differ in several keys at
// once (a policy and its options) without a grid of their products.
// Throws config::ConfigError pointing at --variant on a malformed one or a
// label given twice.
VaryAxis parse_named_variants(const std::vector<std::string>& texts);

struct CompareVariant {
  std::string label;              // "kv_cache.block_size=64 preemption=swap"
  std::string short_label;        // the values only ("swap 64"), for chart labels
  std::string folder;             // folder name inside the compare folder
  std::vector<std::string> sets;  // the --set assignments of this variant
  std::string folder_name;        // its assignments (a named variant's label) joined
};

// The cartesian product, first axis outermost.
std::vector<CompareVariant> expand_variants(const std::vector<VaryAxis>& axes);

// The most variants one compare runs (each is loaded first and run in this
// process, and its folder listed side by side): a larger grid is a sweep's.
constexpr size_t kMaxCompareVariants = 1000;

// Throws config::ConfigError at --vary when a key is varied twice (the
// second would silently override the first in every label) or the grid has
// more than kMaxCompareVariants variants.
void check_vary_axes(const std::vector<VaryAxis>& axes);

// A column of the side-by-side table.
struct CompareColumn {
  std::string key;    // metrics.json key
  std::string title;  // short heading
};
// A variant whose values do not go together (a model that does not fit, a
// tensor size that does not divide its heads: sim/scenario/invalid_combination.hpp).
// It is not run; its row in every table says why.
struct RejectedVariant {
  size_t position = 0;  // its place in the grid (expand_variants order)
  CompareVariant variant;
  std::string reason;  // "model: llama-3.1-405b does not fit on ascend-910b2: ..."
};

struct CompareResult {
  std::string folder;  // final path
  // The variants that ran, in grid order, and what each measured.
  std::vector<CompareVariant> variants;
  std::vector<RunMetrics> metrics;        // per variant
  std::vector<RunSeries> series;          // per variant: what its charts show (bounded)
  std::vector<size_t> positions;          // per variant: its place in the grid
  std::vector<RejectedVariant> rejected;  // in grid order
};

// One line of a side-by-side table in grid order: a variant that ran (its
// index into variants/metrics) or one that was rejected (its reason).
struct CompareRow {
  const CompareVariant* variant = nullptr;
  std::optional<size_t> ran;            // index into CompareResult::variants
  const std::string* reason = nullptr;  // set when not run
};
std::vector<CompareRow> compare_rows(const CompareResult& r);

// The columns a compare shows: those whose key at least one variant's
// metrics.json has (a section written only for some runs, such as
// reuse_quality, is left out when no variant wrote it).
std::vector<CompareColumn> compare_columns(const CompareResult& r);

// Indices into compare_columns(r) of the columns whose values differ most
// between the variants (largest max/min ratio, a column with a zero and a
// non-zero value first), at most `count`, none whose values are all equal.
std::vector<size_t> most_different_columns(const CompareResult& r, size_t count);

// Loads every variant first (bad input fails before anything runs), then
// runs them in order. A variant whose values do not go together is a
// rejected row and the others run; when every variant is rejected the first
// one's InvalidCombination is thrown (nothing to compare). Any other load
// error is bad input of the whole grid (config::ConfigError). `progress`
// gets (grid index, label) before each run.
CompareResult run_compare(const std::string& scenario_path, const std::vector<std::string>& sets,
                          const std::vector<VaryAxis>& axes, const std::string& out,
                          const std::function<void(size_t, const std::string&)>& progress = {},
                          bool force = false);

}  // namespace kvsim
