// Seed 000 as it runs: under kv_cache.layout atb the numerics checker
// converts the policy's Ksana block ids into per-layer ATB block tables and
// stores and reads K and V through the kcache/vcache view of the same pool;
// the outputs are the Ksana view's bit for bit through prefix hits,
// preemption by recompute and by swap, and a wrong ATB id fails the check.
// The timing model charges the host's construction of those tables.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "kernels/attention.hpp"
#include "kernels/store_kvcache.hpp"
#include "scenario_helpers.hpp"
#include "sim/numerics/numerics_checker.hpp"
#include "sim/numerics/numerics_observer.hpp"
#include "sim/serve/engine.hpp"
#include "sim/serve/kv_layout_host_cost.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using numerics::AtbCheckerView;
using numerics::NumericsChecker;

// ---- kernels: the two views of one pool

TEST(AtbKernels, VarlenAttentionThroughTheAtbViewIsTheKsanaViewsBitForBit) {
  for (const kernels::KvDtype dtype : {kernels::KvDtype::fp16, kernels::KvDtype::int8}) {
    const int64_t blocks = 6, layers = 3, bt = 16, heads = 2, d = 16, q_heads = 4;
    kernels::KvPool pool(blocks, layers, bt, heads, d, dtype);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const std::vector<int32_t> table{4, 1, 5};  // 40 tokens over three scattered blocks
    const int64_t k_len = 40, nq = 5;
    std::vector<float> k(static_cast<size_t>(k_len * heads * d)), v(k.size());
    std::vector<float> q(static_cast<size_t>(nq * q_heads * d));
    for (int64_t l = 0; l < layers; ++l) {
      for (auto& x : k) x = u(rng);
      for (auto& x : v) x = u(rng);
      // Layer l stored through the ATB view with its ATB table.
      std::vector<int32_t> atb;
      atb_block_table(pool.geometry(), table, l, atb);
      kernels::store_kvcache_atb(pool, k.data(), v.data(),
                                 kernels::slot_mapping_for(atb, bt, 0, k_len));
    }
    const int32_t cu[2] = {0, static_cast<int32_t>(nq)};
    const int32_t seqlen[1] = {static_cast<int32_t>(k_len)};
    for (int64_t l = 0; l < layers; ++l) {
      for (auto& x : q) x = u(rng);
      std::vector<int32_t> atb;
      atb_block_table(pool.geometry(), table, l, atb);
      const std::span<const int32_t> ksana_tables[1] = {table};
      const std::span<const int32_t> atb_tables[1] = {atb};
      std::vector<float> via_ksana(q.size()), via_atb(q.size());
      kernels::paged_varlen_attention(pool, l, q.data(), cu, seqlen, ksana_tables, q_heads, 0.25f,
                                      via_ksana.data());
      kernels::paged_varlen_attention_atb(pool, q.data(), cu, seqlen, atb_tables, q_heads, 0.25f,
                                          via_atb.data());
      for (size_t i = 0; i < q.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(via_ksana[i]), std::bit_cast<uint32_t>(via_atb[i]))
            << "layer " << l << " element " << i;
      // Rows read back through the Ksana addressing are what the ATB view stored.
      std::vector<float> a(static_cast<size_t>(d)), b(a.size());
      pool.read_row(table[1], KvPart::value, l, 3, 1, a.data());
      pool.atb_read_row(KvPart::value, atb[1], 3, 1, b.data());
      EXPECT_EQ(a, b);
    }
  }
}

TEST(AtbKernels, AnIdOutsideTheViewIsRefused) {
  kernels::KvPool pool(2, 2, 16, 1, 16, kernels::KvDtype::fp16);
  // Ids run to num_blocks * layers * 2 - 1 for kcache; vcache's last slab is
  // `layers` before the end of the buffer.
  EXPECT_NO_THROW(pool.atb_row(KvPart::key, 7, 0, 0));
  EXPECT_THROW(pool.atb_row(KvPart::key, 8, 0, 0), std::out_of_range);
  EXPECT_NO_THROW(pool.atb_row(KvPart::value, 5, 0, 0));  // block 1, layer 1
  EXPECT_THROW(pool.atb_row(KvPart::value, 6, 0, 0), std::out_of_range);
  EXPECT_THROW(pool.atb_row(KvPart::key, -1, 0, 0), std::out_of_range);
}

