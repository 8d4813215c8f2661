#pragma once
// Pieces step_op_costs shares with the pricing of model variants (latent
// attention, sliding-window layers, mixture-of-experts MLPs). Internal to
// models/: the public contract is models/step_ops.hpp.
#include <cstdint>

#include "models/model_spec.hpp"
#include "models/step_ops.hpp"

namespace kvsim::step_detail {

// The batch reduced to the sums the formulas need, for a layer that attends
// over at most `window` keys (0: every earlier key).
// The batch reduced to the sums the cost formulas need (step_ops.hpp).
using BatchTotals = StepTotals;
BatchTotals totals_of(const StepWork& work, int64_t window);

OpCost matmul(double tokens, double in, double out, double w, double a);
// into += c, field by field (present if either is).
void add_to(OpCost& into, const OpCost& c);
// Every amount of c times f (present unchanged).
OpCost scaled(const OpCost& c, double f);

// The inputs of a step that every op but attention reads: token counts,
// the graph's shape flags and the once-per-step transfers. Two steps with
// equal StepShape (and the same model and StepShapeParams) have equal costs
// for every op but attention, which also reads the context sums.
struct StepShape {
  double tokens = 0;    // T
  double samplers = 0;  // S
  bool fixed_shape = false;
  bool sampled_logits_only = false;
  Bytes swap_in_bytes = 0;
  Bytes swap_out_bytes = 0;
  Bytes kv_copy_bytes = 0;
  int64_t rerope_tokens = 0;
};
StepShape shape_of(const StepWork& work, const BatchTotals& all);
bool operator==(const StepShape& x, const StepShape& y);

// Throws std::invalid_argument on a bad tp, ep, KV dtype or negative bytes.
void check_step_inputs(const StepWork& work, const StepShapeParams& params);

// Every op but attention (left as it is in `ops`, which the caller zeroes).
void token_op_costs(const ModelSpec& model, const StepShape& shape, const StepShapeParams& params,
                    StepOpCosts& ops);

// One rank's attention dimensions, fixed for a model and its parameters.
struct AttentionDims {
  double d = 0, Hq = 0, Hkv = 0, a = 0, kvb = 0;
};
AttentionDims attention_dims(const ModelSpec& model, const StepShapeParams& params);
// No latent attention and no sliding layer: attention is the dense formula.
bool attention_is_dense_full(const ModelSpec& model);
// Dense attention over totals `all` (also used per window by the variants).
OpCost dense_attention_cost(const BatchTotals& all, const AttentionDims& dims);
// Attention of a step with `all` = totals_of(work, 0); `dense_full` and
// `dims` as the two functions above give them for model and params.
OpCost attention_cost(const ModelSpec& model, const StepWork& work, const StepShapeParams& params,
                      const BatchTotals& all, const AttentionDims& dims, bool dense_full);

// Replaces the dense figures of the ops a model variant changes, attention
// aside: latent attention (qkv_proj, rope, kv_store, o_proj) and
// mixture-of-experts layers (mlp_gate_up, mlp_act, mlp_down as the mean
// over layers, and the expert all-to-all moe_dispatch / moe_combine). A
// dense model is left untouched. Called once the step has `tokens` > 0.
void apply_token_variants(const ModelSpec& model, const StepShapeParams& params, double tokens,
                          StepOpCosts& ops);
// Attention of a model with latent attention or sliding layers (the mean
// over the layers' window groups); `all` = totals_of(work, 0).
OpCost variant_attention(const ModelSpec& model, const StepWork& work,
                         const StepShapeParams& params, const BatchTotals& all);

}  // namespace kvsim::step_detail
