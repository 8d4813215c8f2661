// Trace readers on small files written by the tests: every format, every kind
// of malformed line under on_error: fail (an error naming the file and line)
// and skip (dropped and counted), the replay window, time scale and loop.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "base/diagnostics.hpp"
#include "tests/trace_helpers.hpp"
#include "workloads/trace_format.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::drain_all;
using testing::parse_trace;
using testing::TempTrace;

TEST(TraceFormats, TableListsTheFormats) {
  EXPECT_EQ(trace_formats(),
            (std::vector<std::string>{"agentic", "azure", "mooncake", "prefill_decode_csv"}));
}

std::string mooncake_line(const std::string& ts, const std::string& in, const std::string& out,
                          const std::string& ids) {
  return "{\"timestamp\": " + ts + ", \"input_length\": " + in + ", \"output_length\": " + out +
         ", \"hash_ids\": " + ids + "}\n";
}

// A file of three good records with one bad line at line `bad_line`; the
// bad record's own fields or its time make it malformed.
struct MalformedCase {
  std::string name;
  std::string format;
  std::string text;    // the whole file
  int bad_line;        // 1-based
  std::string reason;  // part of the error message
};

// gtest names the case instead of dumping its bytes.
void PrintTo(const MalformedCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<MalformedCase> malformed_cases() {
  const std::string mh;  // no header for JSONL
  const std::string good0 = mooncake_line("0", "600", "10", "[1, 2]");
  const std::string good1 = mooncake_line("1000", "100", "5", "[1]");
  const std::string good2 = mooncake_line("3000", "512", "7", "[9]");
  const std::string az = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  const std::string pd = "arrived_at,num_prefill_tokens,num_decode_tokens\n";
  return {
      // Mooncake JSONL
      {"MooncakeBadJson", "mooncake",
       good0 + "{\"timestamp\": 500, \"input_length\": 10\n" + good1 + good2, 2, "not valid JSON"},
      {"MooncakeMissingField", "mooncake",
       good0 + "{\"timestamp\": 500, \"input_length\": 10, \"hash_ids\": [3]}\n" + good1 + good2, 2,
       "\"output_length\" is missing"},
      {"MooncakeNegativeLength", "mooncake",
       good0 + mooncake_line("500", "-5", "10", "[]") + good1 + good2, 2, "input_length is -5"},
      {"MooncakeTimeBackwards", "mooncake",
       good0 + good1 + mooncake_line("500", "10", "3", "[4]") + good2, 3, "time goes backwards"},
      {"MooncakeHashIdCount", "mooncake",
       good0 + mooncake_line("500", "1025", "3", "[4, 5]") + good1 + good2, 2,
       "needs ceil(1025 / 512) = 3"},
      // Azure 2023 CSV
      {"AzureBadLine", "azure",
       az + "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.0000000;12;4\n"
            "2023-11-16 18:15:48.0000000,12,4\n2023-11-16 18:15:49.5,100,9\n",
       3, "1 fields, the header has 3"},
      {"AzureMissingField", "azure",
       az + "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.0000000,,4\n"
            "2023-11-16 18:15:48.0000000,12,4\n2023-11-16 18:15:49.5,100,9\n",
       3, "ContextTokens is empty"},
      {"AzureNegativeLength", "azure",
       az + "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.0000000,12,-4\n"
            "2023-11-16 18:15:48.0000000,12,4\n2023-11-16 18:15:49.5,100,9\n",
       3, "GeneratedTokens is -4"},
      {"AzureTimeBackwards", "azure",
       az + "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:48.0000000,12,4\n"
            "2023-11-16 18:15:47.0000000,12,4\n2023-11-16 18:15:49.5,100,9\n",
       4, "time goes backwards"},
      {"AzureBadTimestamp", "azure",
       az + "2023-11-16 18:15:46.6805900,374,44\n2023-13-16 18:15:47.0000000,12,4\n"
            "2023-11-16 18:15:48.0000000,12,4\n2023-11-16 18:15:49.5,100,9\n",
       3, "is not a time"},
      // prefill_decode_csv
      {"PrefillDecodeBadLine", "prefill_decode_csv",
       pd + "0.0,100,10\n0.5,abc,3\n1.0,20,2\n2.25,30,3\n", 3, "'abc' is not a whole number"},
      {"PrefillDecodeMissingField", "prefill_decode_csv",
       pd + "0.0,100,10\n0.5,12\n1.0,20,2\n2.25,30,3\n", 3, "2 fields, the header has 3"},
      {"PrefillDecodeNegativeLength", "prefill_decode_csv",
       pd + "0.0,100,10\n0.5,-12,3\n1.0,20,2\n2.25,30,3\n", 3, "num_prefill_tokens is -12"},
      {"PrefillDecodeTimeBackwards", "prefill_decode_csv",
       pd + "0.0,100,10\n1.5,12,3\n1.0,20,2\n2.25,30,3\n", 4, "time goes backwards"},
  };
}

class MalformedLine : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedLine, FailNamesFileAndLine) {
  const MalformedCase& c = GetParam();
  TempTrace file(c.name + ".trace", c.text);
  const auto spec = parse_trace(c.format, file.path(), "on_error: fail");
  ASSERT_TRUE(spec);
  try {
    auto source = make_request_source(*spec, 1, 32000);
    drain_all(*source);
    FAIL() << "no error for " << c.name;
  } catch (const config::ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    const config::Diagnostic& d = e.diagnostics()[0];
    EXPECT_EQ(d.where.file, file.path());
    EXPECT_EQ(d.where.line, c.bad_line);
    EXPECT_EQ(d.key_path, "workload.trace");
    EXPECT_NE(d.problem.find(c.reason), std::string::npos) << d.format();
    EXPECT_NE(d.format().find(file.path() + ":" + std::to_string(c.bad_line) + ":1:"),
              std::string::npos)
        << d.format();
  }
}

