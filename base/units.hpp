#pragma once
// Units are parsed once, here, into integers: time in nanoseconds, sizes in
// bytes, bandwidth in bytes per second, compute in operations per second.
// Nothing downstream ever sees a unit string or a floating-point time.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvsim {

using TimeNs = int64_t;
using Bytes = int64_t;

constexpr TimeNs kNsPerUs = 1'000;
constexpr TimeNs kNsPerMs = 1'000'000;
constexpr TimeNs kNsPerS = 1'000'000'000;

// Result of parsing a quantity: either a value or the reason it is not one.
struct ParsedQuantity {
  std::optional<int64_t> value;
  std::string problem;  // empty when value is set
};

// "64GiB", "16MB", "4096" (plain bytes). Decimal units are powers of 1000,
// binary (KiB, MiB...) powers of 1024.
ParsedQuantity parse_bytes(std::string_view text);
// "1.6TB/s", "31.5GB/s", "196GiB/s" -> bytes per second.
ParsedQuantity parse_bandwidth(std::string_view text);
// "20us", "1.5ms", "2s", "300ns" -> nanoseconds. A unit is required.
ParsedQuantity parse_duration(std::string_view text);
// "353.9TFLOPS", "140TOPS", "2.5GFLOPS" -> operations per second.
ParsedQuantity parse_ops_rate(std::string_view text);

// Human-readable forms for tables and messages.
std::string format_bytes(Bytes bytes);              // "16.00 MiB"
std::string format_duration(TimeNs ns);             // "12.34 ms"
std::string format_bandwidth(int64_t bytes_per_s);  // "1.60 TB/s"

}  // namespace kvsim
