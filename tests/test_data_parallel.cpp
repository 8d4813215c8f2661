// Data-parallel attention with expert parallelism (parallel.data): the
// expert group's load from every rank's tokens, the all-to-all split over
// the device link and the network link by where the ranks sit, the step
// barrier that makes every rank wait for the slowest, and whole runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "devices/timing_model.hpp"
#include "models/model_resolve.hpp"
#include "models/moe_routing.hpp"
#include "models/step_ops.hpp"
#include "sim/engine/run_sink.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/data_parallel_group.hpp"
#include "sim/serve/data_parallel_metrics.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

DeviceSpec device(const std::string& name) {
  config::LoadContext ctx;
  DeviceSpec d =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/" + name + ".yaml", ctx);
  ctx.diagnostics.throw_if_any();
  return d;
}

ModelSpec model(const std::string& name) {
  return load_model_by_name(name, "", KVSIM_CONFIG_DIR);
}

const OpCost& op(const StepOpCosts& ops, OpKind k) {
  return ops[static_cast<size_t>(k)];
}

StepWork decodes(int64_t seqs, int64_t context) {
  StepWork w;
  for (int64_t i = 0; i < seqs; ++i) w.seqs.push_back({1, context, true});
  return w;
}

double moe_share(const ModelSpec& m) {
  int64_t moe = 0;
  for (int64_t l = 0; l < m.num_hidden_layers; ++l) moe += m.is_moe_layer(l);
  return static_cast<double>(moe) / static_cast<double>(m.num_hidden_layers);
}

void expect_same(const OpCost& a, const OpCost& b, const char* what) {
  EXPECT_EQ(a.present, b.present) << what;
  EXPECT_EQ(a.flops, b.flops) << what;
  EXPECT_EQ(a.mem_bytes, b.mem_bytes) << what;
  EXPECT_EQ(a.link_bytes, b.link_bytes) << what;
  EXPECT_EQ(a.network_bytes, b.network_bytes) << what;
  EXPECT_EQ(a.weight_bytes, b.weight_bytes) << what;
}

// D ranks of tp devices, each with the same batch of T tokens: the expert
// group routes D x T = T x ep / tp tokens, which is what a rank priced
// alone with ep > tp assumes of the replicas it stands for. So a rank's
// price with the group's tokens given is the lone replica's, op for op.
TEST(DataParallelPricing, EqualLoadPricesAsTheReplicaStandingForAll) {
  const ModelSpec m = model("deepseek-v3-w8a8");
  const StepShapeParams p{4, 2, 16, 0.0, 0};  // dp 4 x tp 4, EP16
  StepWork alone = decodes(8, 1000);
  StepWork ranked = alone;
  ranked.moe_tokens = 4.0 * 8.0;
  const StepOpCosts a = step_op_costs(m, alone, p);
  const StepOpCosts b = step_op_costs(m, ranked, p);
  for (size_t k = 0; k < kOpKindCount; ++k)
    expect_same(a[k], b[k], std::string(op_kind_name(static_cast<OpKind>(k))).c_str());
  const TimingModel tm(device("ascend-910c"), m, TimingModel::Params{4, 2, 16, 0.0, 0});
  EXPECT_EQ(tm.step_latency(alone), tm.step_latency(ranked));
  // A lighter group (the other ranks idle on a dummy token each) costs less.
  StepWork light = alone;
  light.moe_tokens = 8.0 + 3.0;
  EXPECT_LT(tm.step_latency(light), tm.step_latency(alone));
}