// ---- the serving run under both layouts

std::string scenario_text(const std::string& layout, const std::string& preemption) {
  return R"(
name: atb-run
seed: 3
device: ascend-910b2
model: llama-3-8b
kv_cache: {policy: paged, layout: )" +
         layout +
         R"(, dtype: fp16, block_size: 16, memory_fraction: 0.2395, prefix_caching: true, preemption: )" +
         preemption + R"(, swap_space: 1GiB}
scheduler: {max_num_seqs: 16, max_batched_tokens: 1024}
workload:
  kind: synthetic
  requests: 16
  arrival: {process: poisson, rate_per_s: 400}
  input_tokens: {dist: uniform, min: 32, max: 200}
  output_tokens: {dist: uniform, min: 8, max: 128}
  shared_prefix: {groups: 2, tokens: 64, popularity: uniform}
numerics: {mode: full}
)";
}

// The checker the last run made (StepObserverFactory is a plain function).
const NumericsChecker* g_checker = nullptr;
std::unique_ptr<StepObserver> capturing_observer(const InstanceSpec& s, const PoolSizing& sizing) {
  auto made = make_numerics_observer(s, sizing);
  g_checker = dynamic_cast<const NumericsChecker*>(made.get());
  return made;
}

struct Observed {
  RunMetrics metrics;
  uint64_t digest = 0;
  uint64_t tables = 0, entries = 0;
  std::string view;
};

Observed run_checked(const std::string& layout, const std::string& preemption) {
  const ScenarioSpec s = testing::scenario_from_text(scenario_text(layout, preemption));
  ServingEngine engine(s, nullptr, capturing_observer);
  Observed o;
  o.metrics = engine.run();
  EXPECT_NE(g_checker, nullptr);
  if (g_checker != nullptr) {
    o.digest = g_checker->output_digest();
    o.tables = g_checker->view().tables_built();
    o.entries = g_checker->view().table_entries();
    o.view = std::string(g_checker->view().name());
  }
  return o;
}

class AtbRun : public ::testing::TestWithParam<std::string> {};

TEST_P(AtbRun, AtbViewGivesTheKsanaViewsOutputsBitForBit) {
  const std::string preemption = GetParam();
  const Observed ksana = run_checked("ksana", preemption);
  const Observed atb = run_checked("atb", preemption);
  EXPECT_EQ(ksana.view, "ksana");
  EXPECT_EQ(atb.view, "atb");
  // The run went through what the views must agree on.
  EXPECT_EQ(atb.metrics.requests.completed, 16);
  EXPECT_GT(testing::pool_of(atb.metrics).prefix_hit_rate, 0.0);
  EXPECT_GT(atb.metrics.requests.preempted, 0);
  if (preemption == "swap") {
    EXPECT_GT(testing::pool_of(atb.metrics).swapped_bytes, 0);
  }
  // The ATB view built its tables and read through them; Ksana built none.
  EXPECT_GT(atb.tables, 1000u);
  EXPECT_GT(atb.entries, atb.tables);
  EXPECT_EQ(ksana.tables, 0u);
  // Same checks, same outputs bit for bit, same error against the reference.
  EXPECT_GT(atb.metrics.numerics.checks, 100);
  EXPECT_EQ(atb.metrics.numerics.checks, ksana.metrics.numerics.checks);
  EXPECT_EQ(atb.digest, ksana.digest);
  EXPECT_EQ(atb.metrics.numerics.max_abs_err, ksana.metrics.numerics.max_abs_err);
  EXPECT_LE(atb.metrics.numerics.max_abs_err, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Preemption, AtbRun, ::testing::Values("recompute", "swap"));

// An ATB view whose attention tables carry the next layer's ids (b * layers
// * 2 + layer + 1): the store is right, PagedAttention reads the wrong slab.
class OffByOneLayerView final : public AtbCheckerView {
 protected:
  void convert(const BlockGeometry& g, std::span<const int32_t> ksana, int64_t layer, Use use,
               std::vector<int32_t>& atb) const override {
    AtbCheckerView::convert(g, ksana, layer, use, atb);
    if (use == Use::attend)
      for (int32_t& id : atb) ++id;
  }
};

std::unique_ptr<StepObserver> off_by_one_observer(const InstanceSpec& s, const PoolSizing& sizing) {
  return std::make_unique<NumericsChecker>(numerics::checker_params(s, sizing),
                                           std::make_unique<OffByOneLayerView>());
}

TEST(AtbRunFaults, AnOffByOneLayerAtbIdFailsTheCheck) {
  const ScenarioSpec s = testing::scenario_from_text(scenario_text("atb", "swap"));
  ServingEngine engine(s, nullptr, off_by_one_observer);
  try {
    engine.run();
    FAIL() << "an ATB table off by one layer went unnoticed";
  } catch (const CheckFailed& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("numerics check failed: request"), std::string::npos) << msg;
    EXPECT_NE(msg.find("layer 0"), std::string::npos) << msg;
  }
}

