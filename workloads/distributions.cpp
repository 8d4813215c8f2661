// The parametric distributions: constant, uniform, normal, lognormal,
// exponential. Each samples with its own algorithm on kvsim's Rng (never a
// std:: distribution, whose output differs between standard libraries).
#include <cmath>
#include <limits>

#include "workloads/distribution_impl.hpp"

namespace kvsim::detail {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

class ConstantDistribution final : public Distribution {
 public:
  explicit ConstantDistribution(double value) : value_(value) {}
  std::string_view name() const override { return "constant"; }
  double draw(Rng&) const override { return value_; }
  double mean() const override { return value_; }
  double support_min() const override { return value_; }
  double support_max() const override { return value_; }

 private:
  double value_;
};

// Every whole value in [min, max] equally likely (tokens, or ns for durations).
class UniformDistribution final : public Distribution {
 public:
  UniformDistribution(int64_t min, int64_t max) : min_(min), max_(max) {}
  std::string_view name() const override { return "uniform"; }
  double draw(Rng& rng) const override { return static_cast<double>(rng.uniform_int(min_, max_)); }
  double mean() const override { return 0.5 * (static_cast<double>(min_) + max_); }
  double support_min() const override { return static_cast<double>(min_); }
  double support_max() const override { return static_cast<double>(max_); }

 private:
  int64_t min_;
  int64_t max_;
};

class NormalDistribution final : public Distribution {
 public:
  NormalDistribution(double mean, double std) : mean_(mean), std_(std) {}
  std::string_view name() const override { return "normal"; }
  double draw(Rng& rng) const override { return mean_ + std_ * rng.standard_normal(); }
  double mean() const override { return mean_; }
  double support_min() const override { return std_ > 0 ? -kInfinity : mean_; }
  double support_max() const override { return std_ > 0 ? kInfinity : mean_; }

 private:
  double mean_;
  double std_;
};

// Parameterised by the mean of the distribution itself (what a user knows
// about prompt lengths) and sigma of the underlying normal:
// mu = ln(mean) - sigma^2 / 2, so that E[exp(mu + sigma Z)] = mean.
class LognormalDistribution final : public Distribution {
 public:
  LognormalDistribution(double mean, double sigma)
      : mean_(mean), sigma_(sigma), mu_(std::log(mean) - 0.5 * sigma * sigma) {}
  std::string_view name() const override { return "lognormal"; }
  double draw(Rng& rng) const override { return std::exp(mu_ + sigma_ * rng.standard_normal()); }
  double mean() const override { return mean_; }
  double support_min() const override { return sigma_ > 0 ? 0.0 : mean_; }
  double support_max() const override { return sigma_ > 0 ? kInfinity : mean_; }

 private:
  double mean_;
  double sigma_;
  double mu_;
};

class ExponentialDistribution final : public Distribution {
 public:
  explicit ExponentialDistribution(double mean) : mean_(mean) {}
  std::string_view name() const override { return "exponential"; }
  double draw(Rng& rng) const override { return rng.exponential(mean_); }
  double mean() const override { return mean_; }
  double support_min() const override { return 0.0; }
  double support_max() const override { return kInfinity; }

 private:
  double mean_;
};

}  // namespace

std::unique_ptr<Distribution> make_constant(double value) {
  return std::make_unique<ConstantDistribution>(value);
}

std::unique_ptr<Distribution> make_uniform(int64_t min, int64_t max) {
  return std::make_unique<UniformDistribution>(min, max);
}

config::ComponentInfo constant_distribution_info() {
  return {"distribution",
          "constant",
          "every draw is `value` (a bare number is short for it)",
          {config::quantity_param("value", true, ">= the quantity's floor",
                                  "the one value every draw takes")}};
}

config::ComponentInfo uniform_distribution_info() {
  return {
      "distribution", "uniform", "whole values in [min, max], both included (both required)", {}};
}

config::ComponentInfo normal_distribution_info() {
  return {"distribution",
          "normal",
          "normal, clamped to [min, max] (a token count needs max)",
          {config::quantity_param("mean", true, ">= 0", "centre of the distribution"),
           config::quantity_param("std", true, ">= 0", "standard deviation")}};
}

config::ComponentInfo lognormal_distribution_info() {
  // sigma capped at 10: exp(10 Z) already spans 40 orders of magnitude.
  return {"distribution",
          "lognormal",
          "lognormal by its own mean, clamped to [min, max] (a token count needs max)",
          {config::quantity_param("mean", true, "> 0", "mean of the distribution itself"),
           config::own_reader(config::number_param(
               "sigma", std::nullopt, 0.0, 10.0, "",
               "standard deviation of the underlying normal (0 is a constant)"))}};
}

config::ComponentInfo exponential_distribution_info() {
  return {"distribution",
          "exponential",
          "exponential, clamped to [min, max] (a token count needs max)",
          {config::quantity_param("mean", true, "> 0", "mean of the distribution")}};
}

std::unique_ptr<Distribution> parse_constant(DistributionReader& reader) {
  // value: the one value every draw takes
  const auto value = reader.whole_amount("value");
  if (!value) return nullptr;
  if (!reader.check_floor(*value, reader.node().child_at("value"), "value")) return nullptr;
  return make_constant(static_cast<double>(*value));
}

std::unique_ptr<Distribution> parse_uniform(DistributionReader& reader) {
  // min/max (the clamps, required) are the bounds, both included.
  return make_uniform(reader.min(), reader.max());
}

std::unique_ptr<Distribution> parse_normal(DistributionReader& reader) {
  const auto mean = reader.amount("mean", false);    // mean: centre of the distribution
  const auto std_dev = reader.amount("std", false);  // std: standard deviation (>= 0)
  if (!mean || !std_dev) return nullptr;
  return std::make_unique<NormalDistribution>(*mean, *std_dev);
}

std::unique_ptr<Distribution> parse_lognormal(DistributionReader& reader) {
  const auto mean = reader.amount("mean", true);  // mean: of the distribution itself (> 0)
  // sigma: standard deviation of the underlying normal (>= 0; 0 is a constant).
  // Capped at 10: exp(10 Z) already spans 40 orders of magnitude.
  const config::ComponentInfo info = lognormal_distribution_info();
  const config::ParamSpec& s = info.at("sigma");
  const auto sigma = reader.number(s.key, s.min, s.max, false);
  if (!mean || !sigma) return nullptr;
  return std::make_unique<LognormalDistribution>(*mean, *sigma);
}

std::unique_ptr<Distribution> parse_exponential(DistributionReader& reader) {
  const auto mean = reader.amount("mean", true);  // mean: of the distribution (> 0)
  if (!mean) return nullptr;
  return std::make_unique<ExponentialDistribution>(*mean);
}

}  // namespace kvsim::detail
