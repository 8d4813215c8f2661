// Values that int64 cannot represent are errors naming the key and the limit,
// never wrapped into a wrong answer (SPEC 3, exit 2): the checked arithmetic
// itself, dates the Azure reader must refuse, JSON the Mooncake reader must
// refuse, and a full disk reported with the OS's text. The command-line
// reproducers live in test_bad_input_catalogue.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>

#include "base/checked_math.hpp"
#include "reports/csv_sink.hpp"
#include "workloads/trace_format.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(CheckedMath, AddSubMulRefuseToWrap) {
  EXPECT_EQ(checked_add(2, 3), 5);
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
  EXPECT_EQ(checked_add(kMin, -1), std::nullopt);
  EXPECT_EQ(checked_sub(kMin, 1), std::nullopt);
  EXPECT_EQ(checked_sub(0, kMin), std::nullopt);
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_EQ(checked_mul(int64_t{1} << 32, int64_t{1} << 31), std::nullopt);
  EXPECT_EQ(checked_mul(-1, kMin), std::nullopt);
}

TEST(CheckedMath, RoundInRangeRoundsHalfAwayAndRefusesTheUnrepresentable) {
  EXPECT_EQ(round_in_range(2.5, 0, 10), 3);  // as std::llround
  EXPECT_EQ(round_in_range(-2.5, -10, 10), -3);
  EXPECT_EQ(round_in_range(1e30, 0, kMaxSimulatedTimeNs), std::nullopt);
  EXPECT_EQ(round_in_range(-1.0, 0, 10), std::nullopt);
  EXPECT_EQ(round_in_range(std::numeric_limits<double>::quiet_NaN(), 0, 10), std::nullopt);
  EXPECT_EQ(round_in_range(std::numeric_limits<double>::infinity(), 0, kMax), std::nullopt);
  EXPECT_EQ(round_in_range(static_cast<double>(kMaxSimulatedTimeNs), 0, kMaxSimulatedTimeNs),
            kMaxSimulatedTimeNs);
}

TEST(CheckedMath, TheSimulatedSpanIsStatedInYears) {
  EXPECT_EQ(simulated_span_text(), "2^62 ns (146.1 years) of simulated time");
}

LineResult azure(const std::string& time) {
  CsvColumns columns;
  EXPECT_EQ(detail::read_azure_header("TIMESTAMP,ContextTokens,GeneratedTokens", columns), "");
  TraceRecord record;
  return detail::parse_azure_line(time + ",10,2", columns, record);
}

TEST(AzureTimestamps, OnlyRealDatesWithinTheClocksYears) {
  EXPECT_EQ(azure("2023-11-16 18:15:46.6805900").kind, LineKind::record);
  EXPECT_EQ(azure("2024-02-29 00:00:00").kind, LineKind::record);  // leap year
  EXPECT_EQ(azure("2000-02-29 00:00:00").kind, LineKind::record);  // 400-year rule
  EXPECT_EQ(azure("2023-02-29 00:00:00").kind, LineKind::malformed);
  EXPECT_EQ(azure("1900-02-29 00:00:00").kind, LineKind::malformed);  // 100-year rule
  EXPECT_EQ(azure("2023-02-31 00:00:00").kind, LineKind::malformed);
  EXPECT_EQ(azure("2023-04-31 00:00:00").kind, LineKind::malformed);
  EXPECT_EQ(azure("1678-01-01 00:00:00").kind, LineKind::record);
  EXPECT_EQ(azure("2261-12-31 23:59:59.9999999").kind, LineKind::record);
  const auto early = azure("1677-01-01 00:00:00");
  EXPECT_EQ(early.kind, LineKind::malformed);
  EXPECT_NE(early.problem.find("1678-2261"), std::string::npos) << early.problem;
  EXPECT_EQ(azure("9999-12-31 23:59:59").kind, LineKind::malformed);
  EXPECT_EQ(azure("0000-01-01 00:00:00").kind, LineKind::malformed);
}

LineResult mooncake(const std::string& line) {
  TraceRecord record;
  return detail::parse_mooncake_line(line, {}, record);
}

TEST(MooncakeLines, AFieldWrittenTwiceIsMalformed) {
  EXPECT_EQ(
      mooncake(R"({"timestamp": 0, "input_length": 10, "output_length": 3, "hash_ids": [1]})").kind,
      LineKind::record);
  const auto twice = mooncake(
      R"({"timestamp": 0, "input_length": 10, "output_length": 3, "hash_ids": [1], "timestamp": 9})");
  EXPECT_EQ(twice.kind, LineKind::malformed);
  EXPECT_NE(twice.problem.find("\"timestamp\" is written twice"), std::string::npos)
      << twice.problem;
}

TEST(MooncakeLines, DeepNestingIsMalformedWithoutBuildingIt) {
  const std::string deep =
      "{\"timestamp\": " + std::string(100000, '[') + "1" + std::string(100000, ']') + "}";
  const auto r = mooncake(deep);
  EXPECT_EQ(r.kind, LineKind::malformed);
  EXPECT_NE(r.problem.find("nested deeper"), std::string::npos) << r.problem;
}

// /dev/full accepts the open and fails every write with ENOSPC: the error
// the environment causes is a filesystem_error carrying the OS's text.
TEST(FullDisk, RunCsvFilesReportTheOsError) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  try {
    CsvRunSink sink("/dev/full", "/dev/full");
    for (int i = 0; i < 10000; ++i) sink.request(RequestRow{});
    sink.close();
    FAIL() << "writing to /dev/full succeeded";
  } catch (const std::filesystem::filesystem_error& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