// ---- timing: the host builds blocks x layers entries a step

// One request alone: the same steps under both layouts, so the run under
// atb is longer by exactly the tables' host time.
std::string single_request(const std::string& layout) {
  return R"(
name: atb-timing
seed: 1
device: ascend-910b2
model: llama-3-8b
kv_cache: {policy: paged, layout: )" +
         layout + R"(, block_size: 16}
scheduler: {max_num_seqs: 4, max_batched_tokens: 4096}
workload:
  kind: synthetic
  requests: 1
  arrival: {process: poisson, rate_per_s: 1}
  input_tokens: {dist: constant, value: 200}
  output_tokens: {dist: constant, value: 40}
)";
}

TEST(AtbTiming, EachStepIsLongerByTheTablesHostTime) {
  const ScenarioSpec ks = testing::scenario_from_text(single_request("ksana"));
  const ScenarioSpec as = testing::scenario_from_text(single_request("atb"));
  ServingEngine ksana_engine(ks, nullptr);
  ServingEngine atb_engine(as, nullptr);
  const RunMetrics k = ksana_engine.run();
  const RunMetrics a = atb_engine.run();
  ASSERT_EQ(k.sim.steps, a.sim.steps);
  ASSERT_EQ(a.sim.steps, 40);  // one prefill, 39 decodes
  // Step i holds the 200 + i tokens of its table: ceil((200 + i) / 16)
  // blocks x 32 layers, 8 bytes an entry at 187.7 GB/s (the 910B2's host).
  const int64_t layers = 32;
  const double bytes_per_ns = 187.7e9 / 1e9;
  int64_t expected_ns = 0, entries = 0;
  for (int64_t i = 0; i < 40; ++i) {
    const int64_t e = (200 + i + 15) / 16 * layers;
    entries += e;
    expected_ns += static_cast<int64_t>(std::ceil(static_cast<double>(e * 8) / bytes_per_ns));
  }
  EXPECT_GE(a.sim.simulated_s, k.sim.simulated_s);
  EXPECT_EQ(std::llround((a.sim.simulated_s - k.sim.simulated_s) * 1e9), expected_ns);
  const KvLayoutMetrics* m = a.find<KvLayoutMetrics>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->layout, "atb");
  EXPECT_EQ(m->block_table_entries, entries);
  EXPECT_EQ(m->block_tables_built, 40 * layers);
  EXPECT_EQ(m->block_table_host_ns, expected_ns);
  EXPECT_EQ(k.find<KvLayoutMetrics>(), nullptr);  // ksana: no section, no cost
}

TEST(AtbTiming, PriceIsEntriesTimesEightBytesOverTheBandwidthRoundedUp) {
  EXPECT_EQ(KvLayoutHostCost::price(0, 100'000'000'000), 0);
  EXPECT_EQ(KvLayoutHostCost::price(1, 8'000'000'000), 1);           // 8 B at 8 GB/s: 1 ns
  EXPECT_EQ(KvLayoutHostCost::price(1000, 8'000'000'000), 1000);     // 8 kB: 1 us
  EXPECT_EQ(KvLayoutHostCost::price(3, 16'000'000'000), 2);          // 1.5 ns, up
  EXPECT_EQ(KvLayoutHostCost::price(32 * 13, 187'700'000'000), 18);  // 3328 B: 17.73 ns
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
