// The timing model: roofline per op against hand arithmetic, the step graph's
// critical path, and analytic bounds (DESIGN practice 12: simulated time >=
// bytes / bandwidth). A hand-made device and model keep the figures round and
// the tests independent of the shipped files.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "devices/critical_path_memo.hpp"
#include "devices/device_family.hpp"
#include "devices/timing_model.hpp"
#include "tests/round_specs.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr size_t idx(OpKind k) {
  return static_cast<size_t>(k);
}
constexpr size_t idx(OpClass c) {
  return static_cast<size_t>(c);
}

// The shared round device with attention's efficiencies of its own, so a
// test can tell attention's share of a step from the matrix products'.
DeviceSpec round_device() {
  DeviceSpec d = testing::round_device();
  d.compute_efficiency.fill(1.0);
  d.memory_efficiency.fill(1.0);
  d.compute_efficiency[idx(OpClass::gemm)] = 0.5;
  d.memory_efficiency[idx(OpClass::gemm)] = 0.8;
  d.compute_efficiency[idx(OpClass::attention)] = 0.5;
  d.memory_efficiency[idx(OpClass::attention)] = 0.5;
  return d;
}

ModelSpec tiny_model(int64_t layers = 4) {
  return testing::round_model(layers);
}

// Every kind in program order, with no data edges at all: only the engines'
// program order links ops. Lets a test pick exactly which ops run.
StepDependencies unlinked_ops() {
  StepDependencies d;
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    if (kind <= OpKind::kv_copy) {
      d.pre_ops.push_back(kind);
    } else if (kind <= OpKind::mlp_allreduce) {
      d.layer_ops.push_back(kind);
    } else {
      d.post_ops.push_back(kind);
    }
  }
  d.layer_entry = d.layer_ops.front();
  d.layer_exit = d.layer_ops.back();
  return d;
}

// The same ops as one chain: each op depends on the previous one (the pre
// ops all feed the first layer op).
StepDependencies chained_ops() {
  StepDependencies d = unlinked_ops();
  // Pre ops cannot depend on each other in StepDependencies; each feeds the
  // first layer.
  for (OpKind pre : d.pre_ops) d.pre_to_first_layer.emplace_back(pre, d.layer_ops.front());
  for (size_t i = 0; i + 1 < d.layer_ops.size(); ++i)
    d.layer_edges.emplace_back(d.layer_ops[i], d.layer_ops[i + 1]);
  d.last_layer_to_post.emplace_back(d.layer_ops.back(), d.post_ops.front());
  for (size_t i = 0; i + 1 < d.post_ops.size(); ++i)
    d.post_edges.emplace_back(d.post_ops[i], d.post_ops[i + 1]);
  return d;
}

OpCost cost(double flops, double mem, double link = 0, double host = 0) {
  return OpCost{flops, mem, link, host, true};
}