// DeepSeek-V3 at dp 32 x tp 1 on two 16-die nodes, 1,024 tokens in the
// group, uniform routing: the busiest expert rank serves G k / ep = 1024 x
// 8 / 32 = 256 assignments, receiving a hidden state (7168 x 2 bytes) for
// each, 1/32 from every rank: 15 of them on its node over HCCS, 16 on the
// other over RoCE. The per-layer figure is the mean over all 61 layers (58
// of them MoE).
TEST(DataParallelPricing, AllToAllBytesSplitByWhereTheRanksSit) {
  const ModelSpec m = model("deepseek-v3-w8a8");
  StepWork w = decodes(32, 500);
  w.moe_tokens = 1024;
  const double A = 1024.0 * static_cast<double>(m.moe.experts_per_token) / 32.0;
  EXPECT_DOUBLE_EQ(A, busiest_expert_rank(m.moe, 1024, 32, 0.0).assignments);
  const double bytes = A * static_cast<double>(m.hidden_size) *
                       static_cast<double>(m.activation_bytes()) / 32.0 * moe_share(m);
  const StepOpCosts two_nodes = step_op_costs(m, w, StepShapeParams{1, 2, 32, 0.0, 16});
  for (OpKind k : {OpKind::moe_dispatch, OpKind::moe_combine}) {
    EXPECT_DOUBLE_EQ(op(two_nodes, k).link_bytes, bytes * 15.0);
    EXPECT_DOUBLE_EQ(op(two_nodes, k).network_bytes, bytes * 16.0);
  }
  // All 32 on one node's device link (ep_ranks_per_node 0): 31 peers there.
  const StepOpCosts one_node = step_op_costs(m, w, StepShapeParams{1, 2, 32, 0.0, 0});
  EXPECT_DOUBLE_EQ(op(one_node, OpKind::moe_dispatch).link_bytes, bytes * 31.0);
  EXPECT_EQ(op(one_node, OpKind::moe_dispatch).network_bytes, 0.0);
  // The expert compute is the same wherever the ranks sit.
  expect_same(op(two_nodes, OpKind::mlp_gate_up), op(one_node, OpKind::mlp_gate_up), "gate_up");
}

// The all-to-all takes at least its bytes over each link's bandwidth (and
// its latency on the MoE layers' share), and across nodes it is slower than
// the same group on one node's HCCS.
TEST(DataParallelPricing, AllToAllTimeIsAtLeastBytesOverTheLinkTheyCross) {
  const ModelSpec m = model("deepseek-v3-w8a8");
  const DeviceSpec d = device("ascend-910c");
  ASSERT_GT(d.network_link_bandwidth, 0);
  StepWork w = decodes(32, 500);
  w.moe_tokens = 1024;
  const TimingModel cross(d, m, TimingModel::Params{1, 2, 32, 0.0, 16});
  const TimingModel local(d, m, TimingModel::Params{1, 2, 32, 0.0, 0});
  const OpCost c =
      op(step_op_costs(m, w, StepShapeParams{1, 2, 32, 0.0, 16}), OpKind::moe_dispatch);
  const OpCost l = op(step_op_costs(m, w, StepShapeParams{1, 2, 32, 0.0, 0}), OpKind::moe_dispatch);
  const double share = moe_share(m);
  const double roce = c.network_bytes / (static_cast<double>(d.network_link_bandwidth) / 1e9) +
                      share * static_cast<double>(d.network_link_latency);
  const double hccs = c.link_bytes / (static_cast<double>(d.device_link_bandwidth) / 1e9) +
                      share * static_cast<double>(d.device_link_latency);
  const auto t_cross = static_cast<double>(cross.op_duration(OpKind::moe_dispatch, c));
  EXPECT_GE(t_cross, roce - 1.0);
  EXPECT_GE(t_cross, hccs - 1.0);
  // RoCE (25 GB/s) carries about half the bytes HCCS (196 GB/s) would
  // carry whole: the network sets the op.
  EXPECT_GT(roce, hccs);
  const auto t_local = static_cast<double>(local.op_duration(OpKind::moe_dispatch, l));
  EXPECT_GT(t_cross, t_local);
  EXPECT_LE(t_cross, roce + share * static_cast<double>(d.kernel_launch) + 2.0);
  // A device without a network link cannot price a group over nodes.
  EXPECT_THROW(TimingModel(device("ascend-910b3"), m, TimingModel::Params{1, 2, 32, 0.0, 8}),
               std::invalid_argument);
}