TEST_P(MalformedLine, SkipDropsAndCounts) {
  const MalformedCase& c = GetParam();
  TempTrace file(c.name + ".trace", c.text);
  const auto spec = parse_trace(c.format, file.path(), "on_error: skip");
  ASSERT_TRUE(spec);
  auto source = make_request_source(*spec, 1, 32000);
  const auto requests = drain_all(*source);
  EXPECT_EQ(requests.size(), 3u);
  EXPECT_EQ(source->skipped_records(), 1);
  for (size_t i = 1; i < requests.size(); ++i)
    EXPECT_GE(requests[i].arrival, requests[i - 1].arrival);
}

INSTANTIATE_TEST_SUITE_P(EveryReaderEveryKind, MalformedLine,
                         ::testing::ValuesIn(malformed_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(TraceReplay, AzureTimesAreRelativeToTheFirstRecord) {
  TempTrace file("azure_times.csv",
                 "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 23:59:59.9000000,10,2\n"
                 "2023-11-17 00:00:01.1500000,20,3\n");
  auto source = make_request_source(*parse_trace("azure", file.path(), ""), 1, 32000);
  const auto r = drain_all(*source);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].arrival, 0);
  EXPECT_EQ(r[1].arrival, 1'250'000'000);  // across midnight
  EXPECT_EQ(r[0].prompt.size(), 10u);
  EXPECT_EQ(r[1].output.size(), 3u);
}

TEST(TraceReplay, CsvColumnsFoundByNameAndExtraColumnsIgnored) {
  TempTrace file("pd_columns.csv",
                 "num_decode_tokens,extra,arrived_at,num_prefill_tokens\n"
                 "4,x,0.5,100\n"
                 "6,y,1.75,200\n");
  auto source = make_request_source(*parse_trace("prefill_decode_csv", file.path(), ""), 1, 32000);
  const auto r = drain_all(*source);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].arrival, 0);
  EXPECT_EQ(r[1].arrival, 1'250'000'000);
  EXPECT_EQ(r[1].prompt.size(), 200u);
  EXPECT_EQ(r[1].output.size(), 6u);
}

std::string ten_second_trace() {
  std::string text = "arrived_at,num_prefill_tokens,num_decode_tokens\n";
  for (int s = 0; s < 10; ++s) text += std::to_string(s) + ".0," + std::to_string(10 + s) + ",2\n";
  return text;
}

