#pragma once
// Distributions of workload quantities: prompt and output lengths, turns per
// session, think times. A YAML map `{dist: NAME, ...params, min:, max:}` picks
// an implementation by name from an explicit table (distribution_registry.cpp);
// every distribution accepts `min`/`max` clamps.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/reader.hpp"
#include "base/units.hpp"
#include "workloads/rng.hpp"

namespace kvsim {

// What a distribution's values measure; decides how its parameters are read.
enum class QuantityKind {
  tokens,    // whole numbers (`mean: 1024`); token counts, turn counts
  duration,  // durations with units (`mean: 10s`), sampled as integer ns
};

// Largest token count any one value may take: bounds memory per request and
// leaves room far above any model context (Llama 4 Scout advertises 10M).
constexpr int64_t kMaxTokensPerValue = int64_t{1} << 26;
// Largest duration parameter (about 11.6 days): far above any think time,
// far below int64 ns overflow when summed over a run.
constexpr TimeNs kMaxDurationValue = 1'000'000 * kNsPerS;

// How one quantity is read and validated.
struct QuantityRules {
  QuantityKind kind = QuantityKind::tokens;
  // Smallest meaningful value: the default `min` clamp, and a user `min` may
  // not go below it (1 for a prompt or an output, 0 for a think time).
  int64_t floor = 0;
  // Why the floor exists, for the error message ("a prompt needs at least 1 token").
  std::string floor_reason;
};

// A distribution before clamping. draw() returns tokens or nanoseconds as a
// real number; ClampedDistribution rounds and clamps it.
class Distribution {
 public:
  virtual ~Distribution() = default;
  virtual std::string_view name() const = 0;
  // One draw. Must consume randomness only from `rng` (determinism).
  virtual double draw(Rng& rng) const = 0;
  // Mean of the unclamped distribution (documentation and tests).
  virtual double mean() const = 0;
  // Smallest and largest values draw() can return (+inf when unbounded).
  virtual double support_min() const = 0;
  virtual double support_max() const = 0;
};

// A distribution with its `min`/`max` clamps: what a workload spec holds.
class ClampedDistribution {
 public:
  ClampedDistribution(std::shared_ptr<const Distribution> distribution, int64_t min, int64_t max);

  // One value: draw, round to the nearest integer, clamp into [min, max].
  int64_t sample(Rng& rng) const;
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  // Tight bounds of sample(): the clamps narrowed by the support.
  int64_t lower_bound() const;
  int64_t upper_bound() const;
  const Distribution& distribution() const { return *distribution_; }
  std::string_view name() const { return distribution_->name(); }

 private:
  std::shared_ptr<const Distribution> distribution_;
  int64_t min_;
  int64_t max_;
};

// Parses a distribution map at `node`, or a bare value, which is short for
// `{dist: constant, value: V}` (`output_tokens: 128`, `think_time: 5s`).
// Errors go to node.context().diagnostics; returns nullopt when there was any.
std::optional<ClampedDistribution> parse_distribution(const config::Node& node,
                                                      const QuantityRules& rules);

// Names accepted by `dist:`, sorted.
std::vector<std::string> length_distributions();

}  // namespace kvsim
