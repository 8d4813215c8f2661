// A cluster run is as observable as one instance: timeline.csv holds a row
// per instance and one for the cluster at every row time (and they add
// up), the trace has each instance's steps, counters and KV transfers, the
// report charts the instances, the progress line hears from the cluster,
// and the summary says what each figure sums over.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "report_test_helpers.hpp"
#include "reports/cluster_charts.hpp"
#include "reports/gnuplot_chart.hpp"
#include "reports/run_series.hpp"
#include "sim/cluster/cluster_timeline.hpp"
#include "sim/scenario/run_scenario.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::scenario_from_text;

// A prefill/decode split (KV crosses HCCS) of a small model, a DRAM tier per
// prefill instance, and a global pool the prefill instances share.
std::string split_scenario(int prefill = 2, int decode = 1) {
  return fmt::format(R"(
name: cluster-observed
seed: 11
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {{policy: paged, block_size: 16, prefix_caching: true}}
kv_tiers:
  tiers:
    dram: {{capacity: 1GiB, read_bandwidth: 31.5GB/s, write_bandwidth: 31.5GB/s, latency: 10us}}
scheduler: {{max_batched_tokens: 4096}}
cluster:
  router: {{policy: round_robin}}
  decode_router: {{policy: least_loaded}}
  global_pool: {{capacity: 8GiB}}
  groups:
    p: {{role: prefill, count: {}}}
    d: {{role: decode, count: {}, kv_tiers: {{tiers: []}}}}
workload:
  kind: synthetic
  requests: 80
  arrival: {{process: poisson, rate_per_s: 20}}
  input_tokens: {{dist: uniform, min: 64, max: 512}}
  output_tokens: {{dist: uniform, min: 4, max: 48}}
  shared_prefix: {{groups: 3, tokens: 256, popularity: uniform}}
output: {{timeline_interval: 20ms}}
)",
                     prefill, decode);
}

std::vector<std::string> split_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (const char c : line) {
    if (c == ',') {
      out.push_back(cell);
      cell.clear();
    } else {
      cell += c;
    }
  }
  out.push_back(cell);
  return out;
}

struct Csv {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
};

Csv read_csv(const std::string& text) {
  Csv t;
  std::stringstream in(text);
  std::string line;
  std::getline(in, line);
  t.header = split_line(line);
  while (std::getline(in, line)) {
    const auto cells = split_line(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < t.header.size() && i < cells.size(); ++i) row[t.header[i]] = cells[i];
    t.rows.push_back(std::move(row));
  }
  return t;
}

double num(const std::map<std::string, std::string>& row, const std::string& column) {
  return std::stod(row.at(column));
}

class ClusterObserved : public testing::TempFolderTest {};

