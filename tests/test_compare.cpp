// kvsim compare: the grid of variants, identical request streams across
// variants, ratios against the first variant, one atomic output folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "base/diagnostics.hpp"
#include "cli/studies/compare_report.hpp"
#include "cli/studies/compare_writers.hpp"
#include "report_test_helpers.hpp"
#include "reports/metrics_check.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;
using testing::TempFolderTest;
using Json = nlohmann::ordered_json;

TEST(CompareGrid, VaryParsesAndExpandsFirstAxisOutermost) {
  const VaryAxis a = parse_vary("kv_cache.block_size=64,128");
  EXPECT_EQ(a.key, "kv_cache.block_size");
  EXPECT_EQ(a.values, (std::vector<std::string>{"64", "128"}));
  const auto v = expand_variants({a, parse_vary("kv_cache.preemption=recompute,swap")});
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].label, "kv_cache.block_size=64 kv_cache.preemption=recompute");
  EXPECT_EQ(v[1].label, "kv_cache.block_size=64 kv_cache.preemption=swap");
  EXPECT_EQ(v[3].sets,
            (std::vector<std::string>{"kv_cache.block_size=128", "kv_cache.preemption=swap"}));
  EXPECT_EQ(v[0].folder, "01-kv_cache.block_size=64_kv_cache.preemption=recompute");
  for (const char* bad : {"novalues", "=1,2", "key=", "key=1,,2"})
    EXPECT_THROW(parse_vary(bad), config::ConfigError) << bad;
}

TEST(CompareGrid, RatiosAreAgainstTheFirstVariantAndUndefinedAgainstZero) {
  EXPECT_DOUBLE_EQ(*compare_ratio(30, 20), 1.5);
  EXPECT_FALSE(compare_ratio(3, 0).has_value());
}

// requests.csv rows by id (rows are written in completion order, which
// differs between variants): id -> arrival_ms,prompt_tokens,output_tokens,session,turn.
std::map<std::string, std::string> request_stream(const std::string& csv_path) {
  std::ifstream in(csv_path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("id,status,session,turn,arrival_ms,first_token_ms,finish_ms,prompt_tokens,"
                       "output_tokens,",
                       0),
            0u);
  std::map<std::string, std::string> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> c;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) c.push_back(cell);
    rows[c[0]] = c[4] + "," + c[7] + "," + c[8] + "," + c[2] + "," + c[3];
  }
  return rows;
}

class Compare : public TempFolderTest {};

