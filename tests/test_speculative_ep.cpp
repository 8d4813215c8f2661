// The speculative drafter under expert parallelism: DeepSeek-V3's MTP
// module is a full decoder layer with its MoE FFN, so on a data-parallel
// layout with EP its pass spreads the experts over the expert group and
// pays the dispatch/combine all-to-all as the target's MoE layers do
// (models/step_ops_variants.cpp price_moe on its own op graph), and holds
// the same share of the experts per rank.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "base/source_paths.hpp"
#include "devices/timing_model.hpp"
#include "models/drafter_shape.hpp"
#include "models/step_ops.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/speculation.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

std::string dp32_ep32_mtp_text() {
  std::ifstream in(std::string(KVSIM_CONFIG_DIR) +
                   "/scenarios/deepseek-v3-w8a8-910c-dp32-ep32-mtp.yaml");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ScenarioSpec dp32_ep32_mtp(int64_t drafts) {
  std::string text = dp32_ep32_mtp_text();
  const std::string k = "num_speculative_tokens: 1";
  const size_t at = text.find(k);
  if (at == std::string::npos) throw std::runtime_error("the scenario's K moved");
  text.replace(at, k.size(), "num_speculative_tokens: " + std::to_string(drafts));
  return load_scenario_text(text, "dp32-ep32-mtp.yaml", KVSIM_CONFIG_DIR);
}

int64_t moe_layers(const ModelSpec& m) {
  int64_t n = 0;
  for (int64_t layer = 0; layer < m.num_hidden_layers; ++layer) n += m.is_moe_layer(layer);
  return n;
}

// A decode step of one rank: 4 sequences after 6,000 cached tokens, the
// group of 32 ranks routing 128 tokens.
StepWork rank_decodes() {
  StepWork w;
  w.totals_given = true;
  w.totals.add_decodes(4, 6000);
  w.moe_tokens = 128;
  return w;
}

TEST(SpeculativeDrafterEp, MtpPassOnDp32Ep32PaysTheAllToAllOfTheTargetsMoeLayers) {
  const ScenarioSpec s = dp32_ep32_mtp(1);
  ASSERT_EQ(s.tp, 1);
  ASSERT_EQ(s.ep, 32);
  ASSERT_EQ(s.ep_ranks_per_node, 16);
  const Speculation spec(s);
  const TimingModel* drafter = spec.drafter_timing();
  ASSERT_NE(drafter, nullptr);
  const ModelSpec& module = s.speculative.drafter->model;
  ASSERT_EQ(moe_layers(module), 1) << "the MTP module's layer is a MoE layer";

  // Its op costs come from the target's formula on the same layout: the
  // busiest expert rank of 32, the exchange over HCCS (15 dies of the node)
  // and RoCE (the 16 of the other).
  const StepShapeParams layout{s.tp, s.kv.dtype_bytes(), s.ep, s.expert_skew, s.ep_ranks_per_node};
  const StepWork w = rank_decodes();
  const StepOpCosts drafter_ops = step_op_costs(module, w, layout);
  const StepOpCosts target_ops = step_op_costs(s.model, w, layout);
  for (const OpKind k : {OpKind::moe_dispatch, OpKind::moe_combine}) {
    const OpCost& d = drafter_ops[static_cast<size_t>(k)];
    const OpCost& t = target_ops[static_cast<size_t>(k)];
    ASSERT_TRUE(d.present);
    EXPECT_GT(d.link_bytes, 0.0);
    EXPECT_GT(d.network_bytes, 0.0);
    // The target's op is the mean over its 61 layers, 58 of them MoE; the
    // module's one layer exchanges what each of those does.
    const double share =
        static_cast<double>(moe_layers(s.model)) / static_cast<double>(s.model.num_hidden_layers);
    EXPECT_NEAR(t.link_bytes, d.link_bytes * share, 1e-9 * d.link_bytes);
    EXPECT_NEAR(t.network_bytes, d.network_bytes * share, 1e-9 * d.network_bytes);
    EXPECT_DOUBLE_EQ(d.layer_share, 1.0);
  }
  // And the exchange is on the pass's clock: the drafter's priced pass has
  // the all-to-all's time, which a single die (ep 1) does not pay.
  const StepTiming priced = drafter->price(w);
  EXPECT_GT(priced.op_time[static_cast<size_t>(OpKind::moe_dispatch)], 0);
  EXPECT_GT(priced.op_time[static_cast<size_t>(OpKind::moe_combine)], 0);
  const TimingModel alone(s.device, module, TimingModel::Params{1, s.kv.dtype_bytes()});
  EXPECT_EQ(alone.price(w).op_time[static_cast<size_t>(OpKind::moe_dispatch)], 0);
  // The engine prices the module's pass through that model.
  EXPECT_EQ(spec.draft_latency(w, DraftBatch{4, 6004}), drafter->step_latency(w));
}

TEST(SpeculativeDrafterEp, MtpExpertWeightsPerRankAreDividedAsTheTargets) {
  const ScenarioSpec s = dp32_ep32_mtp(1);
  const DrafterShape& d = *s.speculative.drafter;
  // What EP32 takes off one rank, per MoE layer: the module's one layer
  // gives up what each of the target's 58 does.
  const double target_saving = static_cast<double>(s.model.weight_bytes_per_rank(1, 1) -
                                                   s.model.weight_bytes_per_rank(1, 32)) /
                               static_cast<double>(moe_layers(s.model));
  const auto module_saving =
      static_cast<double>(d.weight_bytes_per_rank(1, 1) - d.weight_bytes_per_rank(1, 32));
  EXPECT_GT(module_saving, 0.0);
  EXPECT_NEAR(module_saving, target_saving, 1e-9 * target_saving);
  // The pool holds that share beside the target's.
  EXPECT_EQ(s.pool_input().drafter_weight_bytes, d.weight_bytes_per_rank(s.tp, s.ep));
}

// Passes after the first draft one token per sequence: their expert group
// routes the group's samplers. Even ranks give what the rule without a
// group assumes (this rank's times ep / tp); a group of mostly idle ranks
// routes fewer, and the pass is cheaper.
TEST(SpeculativeDrafterEp, LaterDraftPassesRouteTheGroupsSamplers) {
  const ScenarioSpec s = dp32_ep32_mtp(3);
  const Speculation spec(s);
  const StepWork w = rank_decodes();
  const DraftBatch batch{4, 6004};
  const TimeNs even = spec.draft_latency(w, batch, 4.0 * 32);
  EXPECT_EQ(even, spec.draft_latency(w, batch));
  const TimeNs mostly_idle = spec.draft_latency(w, batch, 4.0 + 31);
  EXPECT_LT(mostly_idle, even);
  EXPECT_GT(spec.draft_latency(w, batch, 4.0 * 64), even);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
