#include "base/checked_math.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace kvsim {

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> round_in_range(double value, int64_t min, int64_t max) {
  if (!std::isfinite(value)) return std::nullopt;
  const double r = std::round(value);  // half away from zero, as std::llround
  // Compared as doubles: min and max of interest here are at most 2^62, exact in a double.
  if (r < static_cast<double>(min) || r > static_cast<double>(max)) return std::nullopt;
  return static_cast<int64_t>(r);
}

std::string simulated_span_text() {
  return fmt::format("2^62 ns ({:.1f} years) of simulated time",
                     static_cast<double>(kMaxSimulatedTimeNs) / 1e9 / (365.25 * 86400));
}

void throw_duration_overflow(const char* what, double ns, double limit_ns) {
  throw UnrepresentableQuantity(fmt::format(
      "{} would take {:.4g} ns, beyond {:.4g} ns ({:.1f} days) that a duration may be: the "
      "device's rates, bandwidths or efficiencies are too small for this work (an efficiency is "
      "at least 0.001 of peak)",
      what, ns, limit_ns, limit_ns / 1e9 / 86400));
}

void throw_unrepresentable(const config::Location& where, const std::string& key_path,
                           const std::string& problem, const std::string& limit) {
  config::Diagnostic d;
  d.where = where;
  d.key_path = key_path;
  d.problem = problem;
  d.allowed = limit;
  std::vector<config::Diagnostic> all;
  all.push_back(std::move(d));
  throw config::ConfigError(std::move(all));
}

}  // namespace kvsim
