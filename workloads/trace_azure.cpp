// Azure LLM inference trace 2023 (Azure/AzurePublicDataset,
// AzureLLMInferenceTrace_{code,conv}.csv): a header
// `TIMESTAMP,ContextTokens,GeneratedTokens`, then one row per request with a
// wall-clock time `2023-11-16 18:15:46.6805900` (seven fractional digits,
// 100 ns). No prefix information: every prompt is unique content.
#include <fmt/format.h>

#include "workloads/trace_format.hpp"

namespace kvsim::detail {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil), so times are exact integers with no time zone involved.
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Reads `count` digits at `pos` into `out`; false when they are not digits.
bool digits(std::string_view s, size_t pos, size_t count, int64_t& out) {
  if (pos + count > s.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

// Years whose every instant is an int64 count of ns since 1970 (that clock
// covers 1677-09-21 to 2262-04-11): whole years only.
constexpr int64_t kFirstYear = 1678;
constexpr int64_t kLastYear = 2261;

int64_t days_in_month(int64_t y, int64_t m) {
  static constexpr int64_t kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// "YYYY-MM-DD HH:MM:SS[.fraction]" to ns since 1970 (UTC taken as given).
// A date that does not exist (2023-02-31) or a year outside the clock's
// range is not a time.
bool parse_timestamp(std::string_view s, TimeNs& out) {
  int64_t y, mo, d, h, mi, sec;
  if (!digits(s, 0, 4, y) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d) || (s[10] != ' ' && s[10] != 'T') || !digits(s, 11, 2, h) ||
      s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, sec))
    return false;
  if (y < kFirstYear || y > kLastYear || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
      h > 23 || mi > 59 || sec > 60)
    return false;
  int64_t frac_ns = 0;
  if (s.size() > 19) {
    if (s[19] != '.' || s.size() == 20 || s.size() > 29) return false;
    int64_t scale = 100'000'000;
    for (size_t i = 20; i < s.size(); ++i, scale /= 10) {
      if (s[i] < '0' || s[i] > '9') return false;
      frac_ns += (s[i] - '0') * scale;
    }
  }
  const int64_t seconds = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
  out = seconds * kNsPerS + frac_ns;
  return true;
}

}  // namespace

std::string read_azure_header(std::string_view line, CsvColumns& columns) {
  return find_columns(line, "TIMESTAMP", "ContextTokens", "GeneratedTokens", columns);
}

LineResult parse_azure_line(std::string_view line, const CsvColumns& columns, TraceRecord& out) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return {LineKind::blank, {}};
  const auto cells = split_csv(line);
  if (static_cast<int>(cells.size()) != columns.count)
    return malformed_line(fmt::format("{} fields, the header has {}", cells.size(), columns.count));
  const std::string_view time = cells[static_cast<size_t>(columns.time)];
  if (time.empty()) return malformed_line("TIMESTAMP is empty");
  if (!parse_timestamp(time, out.time))
    return malformed_line(
        fmt::format("TIMESTAMP '{}' is not a time like 2023-11-16 18:15:46.6805900 (a real "
                    "date in the years {}-{})",
                    time, kFirstYear, kLastYear));
  if (auto p = parse_token_columns(cells, columns, "ContextTokens", "GeneratedTokens", out);
      !p.empty())
    return malformed_line(p);
  return {};
}

}  // namespace kvsim::detail