TEST(OpDuration, BigGemmIsComputeBound) {
  const TimingModel tm(round_device(), tiny_model(), {});
  const double n = 8192;
  const OpCost gemm = cost(2 * n * n * n, 3 * n * n * 2);  // C = A B, fp16 A, B, C
  // Compute: 2 * 8192^3 / (100 TFLOPS * 0.5) = 21,990,232.6 ns;
  // memory: 402,653,184 B / (1 TB/s * 0.8) = 503,316.5 ns.
  const double compute_ns = 2 * n * n * n / (100e12 * 0.5) * 1e9;
  const double memory_ns = 3 * n * n * 2 / (1e12 * 0.8) * 1e9;
  ASSERT_GT(compute_ns, memory_ns);
  EXPECT_EQ(tm.op_duration(OpKind::mlp_gate_up, gemm),
            static_cast<TimeNs>(std::ceil(compute_ns)) + 2'000);
  EXPECT_EQ(tm.op_duration(OpKind::mlp_gate_up, gemm), 21'990'233 + 2'000);
}

TEST(OpDuration, W8a8ProjectionsUseTheInt8CubeButAttentionDoesNot) {
  ModelSpec m = tiny_model();
  m.weights_dtype = "w8a8";
  const TimingModel fp16(round_device(), tiny_model(), {});
  const TimingModel int8(round_device(), m, {});
  const OpCost big = cost(1e12, 1e6);
  // 1e12 / (100e12 * 0.5) = 20 ms at fp16; twice the rate at int8.
  EXPECT_EQ(fp16.op_duration(OpKind::qkv_proj, big), 20'000'000 + 2'000);
  EXPECT_EQ(int8.op_duration(OpKind::qkv_proj, big), 10'000'000 + 2'000);
  EXPECT_EQ(int8.op_duration(OpKind::attention, big), fp16.op_duration(OpKind::attention, big));
}

TEST(OpDuration, DecodeAttentionIsMemoryBound) {
  const TimingModel tm(round_device(), tiny_model(), {});
  // 32 sequences decoding one token over 4096 cached tokens, 4 KV heads of
  // 64 at 2 bytes: K and V read once.
  const double batch = 32, ctx = 4096, kv_heads = 4, q_heads = 16, head_dim = 64;
  const double kv_bytes = batch * ctx * 2 * kv_heads * head_dim * 2;  // 134,217,728 B
  const double flops = 4 * batch * q_heads * head_dim * ctx;          // QK^T and PV
  const double memory_ns = kv_bytes / (1e12 * 0.5) * 1e9;             // 268,435.456 ns
  const double compute_ns = flops / (100e12 * 0.5) * 1e9;             // 10,737.4 ns
  ASSERT_GT(memory_ns, 10 * compute_ns);
  EXPECT_EQ(tm.op_duration(OpKind::attention, cost(flops, kv_bytes)), 268'436 + 2'000);
}

TEST(OpDuration, LinksHostAndAbsentOps) {
  const TimingModel tm(round_device(), tiny_model(), {.tp = 2});
  // 1 MB over 100 GB/s = 10 us, plus the 10 us collective latency, plus launch.
  EXPECT_EQ(tm.op_duration(OpKind::attn_allreduce, cost(0, 0, 1e6)), 10'000 + 10'000 + 2'000);
  // 25 MB over a 25 GB/s host link = 1 ms; its device-memory side is faster.
  EXPECT_EQ(tm.op_duration(OpKind::swap_in, cost(0, 25e6, 0, 25e6)), 1'000'000 + 2'000);
  // A present op with no work still pays its launch; an absent op costs nothing.
  EXPECT_EQ(tm.op_duration(OpKind::sampling, cost(0, 0)), 2'000);
  EXPECT_EQ(tm.op_duration(OpKind::sampling, OpCost{1e12, 1e12, 0, 0, false}), 0);
  // Elementwise ops run at the vector rate: 1e9 FLOP / 10 TFLOPS = 100 us.
  EXPECT_EQ(tm.op_duration(OpKind::rope, cost(1e9, 0)), 100'000 + 2'000);
}

// An op on 3 of 4 layers (a MoE all-to-all after one dense layer) carries
// the mean over all layers and pays its latency and launch on 3 of them:
// 0.75 x (ceil(1 MB / 0.75 over 100 GB/s + 10 us latency) + 2 us launch)
// = 0.75 x (23,334 + 2,000) = 19,000.5, rounded to 19,001 ns.
TEST(OpDuration, AnOpOnSomeLayersPaysItsFixedCostsOnThoseOnly) {
  const TimingModel tm(round_device(), tiny_model(), {.tp = 2});
  OpCost mean = cost(0, 0, 1e6);
  mean.layer_share = 0.75;
  EXPECT_EQ(tm.op_duration(OpKind::moe_dispatch, mean), 19'001);
  EXPECT_LT(tm.op_duration(OpKind::moe_dispatch, mean),
            tm.op_duration(OpKind::moe_dispatch, cost(0, 0, 1e6)));
}

TEST(CriticalPath, ASingleLayerChainIsTheSumOfItsOps) {
  const TimingModel tm(round_device(), tiny_model(1), {.tp = 2}, chained_ops());
  StepOpCosts costs{};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> amount(1e6, 1e9);
  TimeNs sum = 0;
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    if (kind == OpKind::swap_in || kind == OpKind::swap_out || kind == OpKind::kv_copy) continue;
    costs[k] =
        cost(amount(rng), amount(rng) / 100,
             accelerator_family().engine_of(kind) == Engine::device_link ? amount(rng) / 1000 : 0);
    sum += tm.op_duration(kind, costs[k]);
  }
  const StepTiming t = tm.price_costs(costs);
  EXPECT_EQ(t.critical_path, sum);
  EXPECT_EQ(t.latency, std::max(t.critical_path, t.memory_floor) + 100'000);
}

TEST(CriticalPath, TwoIndependentOpsOnOneEngineSerialise) {
  const TimingModel tm(round_device(), tiny_model(1), {}, unlinked_ops());
  StepOpCosts costs{};
  costs[idx(OpKind::qkv_proj)] = cost(5e9, 1e6);  // matrix: 100 us + launch
  costs[idx(OpKind::o_proj)] = cost(1e10, 1e6);   // matrix: 200 us + launch
  const TimeNs qkv = tm.op_duration(OpKind::qkv_proj, costs[idx(OpKind::qkv_proj)]);
  const TimeNs o = tm.op_duration(OpKind::o_proj, costs[idx(OpKind::o_proj)]);
  EXPECT_EQ(tm.price_costs(costs).critical_path, qkv + o);

  // The same two amounts on different engines overlap: the longer one wins.
  StepOpCosts split{};
  split[idx(OpKind::o_proj)] = costs[idx(OpKind::o_proj)];
  split[idx(OpKind::input_norm)] = cost(1e9, 1e6);  // vector: 100 us + launch
  const TimeNs norm = tm.op_duration(OpKind::input_norm, split[idx(OpKind::input_norm)]);
  EXPECT_EQ(tm.price_costs(split).critical_path, std::max(o, norm));
  EXPECT_LT(tm.price_costs(split).critical_path, o + norm);
}

TEST(CriticalPath, PerLayerOpsRepeatOverTheLayers) {
  const int64_t layers = 6;
  const TimingModel tm(round_device(), tiny_model(layers), {}, chained_ops());
  StepOpCosts costs{};
  costs[idx(OpKind::mlp_down)] = cost(5e9, 1e6);
  costs[idx(OpKind::lm_head)] = cost(5e9, 1e6);
  const TimeNs down = tm.op_duration(OpKind::mlp_down, costs[idx(OpKind::mlp_down)]);
  const TimeNs head = tm.op_duration(OpKind::lm_head, costs[idx(OpKind::lm_head)]);
  const StepTiming t = tm.price_costs(costs);
  EXPECT_EQ(t.op_time[idx(OpKind::mlp_down)], layers * down);
  EXPECT_EQ(t.op_time[idx(OpKind::lm_head)], head);
  EXPECT_EQ(t.critical_path, layers * down + head);
  EXPECT_DOUBLE_EQ(t.flops, 5e9 * (layers + 1));
  EXPECT_DOUBLE_EQ(t.mem_bytes, 1e6 * (layers + 1));
}

TEST(CriticalPath, MemoryFloorBindsWhenEnginesOverlap) {
  // Two ops on different engines, each alone under its own roofline, whose
  // bytes together exceed what the shared memory can move in that time.
  DeviceSpec d = round_device();
  d.kernel_launch = 0;
  const TimingModel tm(d, tiny_model(1), {}, unlinked_ops());
  StepOpCosts costs{};
  costs[idx(OpKind::input_norm)] = cost(0, 1e8);  // vector: 100 us
  costs[idx(OpKind::kv_copy)] = cost(0, 1e8);     // dma: 100 us
  const StepTiming t = tm.price_costs(costs);
  EXPECT_EQ(t.critical_path, 100'000);
  EXPECT_EQ(t.memory_floor, 200'000);
  EXPECT_EQ(t.latency, 200'000 + d.step_overhead);
}

TEST(CriticalPath, EmptyStepCostsNothing) {
  const TimingModel tm(round_device(), tiny_model(), {});
  const StepTiming t = tm.price(StepWork{});
  EXPECT_EQ(t.latency, 0);
  EXPECT_EQ(t.critical_path, 0);
  EXPECT_EQ(t.memory_floor, 0);
}

TEST(TimingModelConstruction, RejectsWhatCannotBeTimed) {
  EXPECT_THROW(TimingModel(round_device(), tiny_model(), {.tp = 16}), std::invalid_argument);
  EXPECT_THROW(TimingModel(round_device(), tiny_model(), {.tp = 0}), std::invalid_argument);
  EXPECT_THROW(TimingModel(round_device(), tiny_model(0), {}), std::invalid_argument);
  DeviceSpec broken = round_device();
  broken.memory_bandwidth = 0;
  EXPECT_THROW(TimingModel(broken, tiny_model(), {}), std::invalid_argument);
  broken = round_device();
  broken.memory_efficiency[idx(OpClass::transfer)] = 0;
  EXPECT_THROW(TimingModel(broken, tiny_model(), {}), std::invalid_argument);

  StepDependencies missing = unlinked_ops();
  missing.post_ops.pop_back();
  EXPECT_THROW(TimingModel(round_device(), tiny_model(), {}, missing), std::logic_error);
  // o_proj -> qkv_proj against the matrix engine's program order: a cycle.
  StepDependencies cycle = unlinked_ops();
  cycle.layer_edges.emplace_back(OpKind::o_proj, OpKind::qkv_proj);
  EXPECT_THROW(TimingModel(round_device(), tiny_model(), {}, cycle), std::logic_error);
}

// ---- with the model's own op costs and dependencies ------------------------

StepWork random_batch(std::mt19937& rng, int mode) {
  StepWork w;
  std::uniform_int_distribution<int> count(1, 24);
  std::uniform_int_distribution<int64_t> prompt(16, 2048);
  std::uniform_int_distribution<int64_t> context(1, 16384);
  const int n = count(rng);
  for (int i = 0; i < n; ++i) {
    const bool prefill = mode == 0 || (mode == 2 && i % 3 == 0);
    if (prefill) {
      w.seqs.push_back({prompt(rng), 0, true});
    } else {
      w.seqs.push_back({1, context(rng), true});
    }
  }
  return w;
}

TEST(StepPricing, NeverFasterThanItsBytesOverPeakBandwidth) {
  const ModelSpec model = tiny_model();
  std::mt19937 rng(2024);
  for (int64_t tp : {1, 2, 4}) {
    const TimingModel tm(round_device(), model, {.tp = tp});
    for (int mode = 0; mode < 3; ++mode) {
      for (int trial = 0; trial < 20; ++trial) {
        SCOPED_TRACE(::testing::Message() << "tp " << tp << " mode " << mode << " trial " << trial);
        const StepWork w = random_batch(rng, mode);
        const StepTiming t = tm.price(w);
        // The step's bytes, recounted from the model's costs independently.
        const StepOpCosts costs = step_op_costs(model, w, {tp, 2});
        double bytes = 0;
        for (size_t k = 0; k < kOpKindCount; ++k) {
          if (!costs[k].present) continue;
          const double copies =
              op_is_per_layer(static_cast<OpKind>(k)) ? double(model.num_hidden_layers) : 1.0;
          bytes += costs[k].mem_bytes * copies;
        }
        ASSERT_GT(bytes, 0);
        EXPECT_NEAR(t.mem_bytes, bytes, bytes * 1e-12);
        EXPECT_GE(static_cast<double>(t.latency), bytes / 1e12 * 1e9);
        EXPECT_GE(t.latency, t.critical_path + 100'000);
        EXPECT_GE(t.latency, t.memory_floor + 100'000);
        // Every engine is an in-order stream, so its ops lie on one path:
        // the critical path is at least any single engine's busy time.
        std::array<TimeNs, kEngineCount> busy{};
        for (size_t k = 0; k < kOpKindCount; ++k)
          busy[static_cast<size_t>(accelerator_family().engine_of(static_cast<OpKind>(k)))] +=
              t.op_time[k];
        for (TimeNs b : busy) EXPECT_GE(t.critical_path, b);
        TimeNs total = 0;
        for (TimeNs x : t.op_time) total += x;
        EXPECT_LE(t.critical_path, total);
      }
    }
  }
}

TEST(StepPricing, OneLayerAtTp1IsAChainThroughTheModelsGraph) {
  // The model's data dependencies make one decoder layer a chain (norm ->
  // projections -> RoPE -> store -> attention -> ... -> MLP), fed by the
  // embedding and feeding the head: with no swaps the critical path is
  // every op's duration added up.
  const ModelSpec model = tiny_model(1);
  const TimingModel tm(round_device(), model, {.tp = 1});
  StepWork w;
  w.seqs.push_back({1, 3000, true});
  w.seqs.push_back({200, 0, true});
  const StepOpCosts costs = step_op_costs(model, w, {1, 2});
  TimeNs sum = 0;
  for (size_t k = 0; k < kOpKindCount; ++k) sum += tm.op_duration(static_cast<OpKind>(k), costs[k]);
  const StepTiming t = tm.price(w);
  EXPECT_GT(sum, 0);
  EXPECT_EQ(t.critical_path, sum);
}

TEST(StepPricing, DecodeLatencyGrowsWithContext) {
  const TimingModel tm(round_device(), tiny_model(), {});
  TimeNs previous = 0;
  for (int64_t ctx : {256, 1024, 4096, 16384, 65536}) {
    StepWork w;
    for (int i = 0; i < 16; ++i) w.seqs.push_back({1, ctx, true});
    const StepTiming t = tm.price(w);
    EXPECT_GT(t.latency, previous) << "context " << ctx;
    EXPECT_GT(t.op_time[idx(OpKind::attention)], 0);
    previous = t.latency;
  }
}

TEST(StepPricing, TensorParallelismAddsAllReduceTime) {
  StepWork w;
  for (int i = 0; i < 8; ++i) w.seqs.push_back({1, 1000, true});
  const StepTiming tp1 = TimingModel(round_device(), tiny_model(), {.tp = 1}).price(w);
  const StepTiming tp2 = TimingModel(round_device(), tiny_model(), {.tp = 2}).price(w);
  EXPECT_EQ(tp1.op_time[idx(OpKind::attn_allreduce)], 0);
  EXPECT_EQ(tp1.op_time[idx(OpKind::mlp_allreduce)], 0);
  EXPECT_GT(tp2.op_time[idx(OpKind::attn_allreduce)], 0);
  EXPECT_GT(tp2.op_time[idx(OpKind::mlp_allreduce)], 0);
  // Each all-reduce pays at least the link latency, once per layer.
  EXPECT_GE(tp2.op_time[idx(OpKind::attn_allreduce)], 4 * (10'000 + 2'000));
}

TEST(StepPricing, ShippedDeviceFilePricesADecodeStep) {
  config::LoadContext ctx;
  const DeviceSpec d =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/ascend-910b2.yaml", ctx);
  ASSERT_TRUE(ctx.diagnostics.empty());
  const TimingModel tm(d, tiny_model(), {.tp = 8});
  StepWork w;
  w.seqs.push_back({1, 4096, true});
  const StepTiming t = tm.price(w);
  EXPECT_GE(t.latency, d.step_overhead + t.critical_path);
  EXPECT_GT(t.critical_path, 0);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// The identical-layer skip in longest_path() must give exactly the full
// dynamic programme's answer, whatever the op durations.
TEST(CriticalPath, LayerSkipEqualsTheFullLongestPath) {
  std::mt19937_64 rng(12345);
  for (int64_t layers : {1, 2, 3, 5, 32, 64}) {
    for (int64_t tp : {1, 2}) {
      const TimingModel tm(round_device(), tiny_model(layers), {.tp = tp});
      for (int trial = 0; trial < 200; ++trial) {
        std::array<TimeNs, kOpKindCount> d{};
        for (auto& x : d) x = (rng() % 4 == 0) ? 0 : static_cast<TimeNs>(rng() % 100000);
        ASSERT_EQ(tm.longest_path(d, true), tm.longest_path(d, false))
            << "layers=" << layers << " tp=" << tp << " trial=" << trial;
      }
    }
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// The remembered longest path must equal the full one for any order of
// steps: attention growing slowly (the decode case), jumping back and
// forth, and the other ops' durations switching between a few batch shapes.
TEST(CriticalPath, MemoEqualsTheFullLongestPath) {
  std::mt19937_64 rng(777);
  for (int64_t layers : {1, 3, 32}) {
    for (int64_t tp : {1, 2}) {
      const TimingModel tm(round_device(), tiny_model(layers), {.tp = tp});
      const auto attention = static_cast<size_t>(OpKind::attention);
      CriticalPathMemo memo(OpKind::attention, layers);
      std::vector<std::array<TimeNs, kOpKindCount>> shapes(24);
      for (auto& d : shapes)
        for (auto& x : d) x = (rng() % 4 == 0) ? 0 : static_cast<TimeNs>(rng() % 3000);
      std::vector<TimeNs> attention_of(shapes.size(), 0);
      int64_t hits = 0;
      for (int step = 0; step < 4000; ++step) {
        const size_t s = rng() % 8 == 0 ? rng() % shapes.size() : static_cast<size_t>(step / 200);
        TimeNs& a = attention_of[s % shapes.size()];
        a = rng() % 50 == 0 ? static_cast<TimeNs>(rng() % 6000)
                            : a + static_cast<TimeNs>(rng() % 7);
        auto d = shapes[s % shapes.size()];
        d[attention] = a;
        bool computed = false;
        const TimeNs got = memo.critical_path(d, [&](const auto& x) {
          computed = true;
          return tm.longest_path(x, false);
        });
        ASSERT_EQ(got, tm.longest_path(d, false))
            << "layers=" << layers << " tp=" << tp << " step=" << step;
        hits += computed ? 0 : 1;
      }
      EXPECT_GT(hits, 0);
    }
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// A ticket answers without hashing the other durations only while its
// entry holds them: over many shapes (more than the memo has entries, so
// entries are filled anew under old tickets) every remembered answer is
// the full longest path's, and some steps are answered that way.
TEST(CriticalPath, TicketAnswersAsTheFullLongestPath) {
  std::mt19937_64 rng(4711);
  for (int64_t layers : {1, 32}) {
    const TimingModel tm(round_device(), tiny_model(layers), {.tp = 2});
    const auto attention = static_cast<size_t>(OpKind::attention);
    CriticalPathMemo memo(OpKind::attention, layers);
    std::vector<std::array<TimeNs, kOpKindCount>> shapes(200);
    for (auto& d : shapes)
      for (auto& x : d) x = (rng() % 4 == 0) ? 0 : static_cast<TimeNs>(rng() % 3000);
    std::vector<CriticalPathMemo::Ticket> tickets(shapes.size());
    std::vector<TimeNs> attention_of(shapes.size(), 0);
    int64_t remembered = 0;
    for (int step = 0; step < 20000; ++step) {
      const size_t s = rng() % 4 == 0 ? rng() % shapes.size() : static_cast<size_t>(step / 300);
      TimeNs& a = attention_of[s % shapes.size()];
      a = rng() % 50 == 0 ? static_cast<TimeNs>(rng() % 6000) : a + static_cast<TimeNs>(rng() % 7);
      auto d = shapes[s % shapes.size()];
      d[attention] = a;
      CriticalPathMemo::Ticket& ticket = tickets[s % shapes.size()];
      TimeNs got = memo.remembered(ticket, a);
      if (got >= 0) {
        ++remembered;
      } else {
        got = memo.critical_path(
            d, [&](const auto& x) { return tm.longest_path(x, false); }, &ticket);
      }
      ASSERT_EQ(got, tm.longest_path(d, false)) << "layers=" << layers << " step=" << step;
    }
    EXPECT_GT(remembered, 1000) << layers;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
