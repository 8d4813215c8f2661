#pragma once
// Arithmetic on quantities derived from input (sizes, times, counts and their
// products). A value that int64 cannot hold is never wrapped into a wrong
// answer: these return nullopt, and the caller reports the key and the limit
// (exit 2). Time is integer nanoseconds (base/units.hpp); simulated instants
// are kept below kMaxSimulatedTimeNs so a few durations added to one never
// wrap either.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "base/diagnostics.hpp"
#include "base/units.hpp"

namespace kvsim {

// 2^62 ns, about 146 years: the representable simulated span (docs/yaml.md).
constexpr TimeNs kMaxSimulatedTimeNs = int64_t{1} << 62;
// 2^62 bytes (4 EiB): the largest size a model, a cache or a context may need.
constexpr Bytes kMaxRepresentableBytes = int64_t{1} << 62;

std::optional<int64_t> checked_add(int64_t a, int64_t b);
std::optional<int64_t> checked_sub(int64_t a, int64_t b);
std::optional<int64_t> checked_mul(int64_t a, int64_t b);
// round(value) when it is finite and within [min, max], else nullopt
// (std::llround outside int64 is undefined).
std::optional<int64_t> round_in_range(double value, int64_t min, int64_t max);

// a / b rounded up, and x rounded up to a multiple of g (a granule of 0 or 1
// leaves x as it is), for sizes already known to be in range (a, x >= 0,
// b > 0, the result below 2^62): blocks for tokens, pages for bytes.
constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
constexpr int64_t round_up(int64_t x, int64_t g) {
  return g <= 1 ? x : ceil_div(x, g) * g;
}

// "2^62 ns (146.1 years)": the time limit as messages state it.
std::string simulated_span_text();

// A quantity computed from the input while a run goes (an op's duration from
// a device's rates and efficiencies) that int64 nanoseconds cannot hold: the
// input is at fault (exit 2), but no file position is known any more, so the
// message names the quantity, its value and the limit.
class UnrepresentableQuantity : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws UnrepresentableQuantity for an op (or a step) of `ns` nanoseconds.
[[noreturn]] void throw_duration_overflow(const char* what, double ns, double limit_ns);

// Throws config::ConfigError with one diagnostic: `key_path` at `where`
// cannot be represented, naming the limit.
[[noreturn]] void throw_unrepresentable(const config::Location& where, const std::string& key_path,
                                        const std::string& problem, const std::string& limit);

}  // namespace kvsim
