#pragma once
// Internal to workloads/: what one distribution implementation needs to read
// its parameters. Each implementation is a parse function listed in the
// explicit table of distribution_registry.cpp (no static self-registration:
// a static library silently drops unreferenced registrars).
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "workloads/distribution.hpp"

namespace kvsim::detail {

// Reads the parameters of one `dist:` map in the quantity's units. The common
// clamps have been read already: `min()`/`max()` are the effective ones.
class DistributionReader {
 public:
  DistributionReader(config::MapReader& reader, const QuantityRules& rules, int64_t min,
                     int64_t max, bool min_given)
      : reader_(reader), rules_(rules), min_(min), max_(max), min_given_(min_given) {}

  const QuantityRules& rules() const { return rules_; }
  const config::Node& node() const { return reader_.node(); }
  config::MapReader& map() { return reader_; }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  bool min_given() const { return min_given_; }

  // A real amount in the quantity's unit: a number of tokens (`mean: 150.5`)
  // or a duration with its unit (`mean: 10s`, read as ns). `positive` demands
  // > 0 instead of >= 0. Nullopt when missing (an error if required) or wrong.
  std::optional<double> amount(std::string_view key, bool positive, bool required = true);
  // A whole amount: an integer number of tokens or a duration in ns.
  std::optional<int64_t> whole_amount(std::string_view key, bool required = true);
  // A dimensionless number in [lo, hi] (`sigma`, `s`).
  std::optional<double> number(std::string_view key, double lo, double hi, bool positive,
                               bool required = true);
  // Reports `value` at `where` when it is below the floor and the user gave no
  // `min` to clamp it explicitly (never silently raise a user value).
  bool check_floor(int64_t value, const config::Node& where, const std::string& what);

 private:
  config::Node required_child(std::string_view key, bool required);

  config::MapReader& reader_;
  const QuantityRules& rules_;
  int64_t min_;
  int64_t max_;
  bool min_given_;
};

// Reads one whole amount from a node (tokens: integer; duration: with unit).
std::optional<int64_t> read_whole_amount(const config::Node& node, const QuantityRules& rules);

// What each implementation declares (workload_params.hpp), beside its parse
// function; the shared keys (dist, min, max) are the registry's.
config::ComponentInfo constant_distribution_info();
config::ComponentInfo uniform_distribution_info();
config::ComponentInfo normal_distribution_info();
config::ComponentInfo lognormal_distribution_info();
config::ComponentInfo exponential_distribution_info();
config::ComponentInfo zipf_distribution_info();
config::ComponentInfo empirical_distribution_info();

// Implementations (one parse function each); nullptr after reporting errors.
std::unique_ptr<Distribution> parse_constant(DistributionReader& reader);
std::unique_ptr<Distribution> parse_uniform(DistributionReader& reader);
std::unique_ptr<Distribution> parse_normal(DistributionReader& reader);
std::unique_ptr<Distribution> parse_lognormal(DistributionReader& reader);
std::unique_ptr<Distribution> parse_exponential(DistributionReader& reader);
std::unique_ptr<Distribution> parse_zipf(DistributionReader& reader);
std::unique_ptr<Distribution> parse_empirical(DistributionReader& reader);

// Direct constructors, for the bare-value shorthand and for quantities that
// are not read from a `dist:` map (shared-prefix group popularity).
std::unique_ptr<Distribution> make_constant(double value);
std::unique_ptr<Distribution> make_uniform(int64_t min, int64_t max);
std::unique_ptr<Distribution> make_zipf(int64_t min, int64_t max, double exponent);

}  // namespace kvsim::detail
