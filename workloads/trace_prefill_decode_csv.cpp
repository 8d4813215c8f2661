// `prefill_decode_csv`: the request trace CSV other simulators read (Vidur's
// trace-replay request generator, Splitwise-derived traces): a header naming
// `arrived_at` (seconds, may be fractional), `num_prefill_tokens` and
// `num_decode_tokens`; other columns are ignored. No prefix information.
#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "workloads/trace_format.hpp"

namespace kvsim::detail {
namespace {}  // namespace

std::string read_prefill_decode_header(std::string_view line, CsvColumns& columns) {
  return find_columns(line, "arrived_at", "num_prefill_tokens", "num_decode_tokens", columns);
}

LineResult parse_prefill_decode_line(std::string_view line, const CsvColumns& columns,
                                     TraceRecord& out) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return {LineKind::blank, {}};
  const auto cells = split_csv(line);
  if (static_cast<int>(cells.size()) != columns.count)
    return malformed_line(fmt::format("{} fields, the header has {}", cells.size(), columns.count));
  const std::string_view time = cells[static_cast<size_t>(columns.time)];
  double seconds = 0;
  const auto [ptr, ec] = std::from_chars(time.data(), time.data() + time.size(), seconds);
  if (time.empty() || ec != std::errc() || ptr != time.data() + time.size())
    return malformed_line(fmt::format("arrived_at '{}' is not a number of seconds", time));
  if (!(seconds >= 0) || seconds > 1e9)
    return malformed_line(fmt::format("arrived_at is {}: seconds, >= 0", time));
  out.time = static_cast<TimeNs>(std::llround(seconds * 1e9));
  if (auto p = parse_token_columns(cells, columns, "num_prefill_tokens", "num_decode_tokens", out);
      !p.empty())
    return malformed_line(p);
  return {};
}

}  // namespace kvsim::detail
