// The Mooncake line reader reads the traces' own shape directly and hands
// any other line to the JSON parser: both must agree on every line, records
// and problems alike. Checked on hand-written edge cases, on many mutations
// of good lines, and on every line of the shared trace when it is present.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/source_paths.hpp"
#include "workloads/trace_format.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// Both readers on one line: the same kind, problem and record.
void expect_same_reading(const std::string& line) {
  TraceRecord direct, full;
  direct.hash_ids = {77};  // a record reused from the line before
  full.hash_ids = {77};
  const CsvColumns columns;
  const LineResult a = detail::parse_mooncake_line(line, columns, direct);
  const LineResult b = detail::parse_mooncake_line_in_full(line, columns, full);
  ASSERT_EQ(a.kind, b.kind) << line;
  EXPECT_EQ(a.problem, b.problem) << line;
  if (a.kind != LineKind::record) return;
  EXPECT_EQ(direct.time, full.time) << line;
  EXPECT_EQ(direct.input_tokens, full.input_tokens) << line;
  EXPECT_EQ(direct.output_tokens, full.output_tokens) << line;
  EXPECT_EQ(direct.hash_ids, full.hash_ids) << line;
}

const std::vector<std::string>& edge_lines() {
  static const std::vector<std::string> lines = {
      R"({"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]})",
      R"({"hash_ids":[4],"output_length":3,"input_length":10,"timestamp":27.125})",
      R"(  {"timestamp": 1.5, "input_length": 512, "output_length": 1, "hash_ids": [9]}  )",
      "{\"timestamp\":\t3,\r\"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\r",
      R"({"timestamp": 0.1, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 123456789.987654321, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 1e3, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 1E-3, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": -0, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": -1, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 01, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 1., "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 1000000000001, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 1000000000000, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": "5", "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 5, "input_length": 1.0, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 5, "input_length": 0, "output_length": 1, "hash_ids": []})",
      R"({"timestamp": 5, "input_length": 67108864, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 5, "input_length": 67108865, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 99999999999999999999, "hash_ids": [0]})",
      // Found by the Mooncake trace fuzzer: a run of digits past int64_t's range.
      R"({"timestamp": 0, "input_length": 09223372036854775807500, "output_length": 10, "hash_ids": [0, 1]})",
      R"({"timestamp": 92233720368547758070, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [92233720368547758075]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [123456789012345678]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [1234567890123456789]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [18446744073709551615]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [-1]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [1, ]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [1 2]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": []})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [1, 2]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": 1})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [[1]]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [0], "extra": true})",
      R"({"timestamp": 5, "timestamp": 6, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timest\u0061mp": 5, "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [0]} x)",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [0]}})",
      R"({"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [0],})",
      R"({"timestamp": 5 "input_length": 1, "output_length": 1, "hash_ids": [0]})",
      R"([{"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [0]}])",
      R"({})",
      "",
      "   \t",
      "{",
      "\xEF\xBB\xBF{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": "
      "[0]}",
  };
  return lines;
}

TEST(MooncakeLines, EdgeCasesReadAsTheJsonParserReadsThem) {
  for (const std::string& line : edge_lines()) expect_same_reading(line);
}

TEST(MooncakeLines, MutatedLinesReadAsTheJsonParserReadsThem) {
  // Every line above with one byte replaced, removed or doubled, from a
  // fixed seed: 3,000 lines in a few milliseconds.
  const std::string alphabet = "0123456789.,:[]{}\" eE-+\\x\t";
  std::mt19937 rng(20250);
  for (int i = 0; i < 3000; ++i) {
    std::string line = edge_lines()[rng() % 6];  // the well-formed ones
    const size_t at = rng() % line.size();
    switch (rng() % 3) {
      case 0:
        line[at] = alphabet[rng() % alphabet.size()];
        break;
      case 1:
        line.erase(at, 1);
        break;
      default:
        line.insert(at, 1, line[at]);
        break;
    }
    expect_same_reading(line);
  }
}

TEST(MooncakeLines, EveryLineOfTheSharedTraceReadsAsTheJsonParserReadsIt) {
  const std::string path =
      std::string(KVSIM_SHARED_DATA_DIR) + "/traces/mooncake_conversation.jsonl";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared data absent: " << path;
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    expect_same_reading(line);
    ++lines;
  }
  EXPECT_EQ(lines, 12031);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
