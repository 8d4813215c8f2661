// Zipf over the integers min..max: P(k) proportional to 1 / (k - min + 1)^s.
//
// Sampled by rejection-inversion (Hoermann and Derflinger 1996, "Rejection-
// inversion to generate variates from monotone discrete distributions"), as in
// Apache Commons' ZipfRejectionInversionSampler: O(1) memory and expected
// O(1) time for any range, so `max: 1000000` costs no table.
#include <algorithm>
#include <cmath>

#include "workloads/distribution_impl.hpp"

namespace kvsim::detail {
namespace {

// log1p(x)/x and expm1(x)/x with their limits at 0 (series near 0).
double log1p_over_x(double x) {
  if (std::abs(x) > 1e-8) return std::log1p(x) / x;
  return 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}
double expm1_over_x(double x) {
  if (std::abs(x) > 1e-8) return std::expm1(x) / x;
  return 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x));
}

// The integral of x^p over [a, b].
double power_integral(double a, double b, double p) {
  if (std::abs(p + 1.0) < 1e-12) return std::log(b / a);
  return (std::pow(b, p + 1.0) - std::pow(a, p + 1.0)) / (p + 1.0);
}

class ZipfDistribution final : public Distribution {
 public:
  ZipfDistribution(int64_t min, int64_t max, double exponent)
      : min_(min), count_(static_cast<double>(max - min + 1)), exponent_(exponent) {
    h_integral_x1_ = h_integral(1.5) - 1.0;
    h_integral_n_ = h_integral(count_ + 0.5);
    squeeze_ = 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0));
    // The mean rank, for documentation and tests: exact sums up to a million
    // ranks, the midpoint-rule integral beyond (its error is far below 1e-6).
    double weight_sum = 0, weighted = 0;
    const double exact_terms = std::min(count_, 1e6);
    for (double k = 1; k <= exact_terms; ++k) {
      const double w = std::pow(k, -exponent_);
      weight_sum += w;
      weighted += w * k;
    }
    if (count_ > exact_terms) {
      weight_sum += power_integral(exact_terms + 0.5, count_ + 0.5, -exponent_);
      weighted += power_integral(exact_terms + 0.5, count_ + 0.5, 1.0 - exponent_);
    }
    mean_rank_ = weighted / weight_sum;
  }

  std::string_view name() const override { return "zipf"; }

  double draw(Rng& rng) const override {
    while (true) {
      const double u = h_integral_n_ + rng.uniform01() * (h_integral_x1_ - h_integral_n_);
      const double x = h_integral_inverse(u);
      double k = std::floor(x + 0.5);
      if (k < 1) k = 1;
      if (k > count_) k = count_;
      if (k - x <= squeeze_ || u >= h_integral(k + 0.5) - h(k)) {
        return static_cast<double>(min_) + (k - 1);
      }
    }
  }

  double mean() const override { return static_cast<double>(min_) + mean_rank_ - 1; }
  double support_min() const override { return static_cast<double>(min_); }
  double support_max() const override { return static_cast<double>(min_) + count_ - 1; }

 private:
  // h(x) = x^-s; H(x) = (x^(1-s) - 1) / (1 - s) (log x when s = 1), its integral.
  double h(double x) const { return std::exp(-exponent_ * std::log(x)); }
  double h_integral(double x) const {
    const double log_x = std::log(x);
    return expm1_over_x((1.0 - exponent_) * log_x) * log_x;
  }
  double h_integral_inverse(double x) const {
    double t = x * (1.0 - exponent_);
    if (t < -1.0) t = -1.0;  // rounding guard, as in the reference implementation
    return std::exp(log1p_over_x(t) * x);
  }

  int64_t min_;
  double count_;
  double exponent_;
  double h_integral_x1_ = 0;
  double h_integral_n_ = 0;
  double squeeze_ = 0;
  double mean_rank_ = 0;
};

}  // namespace

std::unique_ptr<Distribution> make_zipf(int64_t min, int64_t max, double exponent) {
  return std::make_unique<ZipfDistribution>(min, max, exponent);
}

config::ComponentInfo zipf_distribution_info() {
  return {"distribution",
          "zipf",
          "ranks min..max, rank r = k - min + 1 with weight 1/r^s (min and max required)",
          {config::own_reader(
              config::number_param("s", std::nullopt, 0.0, 20.0, "", "the exponent, > 0"))}};
}

std::unique_ptr<Distribution> parse_zipf(DistributionReader& reader) {
  // s: the exponent (> 0); rank r = k - min + 1 has weight 1 / r^s.
  const config::ComponentInfo info = zipf_distribution_info();
  const config::ParamSpec& s = info.at("s");
  const auto exponent = reader.number(s.key, s.min, s.max, true);
  // min/max (required) are the first and last ranks; the registry has
  // checked them against the floor and each other.
  if (!exponent || reader.min() > reader.max()) return nullptr;
  return make_zipf(reader.min(), reader.max(), *exponent);
}

}  // namespace kvsim::detail
