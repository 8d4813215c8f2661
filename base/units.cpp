#include "base/units.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace kvsim {
namespace {

struct Unit {
  std::string_view suffix;
  double scale;
};

// Splits "1.6TB/s" into 1.6 and "TB/s". The number must be non-negative.
bool split_number(std::string_view text, double& number, std::string_view& suffix,
                  std::string& problem) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                             text[i] == 'e' || text[i] == 'E')) {
    // Accept exponents like 1e9 but not a unit that starts with 'E' (EB is not supported).
    if ((text[i] == 'e' || text[i] == 'E') &&
        !(i + 1 < text.size() && (std::isdigit(static_cast<unsigned char>(text[i + 1])) ||
                                  text[i + 1] == '-' || text[i + 1] == '+'))) {
      break;
    }
    if ((text[i] == 'e' || text[i] == 'E') && i + 1 < text.size() &&
        (text[i + 1] == '-' || text[i + 1] == '+')) {
      ++i;
    }
    ++i;
  }
  std::string_view num = text.substr(0, i);
  if (num.empty()) {
    problem = fmt::format("'{}' does not start with a number", text);
    return false;
  }
  auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), number);
  if (ec != std::errc() || ptr != num.data() + num.size() || !std::isfinite(number)) {
    problem = fmt::format("'{}' is not a number", num);
    return false;
  }
  if (number < 0) {
    problem = fmt::format("'{}' is negative", text);
    return false;
  }
  suffix = text.substr(i);
  while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
  return true;
}

template <size_t N>
ParsedQuantity parse_with(std::string_view text, const std::array<Unit, N>& units,
                          bool unit_required, std::string_view what) {
  ParsedQuantity out;
  double number = 0;
  std::string_view suffix;
  if (!split_number(text, number, suffix, out.problem)) return out;
  if (suffix.empty() && unit_required) {
    out.problem = fmt::format("'{}' has no unit", text);
    return out;
  }
  double scale = 1.0;
  if (!suffix.empty()) {
    bool found = false;
    for (const auto& u : units) {
      if (suffix == u.suffix) {
        scale = u.scale;
        found = true;
        break;
      }
    }
    if (!found) {
      std::string allowed;
      for (const auto& u : units) {
        if (!allowed.empty()) allowed += ", ";
        allowed += u.suffix;
      }
      out.problem = fmt::format("unknown {} unit '{}' (units: {})", what, suffix, allowed);
      return out;
    }
  }
  const double value = number * scale;
  if (value > 9.0e18) {
    out.problem = fmt::format("'{}' is too large", text);
    return out;
  }
  out.value = static_cast<int64_t>(std::llround(value));
  return out;
}

constexpr double kK = 1e3, kM = 1e6, kG = 1e9, kT = 1e12, kP = 1e15;
constexpr double kKi = 1024.0, kMi = kKi * 1024.0, kGi = kMi * 1024.0, kTi = kGi * 1024.0;

constexpr std::array<Unit, 10> kByteUnits{{{"B", 1},
                                           {"KB", kK},
                                           {"MB", kM},
                                           {"GB", kG},
                                           {"TB", kT},
                                           {"KiB", kKi},
                                           {"MiB", kMi},
                                           {"GiB", kGi},
                                           {"TiB", kTi},
                                           {"PB", kP}}};
constexpr std::array<Unit, 9> kBandwidthUnits{{{"B/s", 1},
                                               {"KB/s", kK},
                                               {"MB/s", kM},
                                               {"GB/s", kG},
                                               {"TB/s", kT},
                                               {"KiB/s", kKi},
                                               {"MiB/s", kMi},
                                               {"GiB/s", kGi},
                                               {"TiB/s", kTi}}};
constexpr std::array<Unit, 7> kDurationUnits{{{"ns", 1},
                                              {"us", 1e3},
                                              {"\xC2\xB5s", 1e3},
                                              {"ms", 1e6},
                                              {"s", 1e9},
                                              {"min", 60e9},
                                              {"h", 3600e9}}};
constexpr std::array<Unit, 10> kOpsUnits{{{"FLOPS", 1},
                                          {"GFLOPS", kG},
                                          {"TFLOPS", kT},
                                          {"PFLOPS", kP},
                                          {"OPS", 1},
                                          {"GOPS", kG},
                                          {"TOPS", kT},
                                          {"POPS", kP},
                                          {"MFLOPS", kM},
                                          {"MOPS", kM}}};

std::string scaled(double v, const char* const* names, int count, double step) {
  int i = 0;
  while (std::fabs(v) >= step && i + 1 < count) {
    v /= step;
    ++i;
  }
  return fmt::format("{:.2f} {}", v, names[i]);
}

}  // namespace

ParsedQuantity parse_bytes(std::string_view text) {
  ParsedQuantity out = parse_with(text, kByteUnits, false, "size");
  // A bare number of bytes is almost always a slip (vLLM's swap_space: 4
  // means 4 GiB): a size needs its unit, except 0, which is 0 in any unit.
  if (out.problem.empty() && out.value != 0 &&
      text.find_first_not_of("0123456789.eE+- ") == std::string_view::npos) {
    out.problem =
        fmt::format("'{}' has no unit (write a size such as {}GiB or {}B)", text, text, text);
    out.value.reset();
  }
  return out;
}
ParsedQuantity parse_bandwidth(std::string_view text) {
  return parse_with(text, kBandwidthUnits, true, "bandwidth");
}
ParsedQuantity parse_duration(std::string_view text) {
  return parse_with(text, kDurationUnits, true, "duration");
}
ParsedQuantity parse_ops_rate(std::string_view text) {
  return parse_with(text, kOpsUnits, true, "compute rate");
}

std::string format_bytes(Bytes bytes) {
  static const char* const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return scaled(static_cast<double>(bytes), names, 6, 1024.0);
}

std::string format_duration(TimeNs ns) {
  const double v = static_cast<double>(ns);
  if (std::fabs(v) < 1e3) return fmt::format("{} ns", ns);
  if (std::fabs(v) < 1e6) return fmt::format("{:.2f} us", v / 1e3);
  if (std::fabs(v) < 1e9) return fmt::format("{:.2f} ms", v / 1e6);
  return fmt::format("{:.3f} s", v / 1e9);
}

std::string format_bandwidth(int64_t bytes_per_s) {
  static const char* const names[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  return scaled(static_cast<double>(bytes_per_s), names, 5, 1000.0);
}

}  // namespace kvsim