// A rank for the barrier: a fixed price, counting what the group does to it.
class FakeRank final : public DataParallelRank {
 public:
  FakeRank(double tokens, TimeNs price, double drafts = 0)
      : tokens_(tokens), price_(price), drafts_(drafts) {}
  TimeNs price_step(double group_tokens, double group_draft_tokens) override {
    seen_group = group_tokens;
    seen_group_drafts = group_draft_tokens;
    return price_;
  }
  double step_tokens() const override { return tokens_; }
  double draft_tokens() const override { return drafts_; }
  int64_t step_seqs() const override { return static_cast<int64_t>(tokens_); }
  void launch_step(TimeNs step) override { launched.push_back(step); }
  void wake() override { ++woken; }
  double seen_group = -1, seen_group_drafts = -1;
  std::vector<TimeNs> launched;
  int woken = 0;

 private:
  double tokens_;
  TimeNs price_;
  double drafts_;
};

// Three ranks: two with batches priced 10 ms and 4 ms, one idle. Both busy
// ranks run the step for max(10, 4) = 10 ms; the group routes 6 + 2 tokens
// and the idle rank's dummy one; the ranks wait (10 - 10) + (10 - 4) + 10
// (idle) = 16 ms of the 3 x 10 ms, and the slowest is 10 / 7 of the mean.
// The idle rank, kicked during the step, is woken once when it ends.
TEST(DataParallelGroup, TheStepWaitsForTheSlowestRank) {
  Simulator sim;
  DataParallelGroup group(sim, 3);
  FakeRank a(6, 10 * kNsPerMs, 3), b(2, 4 * kNsPerMs, 2), idle(0, 1);
  group.attach(0, &a);
  group.attach(1, &b);
  group.attach(2, &idle);
  sim.schedule_at(0, 2, [&] { group.join(1); });
  sim.schedule_at(0, 2, [&] { group.join(0); });
  sim.schedule_at(1 * kNsPerMs, 2, [&] {
    EXPECT_TRUE(group.launched());
    group.defer(2);
  });
  sim.schedule_at(10 * kNsPerMs, 0, [&] {
    group.finished(0);
    EXPECT_EQ(idle.woken, 0) << "woken before the last rank's step ended";
    group.finished(1);
    EXPECT_FALSE(group.launched());
  });
  sim.run();
  ASSERT_EQ(a.launched.size(), 1u);
  ASSERT_EQ(b.launched.size(), 1u);
  EXPECT_EQ(a.launched[0], 10 * kNsPerMs);
  EXPECT_EQ(b.launched[0], 10 * kNsPerMs);
  EXPECT_TRUE(idle.launched.empty());
  EXPECT_EQ(a.seen_group, 9.0);
  EXPECT_EQ(b.seen_group, 9.0);
  // A drafter's one-token passes route the ranks' samplers and the dummy.
  EXPECT_EQ(a.seen_group_drafts, 3.0 + 2.0 + 1.0);
  EXPECT_EQ(b.seen_group_drafts, 6.0);
  EXPECT_EQ(idle.woken, 1);
  const DataParallelGroupMetrics& m = group.metrics();
  EXPECT_EQ(m.steps, 1);
  EXPECT_DOUBLE_EQ(m.wait_ns, 16.0 * kNsPerMs);
  EXPECT_DOUBLE_EQ(m.max_over_mean, 10.0 / 7.0);
  EXPECT_DOUBLE_EQ(m.per_rank[1].wait_ns, 6.0 * kNsPerMs);
  const DataParallelMetrics dm = data_parallel_metrics({&group});
  EXPECT_DOUBLE_EQ(dm.wait_fraction, 16.0 / 30.0);
  EXPECT_DOUBLE_EQ(dm.rank_mean_batch_max, 6.0);
  EXPECT_DOUBLE_EQ(dm.rank_mean_batch_min, 0.0);
}

// Equal prices: nobody waits, the slowest is the mean.
TEST(DataParallelGroup, EqualRanksWaitForNobody) {
  Simulator sim;
  DataParallelGroup group(sim, 2);
  FakeRank a(4, 5 * kNsPerMs), b(4, 5 * kNsPerMs);
  group.attach(0, &a);
  group.attach(1, &b);
  sim.schedule_at(0, 2, [&] {
    group.join(0);
    group.join(1);
  });
  sim.run();
  EXPECT_EQ(a.seen_group, 8.0);
  EXPECT_DOUBLE_EQ(group.metrics().wait_ns, 0.0);
  EXPECT_DOUBLE_EQ(group.metrics().max_over_mean, 1.0);
}

