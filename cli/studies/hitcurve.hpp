#pragma once
// `kvsim hitcurve`: the prefix-cache hit rate of a scenario's
// request stream as a function of cache capacity, from cache-only replays
// (sim/cache/cache_replay.hpp), like Figure 9 of the Mooncake paper. Written
// as hitcurve.csv, hitcurve.json, hitcurve.md and hitcurve.html (with a
// gnuplot chart), each stating the hit definition.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cache/cache_replay.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

// Written into every output.
extern const char* const kHitDefinition;

struct HitCurvePoint {
  int64_t capacity_tokens = 0;  // as asked
  int64_t cache_blocks = 0;     // floor(capacity / block_size)
  CacheReplayResult replay;
};

struct HitCurve {
  std::string scenario, policy, workload;
  std::string cache_meaning;  // which pool the capacity sizes
  int64_t block_size = 0;
  uint64_t seed = 0;
  std::vector<HitCurvePoint> points;  // in the order the capacities were given
  // Whether the hit rate never falls as the capacity grows (LRU caches of a
  // fixed stream should be; a point that breaks it is worth a look).
  bool monotone() const;
};

// Replays the scenario's stream once per capacity (tokens, >= 1) through a
// fresh policy of the scenario's kind whose reusable cache holds
// floor(capacity / block_size) blocks: the whole pool for `paged`, the chunk
// pool for `chunk_lru` (its main pool keeps the scenario's size). Throws
// std::invalid_argument for a policy with no block cache to size.
HitCurve compute_hit_curve(const ScenarioSpec& spec, const std::vector<int64_t>& capacities);

std::string hit_curve_csv(const HitCurve& curve);
nlohmann::ordered_json hit_curve_json(const HitCurve& curve);
std::string hit_curve_markdown(const HitCurve& curve);
// Self-contained page; the chart is omitted (with a note) without gnuplot.
std::string hit_curve_html(const HitCurve& curve);

// Writes the four files into `out`, which appears whole or not at all.
void write_hit_curve(const HitCurve& curve, const std::string& out, bool force = false);

}  // namespace kvsim