TEST_F(Compare, VariantsReplayTheIdenticalRequestStream) {
  const std::string scenario = write("s.yaml", testing::small_scenario("cmp"));
  const auto r = run_compare(
      scenario, {"scheduler.max_num_seqs=32"},
      {parse_vary("kv_cache.prefix_caching=true,false"), parse_vary("kv_cache.block_size=32,128")},
      path("out"));
  ASSERT_EQ(r.variants.size(), 4u);
  const auto first = request_stream(path("out") + "/" + r.variants[0].folder + "/requests.csv");
  EXPECT_EQ(first.size(), 40u);
  for (const auto& v : r.variants) {
    EXPECT_EQ(request_stream(path("out") + "/" + v.folder + "/requests.csv"), first) << v.label;
  }
  // The variants did run differently: prefix caching off has no hits.
  EXPECT_GT(testing::pool_of(r.metrics[0]).prefix_hit_rate, 0.0);
  EXPECT_EQ(testing::pool_of(r.metrics[2]).prefix_hit_rate, 0.0);
  EXPECT_EQ(testing::pool_of(r.metrics[1]).block_size, 128);

  for (const char* f : {"compare.json", "compare.csv", "compare.md", "compare.html"})
    EXPECT_TRUE(fs::exists(path("out") + "/" + f)) << f;
  const Json j = read_json_file(path("out") + "/compare.json");
  ASSERT_EQ(j["variants"].size(), 4u);
  EXPECT_EQ(j["sets"][0], "scheduler.max_num_seqs=32");
  EXPECT_DOUBLE_EQ(j["variants"][0]["ratio"]["latency_ms.ttft.p99"].get<double>(), 1.0);
  const double ttft0 = j["variants"][0]["metrics"]["latency_ms.ttft.p99"].get<double>();
  const double ttft2 = j["variants"][2]["metrics"]["latency_ms.ttft.p99"].get<double>();
  EXPECT_DOUBLE_EQ(j["variants"][2]["ratio"]["latency_ms.ttft.p99"].get<double>(), ttft2 / ttft0);
  EXPECT_DOUBLE_EQ(ttft2, r.metrics[2].latency_ms.ttft.p99);
  // Nothing temporary left beside or inside the output.
  for (const auto& e : fs::recursive_directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

TEST_F(Compare, CommandLineWritesEverythingAndBadInputLeavesNoFolder) {
  const std::string scenario = write("s.yaml", testing::small_scenario("cmp-cli", 20));
  auto r = kvsim("compare " + scenario + " --vary kv_cache.preemption=recompute,swap --out " +
                 path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kv_cache.preemption=swap"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(path("out") + "/02-kv_cache.preemption=swap/report.html"));
  const std::string md = read(path("out") + "/compare.md");
  EXPECT_NE(md.find("## Ratios against kv_cache.preemption=recompute"), std::string::npos);

  // A value the scenario rejects: exit 2 naming --set, and no folder at all.
  r = kvsim("compare " + scenario + " --vary kv_cache.block_size=64,banana --out " + path("bad"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("kv_cache.block_size"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("bad")));
  r = kvsim("compare " + scenario + " --vary nonsense --out " + path("bad"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--vary:1:1: vary: 'nonsense' is not KEY=VALUES"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(path("bad")));
}

// compare.csv carries each value as metrics.json has it (no rounding to a
// few digits), so scripts reading it get the same numbers.
// An axis of offered load (workload.arrival.rate_per_s) gets the latency
// against throughput chart.
TEST_F(Compare, ARateAxisDrawsLatencyAgainstThroughput) {
  const std::string scenario = write("s.yaml", testing::small_scenario("cmp-rate", 20));
  (void)run_compare(scenario, {}, {parse_vary("workload.arrival.rate_per_s=2,8")}, path("out"));
  std::ifstream in(path("out") + "/compare.html");
  const std::string page((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(page.find("One point per workload.arrival.rate_per_s (2, 8)"), std::string::npos);
  // Not for an axis that is no rate.
  (void)run_compare(scenario, {}, {parse_vary("kv_cache.block_size=32,64")}, path("out2"));
  std::ifstream other(path("out2") + "/compare.html");
  const std::string page2((std::istreambuf_iterator<char>(other)), {});
  EXPECT_EQ(page2.find("One point per"), std::string::npos);
}

// Named variants set several keys at once and form the first axis.
TEST_F(Compare, NamedVariantsSetTheirKeysTogether) {
  const std::string scenario = write("s.yaml", testing::small_scenario("cmp-named", 20));
  const VaryAxis named = parse_named_variants(
      {"small: kv_cache.block_size=32; scheduler.max_num_seqs=4", "large: kv_cache.block_size=64"});
  const CompareResult r = run_compare(scenario, {}, {named, parse_vary("seed=1,2")}, path("out"));
  ASSERT_EQ(r.variants.size(), 4u);
  EXPECT_EQ(r.variants[0].label, "small seed=1");
  EXPECT_EQ(r.variants[0].sets, (std::vector<std::string>{"kv_cache.block_size=32",
                                                          "scheduler.max_num_seqs=4", "seed=1"}));
  EXPECT_EQ(r.variants[3].short_label, "large 2");
  EXPECT_EQ(r.variants[1].folder, "02-small_seed=2");
  EXPECT_EQ(metrics_to_json(r.metrics[0])["kv_cache"]["block_size"], 32);
  EXPECT_EQ(metrics_to_json(r.metrics[2])["kv_cache"]["block_size"], 64);
}

TEST_F(Compare, CsvValuesReadBackAsTheMetricsAtFullPrecision) {
  const std::string scenario = write("s.yaml", testing::small_scenario("cmp-csv", 20));
  const CompareResult r =
      run_compare(scenario, {}, {parse_vary("kv_cache.block_size=32,64")}, path("out"));
  std::ifstream in(path("out") + "/compare.csv");
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  std::vector<std::string> names, cells;
  std::stringstream hs(header), rs(row);
  for (std::string c; std::getline(hs, c, ',');) names.push_back(c);
  for (std::string c; std::getline(rs, c, ',');) cells.push_back(c);
  if (row.ends_with(",")) cells.emplace_back();  // a last ratio with no baseline
  ASSERT_EQ(names.size(), cells.size());
  const Json metrics = metrics_to_json(r.metrics[0]);
  int checked = 0;
  for (size_t i = 2; i < names.size(); ++i) {
    if (names[i].starts_with("ratio.")) continue;
    const auto v = metric_value(metrics, names[i]);
    ASSERT_TRUE(v) << names[i];
    EXPECT_EQ(std::stod(cells[i]), *v) << names[i] << " written as " << cells[i];
    ++checked;
  }
  EXPECT_GT(checked, 3);
}

TEST_F(Compare, UserStringsAreEscapedInCompareHtml) {
  std::string yaml = testing::small_scenario("x", 10);
  yaml.replace(0, yaml.find('\n'), "name: \"<script>alert(1)</script>\"");
  const std::string scenario = write("evil.yaml", yaml);
  run_compare(scenario, {}, {parse_vary("kv_cache.block_size=32,64")}, path("out"));
  const std::string html = read(path("out") + "/compare.html");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("Comparison: &lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