constexpr const char* kDpScenario = R"(name: dp
seed: 7
device: ascend-910c
model: qwen3-30b-a3b
parallel: {data: 4, tensor: 1}
kv_cache: {policy: paged, block_size: 128, memory_fraction: 0.9}
scheduler: {max_num_seqs: 32, max_batched_tokens: 2048, chunked_prefill: true}
workload:
  kind: synthetic
  requests: 120
  arrival: {process: poisson, rate_per_s: 20}
  input_tokens: {dist: lognormal, mean: 512, sigma: 0.5, min: 32, max: 2048}
  output_tokens: {dist: lognormal, mean: 128, sigma: 0.5, min: 8, max: 512}
)";

std::string run_json(const std::string& text, const std::vector<std::string>& sets = {}) {
  const ScenarioSpec s = load_scenario_text(text, "dp.yaml", KVSIM_CONFIG_DIR, sets);
  RunMetrics m = run_scenario(s, nullptr).metrics;
  m.sim.wall_s = 0;
  return metrics_to_json(m).dump(1);
}

// Four ranks of one die, experts over the four (EP4 from data x tensor):
// every request served, the ranks' steps shared (a group step for every
// busy instant), and the same bytes on a second run.
TEST(DataParallelRun, FourRanksShareTheirStepsDeterministically) {
  const ScenarioSpec s = load_scenario_text(kDpScenario, "dp.yaml", KVSIM_CONFIG_DIR);
  EXPECT_EQ(s.dp, 4);
  EXPECT_EQ(s.ep, 4);
  EXPECT_EQ(s.devices, 4);
  EXPECT_EQ(s.ep_ranks_per_node, 0);
  const std::string first = run_json(kDpScenario);
  EXPECT_EQ(first, run_json(kDpScenario));
  const auto j = nlohmann::json::parse(first);
  EXPECT_EQ(j["requests"]["completed"], 120);
  EXPECT_EQ(j["cluster"]["instances"], 4);
  const auto& dp = j["data_parallel"];
  EXPECT_EQ(dp["groups"], 1);
  EXPECT_EQ(dp["ranks"], 4);
  ASSERT_EQ(dp["per_rank"].size(), 4u);
  // Each rank ran in some of the group's steps, never in more.
  int64_t rank_steps = 0;
  for (const auto& r : dp["per_rank"]) {
    EXPECT_GT(r["steps"].get<int64_t>(), 0);
    EXPECT_LE(r["steps"].get<int64_t>(), dp["steps"].get<int64_t>());
    rank_steps += r["steps"].get<int64_t>();
  }
  EXPECT_EQ(rank_steps, j["sim"]["steps"].get<int64_t>());
  // Poisson arrivals split round-robin never balance exactly: ranks wait.
  EXPECT_GT(dp["wait_fraction"].get<double>(), 0.0);
  EXPECT_LT(dp["wait_fraction"].get<double>(), 1.0);
  EXPECT_GE(dp["slowest_over_mean"].get<double>(), 1.0);
}

// The arrivals steered to one rank (prefix_aware with a loose bound, one
// shared prefix: every request after the first finds it on the rank that
// computed it) against the even split: the busy rank sets every step and
// the others idle or wait through it, so the wait share and the slowest
// rank's lead over the mean grow.
TEST(DataParallelRun, ASkewedSplitWaitsForTheBusiestRank) {
  std::string even = kDpScenario;
  even.replace(even.find("kv_cache: {"), 11, "kv_cache: {prefix_caching: true, ");
  even += "  shared_prefix: {groups: 1, tokens: 384}\n";
  const std::string skewed = even +
                             "cluster:\n  router: {policy: prefix_aware, load_bound: 100}\n"
                             "  groups:\n  - {name: dp, count: 1}\n";
  const auto e = nlohmann::json::parse(run_json(even));
  const auto k = nlohmann::json::parse(run_json(skewed));
  EXPECT_EQ(e["requests"]["completed"], 120);
  EXPECT_EQ(k["requests"]["completed"], 120);
  EXPECT_EQ(e["cluster"]["router"], "round_robin");
  EXPECT_EQ(k["cluster"]["router"], "prefix_aware");
  EXPECT_GT(k["cluster"]["load_imbalance"].get<double>(), 2.0);
  EXPECT_GT(k["data_parallel"]["wait_fraction"].get<double>(),
            e["data_parallel"]["wait_fraction"].get<double>());
  EXPECT_GT(k["data_parallel"]["rank_mean_batch_max"].get<double>(),
            e["data_parallel"]["rank_mean_batch_max"].get<double>());
}

