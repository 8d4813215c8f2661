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

// Replaces the dense figures of the ops a model variant changes: latent
// attention (qkv_proj, rope, kv_store, attention, o_proj), sliding-window
// layers (attention, as the mean over layers), mixture-of-experts layers
// (mlp_gate_up, mlp_act, mlp_down as the mean over layers, and the expert
// all-to-all moe_dispatch / moe_combine). A dense full-attention model is
// left untouched. Called once the step has tokens.
void apply_model_variants(const ModelSpec& model, const StepWork& work,
                          const StepShapeParams& params, StepOpCosts& ops);

}  // namespace kvsim::step_detail