TEST(TraceReplay, WindowStartDurationAndMaxRequests) {
  TempTrace file("window.csv", ten_second_trace());
  auto windowed = make_request_source(
      *parse_trace("prefill_decode_csv", file.path(), "start_s: 2.5, duration_s: 4"), 1, 32000);
  const auto w = drain_all(*windowed);
  ASSERT_EQ(w.size(), 4u);  // records at 3, 4, 5, 6 s
  EXPECT_EQ(w[0].prompt.size(), 13u);
  EXPECT_EQ(w[0].arrival, 500'000'000);  // 3 s - start 2.5 s
  EXPECT_EQ(w[3].arrival, 3'500'000'000);
  auto capped = make_request_source(
      *parse_trace("prefill_decode_csv", file.path(), "max_requests: 3"), 1, 32000);
  EXPECT_EQ(drain_all(*capped).size(), 3u);
}

TEST(TraceReplay, AnEmptyWindowIsAnError) {
  TempTrace file("empty_window.csv", ten_second_trace());
  const auto spec = parse_trace("prefill_decode_csv", file.path(), "start_s: 60");
  ASSERT_TRUE(spec);
  try {
    make_request_source(*spec, 1, 32000);
    FAIL() << "no error for a window past the end";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(e.diagnostics()[0].problem.find("no record in the replay window from 60.000 s: "
                                              "the trace spans 9.000 s"),
              std::string::npos)
        << e.what();
  }
  TempTrace header_only("header_only.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n");
  EXPECT_THROW(
      make_request_source(*parse_trace("prefill_decode_csv", header_only.path(), ""), 1, 32000),
      config::ConfigError);
}

TEST(TraceReplay, TimeScaleStretchesGaps) {
  TempTrace file("scale.csv", ten_second_trace());
  auto source = make_request_source(
      *parse_trace("prefill_decode_csv", file.path(), "time_scale: 0.5"), 1, 32000);
  const auto r = drain_all(*source);
  ASSERT_EQ(r.size(), 10u);
  EXPECT_EQ(r[9].arrival, 4'500'000'000);  // 9 s at half the gaps
}

TEST(TraceReplay, LoopRepeatsTheWindowOneSpanLaterWithNewContent) {
  TempTrace file("loop.jsonl", mooncake_line("0", "600", "3", "[1, 2]") +
                                   mooncake_line("2000", "600", "3", "[1, 3]"));
  auto source = make_request_source(*parse_trace("mooncake", file.path(), "loop: 3"), 7, 32000);
  const auto r = drain_all(*source);
  ASSERT_EQ(r.size(), 6u);
  const std::vector<TimeNs> expected = {
      0, 2'000'000'000, 2'000'000'000, 4'000'000'000, 4'000'000'000, 6'000'000'000};
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].arrival, expected[i]) << i;
    EXPECT_EQ(r[i].id, i);
  }
  // Within a pass the shared id 1 gives the same first 512 tokens, then they differ.
  EXPECT_TRUE(std::equal(r[0].prompt.begin(), r[0].prompt.begin() + 512, r[1].prompt.begin()));
  EXPECT_FALSE(std::equal(r[0].prompt.begin() + 512, r[0].prompt.end(), r[1].prompt.begin() + 512));
  // A later pass is new content, not a repeat of the first.
  EXPECT_FALSE(std::equal(r[0].prompt.begin(), r[0].prompt.begin() + 512, r[2].prompt.begin()));
  // Outputs are unique per request.
  EXPECT_NE(r[0].output, r[1].output);
}

TEST(TraceReplay, SameSeedSameStream) {
  TempTrace file("seed.jsonl",
                 mooncake_line("0", "700", "3", "[1, 2]") + mooncake_line("10", "30", "4", "[5]"));
  const auto spec = parse_trace("mooncake", file.path(), "");
  auto a = drain_all(*make_request_source(*spec, 3, 32000));
  auto b = drain_all(*make_request_source(*spec, 3, 32000));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].output, b[i].output);
    EXPECT_EQ(a[i].arrival, b[i].arrival);
  }
}

TEST(TraceConfig, MissingFileIsAConfigErrorAtThePathKey) {
  std::vector<std::string> errors;
  const auto spec = parse_trace("mooncake", "/nonexistent/kvsim/trace.jsonl", "", &errors);
  EXPECT_FALSE(spec);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("test.yaml:1:"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("workload.trace.path"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("cannot read '/nonexistent/kvsim/trace.jsonl'"), std::string::npos)
      << errors[0];
}

TEST(TraceConfig, CsvHeaderWithoutAColumnIsRejectedAtLoad) {
  TempTrace file("bad_header.csv", "TIMESTAMP,Context,GeneratedTokens\n2023-11-16 18:15:46,1,1\n");
  std::vector<std::string> errors;
  EXPECT_FALSE(parse_trace("azure", file.path(), "", &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find(file.path() + ":1:1: workload.trace: azure trace: the header"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[0].find("lacks the column ContextTokens"), std::string::npos) << errors[0];
}

TEST(TraceConfig, UnknownKeysAndFormatsAreErrors) {
  TempTrace file("ok.jsonl", mooncake_line("0", "10", "1", "[1]"));
  std::vector<std::string> errors;
  EXPECT_FALSE(parse_trace("mooncake", file.path(), "time_scal: 2", &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("did you mean 'time_scale'"), std::string::npos) << errors[0];
  errors.clear();
  EXPECT_FALSE(parse_trace("mooncak", file.path(), "", &errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("mooncake"), std::string::npos) << errors[0];
}

TEST(TraceConfig, KindTraceIsImpliedByTheTraceMap) {
  TempTrace file("kind.jsonl", mooncake_line("0", "10", "1", "[1]"));
  const auto spec = parse_trace("mooncake", file.path(), "");
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->kind, "trace");
  EXPECT_EQ(workload_bounds(*spec).max_prompt_tokens, 0);  // unknown before streaming
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