TEST_F(ClusterObserved, TimelineHasARowPerInstanceAndOneForTheClusterAtEveryTime) {
  const std::string scenario = write("split.yaml", split_scenario());
  const auto r = kvsim("run " + scenario + " --quiet --out " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Csv t = read_csv(read(path("out/timeline.csv")));
  ASSERT_GE(t.header.size(), 4u);
  EXPECT_EQ(t.header[0], "time_ms");
  EXPECT_EQ(t.header[1], "instance");
  for (const char* column :
       {"group", "role", "running", "waiting", "kv_used_bytes", "kv_capacity_bytes",
        "transfers_in_flight", "tier_blocks", "pool_blocks"})
    EXPECT_NE(std::find(t.header.begin(), t.header.end(), column), t.header.end()) << column;
  ASSERT_GT(t.rows.size(), 40u);
  // Every row time: instances 0, 1, 2, then the cluster, whose gauges and
  // step sums are the instances' added up.
  ASSERT_EQ(t.rows.size() % 4, 0u);
  double transfers = 0, pool = 0, tiers = 0, steps = 0;
  for (size_t at = 0; at < t.rows.size(); at += 4) {
    const auto& cluster = t.rows[at + 3];
    ASSERT_EQ(cluster.at("instance"), "cluster");
    double running = 0, kv = 0, step_tokens = 0;
    for (size_t i = 0; i < 3; ++i) {
      const auto& row = t.rows[at + i];
      EXPECT_EQ(row.at("instance"), std::to_string(i));
      EXPECT_EQ(row.at("time_ms"), cluster.at("time_ms"));
      EXPECT_EQ(row.at("group"), i < 2 ? "p" : "d");
      EXPECT_EQ(row.at("role"), i < 2 ? "prefill" : "decode");
      EXPECT_LE(num(row, "kv_used_bytes"), num(row, "kv_capacity_bytes"));
      running += num(row, "running");
      kv += num(row, "kv_used_bytes");
      step_tokens += num(row, "step_tokens");
    }
    EXPECT_EQ(num(cluster, "running"), running);
    EXPECT_EQ(num(cluster, "kv_used_bytes"), kv);
    EXPECT_EQ(num(cluster, "step_tokens"), step_tokens);
    transfers += num(cluster, "transfers_in_flight");
    pool = std::max(pool, num(cluster, "pool_blocks"));
    tiers = std::max(tiers, num(cluster, "tier_blocks"));
    steps += num(cluster, "steps");
  }
  EXPECT_GT(transfers, 0) << "the KV of 80 requests crossed to the decode instance";
  EXPECT_GT(pool, 0) << "the prefill instances put their blocks into the global pool";
  EXPECT_GT(steps, 0);
  (void)tiers;  // the DRAM tier fills only once the device pools evict
  // Byte-identical on a second run (the rows follow the one clock).
  const auto again = kvsim("run " + scenario + " --quiet --out " + path("again"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(read(path("out/timeline.csv")), read(path("again/timeline.csv")));
}

TEST_F(ClusterObserved, TraceHasStepsCountersAndTransfersPerInstance) {
  const std::string scenario = write("split.yaml", split_scenario());
  const auto r =
      kvsim("run " + scenario + " --quiet --out " + path("out") + " --trace " + path("t.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trace = nlohmann::json::parse(read(path("t.json")));
  std::map<int, std::string> processes;
  std::map<int, std::set<std::string>> kinds;  // per pid: "step", "counter", "PD transfer", ...
  for (const auto& e : trace["traceEvents"]) {
    const int pid = e["pid"].get<int>();
    const std::string ph = e["ph"].get<std::string>();
    if (ph == "M" && e["name"] == "process_name") processes[pid] = e["args"]["name"];
    if (ph == "C") kinds[pid].insert("counter:" + e["name"].get<std::string>());
    if (ph == "X") {
      kinds[pid].insert(e["cat"].get<std::string>());
      if (e["name"].get<std::string>().rfind("KV of request", 0) == 0) kinds[pid].insert("PD");
    }
  }
  // The cluster's process and one per instance, named by group and role.
  EXPECT_NE(processes[2].find("cluster: cluster-observed (3 instances)"), std::string::npos)
      << processes[2];
  EXPECT_EQ(processes[100], "instance 0: p (prefill, TP 1)");
  EXPECT_EQ(processes[102], "instance 2: d (decode, TP 1)");
  for (const int pid : {100, 101, 102}) {
    EXPECT_TRUE(kinds[pid].count("step")) << pid;
    EXPECT_TRUE(kinds[pid].count("counter:queue")) << pid;
    EXPECT_TRUE(kinds[pid].count("counter:KV in use, MiB")) << pid;
  }
  EXPECT_TRUE(kinds[100].count("PD") && kinds[101].count("PD"))
      << "the prefill instances send KV to the decode instance";
  EXPECT_TRUE(kinds[100].count("tier_load") || kinds[101].count("tier_load"))
      << "prefixes come back from the global pool";
  EXPECT_TRUE(kinds[2].count("counter:KV transfers in flight"));
  EXPECT_TRUE(kinds[2].count("counter:blocks below HBM"));
  EXPECT_EQ(trace["otherData"]["instances"], 3);
}

TEST_F(ClusterObserved, SummarySaysWhatEachFigureSumsOver) {
  const std::string scenario = write("split.yaml", split_scenario());
  const auto r = kvsim("run " + scenario + " --out " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The deployment, not the file's top-level tensor: 1 (nor "x1").
  EXPECT_NE(r.output.find("llama-3.2-1b on ascend-910b2, 3 instances x TP 1 (2 p, 1 d)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("KV cache, 3 instances together:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory per device, p (2 x TP 1):"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory per device, d (1 x TP 1):"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("memory per device:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("KV transfers, prefill to decode: 80 requests"), std::string::npos)
      << r.output;
  const std::string md = read(path("out/report.md"));
  EXPECT_NE(md.find("(3 instances x TP 1 (2 p, 1 d))"), std::string::npos) << md;
  EXPECT_EQ(md.find("tensor parallel"), std::string::npos) << md;
  EXPECT_NE(md.find("## Memory plan (per device of instance 0)"), std::string::npos);
  EXPECT_NE(md.find("| 2 | d | decode |"), std::string::npos) << md;
  const std::string html = read(path("out/report.html"));
  EXPECT_NE(html.find("(3 instances x TP 1 (2 p, 1 d))"), std::string::npos);
  EXPECT_EQ(html.find("tensor parallel"), std::string::npos);

  // Instances of two devices each: the summed KV figures are one device's
  // share of each instance, and the summary says so.
  const auto tp2 =
      kvsim("run " + scenario + " --out " + path("tp2") +
            " --set cluster.groups.p.parallel.tensor=2 --set cluster.groups.d.parallel.tensor=2");
  ASSERT_EQ(tp2.exit_code, 0) << tp2.output;
  EXPECT_NE(tp2.output.find("3 instances x TP 2 (2 p, 1 d)"), std::string::npos) << tp2.output;
  EXPECT_NE(tp2.output.find("KV cache, 3 instances together, one device's share of each:"),
            std::string::npos)
      << tp2.output;
  // Groups of different shapes are named one by one.
  const auto mixed = kvsim("run " + scenario + " --out " + path("mixed") +
                           " --set cluster.groups.p.parallel.tensor=2");
  ASSERT_EQ(mixed.exit_code, 0) << mixed.output;
  EXPECT_NE(mixed.output.find("2 p x TP 2 + 1 d x TP 1 (3 instances)"), std::string::npos)
      << mixed.output;
}

TEST_F(ClusterObserved, ReportChartsTheInstances) {
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not on PATH: report.html has no charts";
  const std::string scenario = write("split.yaml", split_scenario());
  ASSERT_EQ(kvsim("run " + scenario + " --quiet --out " + path("out")).exit_code, 0);
  const std::string html = read(path("out/report.html"));
  for (const char* caption :
       {"KV memory in use in all the instances&#39; pools",
        "Instance 0: KV in use against its pool", "Instance 2: running / waiting requests",
        "KV transfers between instances",
        "KV blocks in each instance&#39;s tiers (summed) and in the shared pool",
        "Requests per instance"})
    EXPECT_NE(html.find(caption), std::string::npos) << caption;
  // Many instances: the spread across them instead of a chart each.
  const std::string many = write("many.yaml", split_scenario(9, 3));
  ASSERT_EQ(kvsim("run " + many + " --quiet --out " + path("many")).exit_code, 0);
  const std::string many_html = read(path("many/report.html"));
  EXPECT_NE(many_html.find("KV in use per instance: the most and least loaded"), std::string::npos);
  EXPECT_EQ(many_html.find("Instance 0: KV in use"), std::string::npos);
}

// The series behind the charts: the cluster's totals over the run's real
// time span (not an empty chart whose axis ends at 1 ms), and a series per
// instance, bounded.
TEST(ClusterSeries, TheMemoryChartSpansTheRunAndEachInstanceHasItsSeries) {
  const ScenarioSpec s = scenario_from_text(split_scenario());
  RunSeries series;
  const ScenarioRunResult run = run_scenario(s, &series);
  ASSERT_TRUE(series.is_cluster());
  ASSERT_EQ(series.instance_series().size(), 3u);
  const auto charts = cluster_charts(run.metrics, {"cluster", &series});
  ASSERT_FALSE(charts.empty());
  const ChartSpec& kv = charts.front().first;
  ASSERT_FALSE(kv.series.empty());
  ASSERT_FALSE(kv.series[0].x.empty());
  EXPECT_GT(kv.series[0].x.back(), 0.5 * run.metrics.sim.simulated_s);
  EXPECT_TRUE(chart_has_signal(kv));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(chart_has_signal(instance_kv_chart(series, i))) << i;
    EXPECT_LE(series.instance_series()[i].buckets().size(), RunSeries::kMaxBuckets);
  }
}

// The progress line hears from a cluster: requests over all instances,
// running and waiting summed over them.
TEST(ClusterProgress, ReportsTheWholeCluster) {
  const ScenarioSpec s = scenario_from_text(R"(
name: cluster-progress
seed: 3
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16}
cluster: {groups: {a: {count: 2}}}
workload:
  kind: synthetic
  requests: 120
  arrival: {process: poisson, rate_per_s: 1}
  input_tokens: {dist: uniform, min: 32, max: 64}
  output_tokens: {dist: uniform, min: 150, max: 150}
)");
  std::vector<RunProgress> heard;
  const RunMetrics m =
      run_scenario(s, nullptr, [&](const RunProgress& p) { heard.push_back(p); }).metrics;
  ASSERT_FALSE(heard.empty());
  for (const RunProgress& p : heard) {
    EXPECT_EQ(p.instances, 2);
    EXPECT_LE(p.completed + p.rejected, p.arrived);
    EXPECT_LE(p.arrived, 120);
    EXPECT_GT(p.simulated, 0);
  }
  EXPECT_GT(heard.back().completed, 0);
  EXPECT_EQ(m.requests.completed, 120);
}

// Rows fold into interval buckets: a bucket is written when the clock
// leaves it, every instance at the bucket's last observation (an idle one
// repeating its state with no steps), the cluster last with the sums.
TEST(ClusterTimelineRows, BucketsRepeatIdleInstancesAndSumTheCluster) {
  struct Rows final : RunSink {
    std::vector<ClusterTimelineRow> rows;
    void request(const RequestRow&) override {}
    void timeline(const TimelineRow&) override {}
    void cluster_timeline(const ClusterTimelineRow& r) override { rows.push_back(r); }
  } sink;
  ClusterTimeline t(
      10, {{1, 100, true}, {2, 100, false}}, sink, [](size_t i) { return int64_t(i) + 5; },
      [] { return int64_t{7}; });
  TimelineRow a;
  a.time = 1;
  a.running = 2;
  a.blocks_used = 3;
  a.step_tokens = 40;
  a.steps = 1;
  t.instance_row(0, a);
  a.time = 4;
  a.step_tokens = 10;
  t.instance_row(0, a);
  TimelineRow b;
  b.time = 6;
  b.running = 1;
  b.blocks_used = 2;
  b.steps = 1;
  b.step_tokens = 5;
  t.instance_row(1, b);
  t.transfer_started(0, 1, 1000, 7);
  t.transfer_arrived(0, 1, 1000, 8);
  a.time = 25;  // the next bucket but one: the first is written
  a.step_tokens = 1;
  t.instance_row(0, a);
  ASSERT_EQ(sink.rows.size(), 3u);
  EXPECT_EQ(sink.rows[0].state.time, 8);  // the bucket's last observation
  EXPECT_EQ(sink.rows[0].state.step_tokens, 50);
  EXPECT_EQ(sink.rows[0].state.kv_used_bytes, 300);  // blocks x the instance's block bytes
  EXPECT_EQ(sink.rows[0].transfers_in_flight, 1);    // the most at once in the interval
  EXPECT_EQ(sink.rows[0].tier_blocks, 5);
  EXPECT_EQ(sink.rows[0].pool_blocks, -1);
  EXPECT_EQ(sink.rows[1].state.kv_used_bytes, 200);
  EXPECT_EQ(sink.rows[2].instance, -1);
  EXPECT_EQ(sink.rows[2].state.running, 3);
  EXPECT_EQ(sink.rows[2].state.step_tokens, 55);
  EXPECT_EQ(sink.rows[2].state.kv_used_bytes, 500);
  EXPECT_EQ(sink.rows[2].tier_blocks, 11);
  EXPECT_EQ(sink.rows[2].pool_blocks, 7);
  t.finish();
  ASSERT_EQ(sink.rows.size(), 6u);
  EXPECT_EQ(sink.rows[3].state.time, 25);
  EXPECT_EQ(sink.rows[3].state.step_tokens, 1);
  EXPECT_EQ(sink.rows[4].state.running, 1);  // idle: its state again, no steps
  EXPECT_EQ(sink.rows[4].state.steps, 0);
  EXPECT_EQ(sink.rows[5].transfers_in_flight, 0);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
