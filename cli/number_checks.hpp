#pragma once
// Validators for numeric flags. CLI11's Range and NonNegativeNumber compare
// with < and >, which NaN passes (every comparison with it is false): a flag
// given `nan` or `inf` would reach the computation (`check --abs-tol nan`
// passed every difference, `capacity --memory-fraction nan` sized a pool
// from INT64_MIN bytes). These accept only finite numbers in the range.
#include <CLI/CLI.hpp>

#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

namespace kvsim::cli {

inline CLI::Validator finite_range(double lo, double hi = std::numeric_limits<double>::max()) {
  const std::string allowed = hi == std::numeric_limits<double>::max()
                                  ? fmt::format("a finite number >= {}", lo)
                                  : fmt::format("a finite number in [{}, {}]", lo, hi);
  return CLI::Validator(
      [lo, hi, allowed](std::string& text) {
        double v = 0;
        try {
          size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) return fmt::format("'{}' is not a number ({})", text, allowed);
        } catch (const std::exception&) {
          return fmt::format("'{}' is not a number ({})", text, allowed);
        }
        if (!std::isfinite(v) || v < lo || v > hi)
          return fmt::format("'{}' is not {}", text, allowed);
        return std::string();
      },
      allowed);
}

}  // namespace kvsim::cli