struct Rows final : RunSink {
  void request(const RequestRow& row) override { rows.push_back(row); }
  void timeline(const TimelineRow&) override {}
  std::vector<RequestRow> rows;
};

// Two ranks of one die, two requests at once (two closed-loop clients), one
// to each (round_robin), each prompt alone in its rank's first step: that
// step is a step of the group, so both first tokens come at the same time,
// the slower rank's price of its prefill with the group routing both
// prompts' tokens (TimingModel on that rank's work, moe_tokens the sum).
TEST(DataParallelRun, BothRanksFirstTokensWaitForTheSlowerPrefill) {
  const std::string text = R"(name: two
seed: 3
device: ascend-910c
model: qwen3-30b-a3b
parallel: {data: 2, tensor: 1}
kv_cache: {policy: paged, block_size: 128, memory_fraction: 0.9}
scheduler: {max_num_seqs: 8, max_batched_tokens: 4096}
workload:
  kind: synthetic
  requests: 2
  arrival: {process: closed, concurrency: 2}
  input_tokens: {dist: uniform, min: 64, max: 2048}
  output_tokens: {dist: constant, value: 4}
)";
  const ScenarioSpec s = load_scenario_text(text, "two.yaml", KVSIM_CONFIG_DIR);
  Rows sink;
  run_scenario(s, &sink);
  ASSERT_EQ(sink.rows.size(), 2u);
  const RequestRow& a = sink.rows[0];
  const RequestRow& b = sink.rows[1];
  ASSERT_EQ(a.arrival, 0);
  ASSERT_EQ(b.arrival, 0);
  ASSERT_NE(a.prompt_tokens, b.prompt_tokens) << "pick a seed with two lengths";
  const TimingModel tm(s.device, s.model, TimingModel::Params{1, s.kv.dtype_bytes(), 2, 0.0, 0});
  auto price = [&](int64_t prompt) {
    StepWork w;
    w.seqs.push_back({prompt, 0, true});
    w.moe_tokens = static_cast<double>(a.prompt_tokens + b.prompt_tokens);
    return tm.step_latency(w);
  };
  const TimeNs slower = std::max(price(a.prompt_tokens), price(b.prompt_tokens));
  EXPECT_NE(price(a.prompt_tokens), price(b.prompt_tokens));
  EXPECT_EQ(a.first_token, slower);
  EXPECT_EQ(b.first_token, slower);
}

// A dense model's ranks are independent replicas: no barrier.
TEST(DataParallelRun, DenseRanksRunAlone) {
  const std::string text = std::string(R"(name: dense
seed: 7
device: ascend-910b2
model: llama-3.2-1b
parallel: {devices: 4, data: 2}
kv_cache: {policy: paged, block_size: 64}
scheduler: {max_num_seqs: 16, max_batched_tokens: 2048}
workload:
  kind: synthetic
  requests: 20
  arrival: {process: poisson, rate_per_s: 20}
  input_tokens: {dist: uniform, min: 64, max: 256}
  output_tokens: {dist: uniform, min: 8, max: 32}
)");
  const ScenarioSpec s = load_scenario_text(text, "dense.yaml", KVSIM_CONFIG_DIR);
  EXPECT_EQ(s.tp, 2);
  EXPECT_EQ(s.ep, 1);
  const auto j = nlohmann::json::parse(run_json(text));
  EXPECT_EQ(j["requests"]["completed"], 20);
  EXPECT_EQ(j["cluster"]["instances"], 2);
  EXPECT_FALSE(j.contains("data_parallel"));
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
