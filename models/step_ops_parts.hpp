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
  double moe_tokens = 0;  // StepWork::moe_tokens
};
// Inline, as operator== below: the cost cache builds and compares a step's
// shape every step, in registers rather than through a copy on the stack.
// The binding names every field of StepWork and StepTotals: a field added
// to either stops the build here until someone decides whether ops other
// than attention read it (then it belongs in StepShape, the key of
// StepCostCache) or only attention does (recomputed on every step).
inline StepShape shape_of(const StepWork& work, const BatchTotals& all) {
  const auto& [seqs, totals_given, totals, swap_in_bytes, swap_out_bytes, kv_copy_bytes,
               rerope_tokens, fixed_shape, sampled_logits_only, moe_tokens] = work;
  // Attention only: the sequences or their sums, through `all`.
  (void)seqs, (void)totals_given, (void)totals;
  const auto& [tokens, samplers, attended_pairs, kv_tokens_read, context_read, prefill_pairs,
               prefill_kv_tokens] = all;
  (void)attended_pairs, (void)kv_tokens_read, (void)context_read, (void)prefill_pairs,
      (void)prefill_kv_tokens;
  StepShape s;
  s.tokens = tokens;
  s.samplers = samplers;
  s.fixed_shape = fixed_shape;
  s.sampled_logits_only = sampled_logits_only;
  s.swap_in_bytes = swap_in_bytes;
  s.swap_out_bytes = swap_out_bytes;
  s.kv_copy_bytes = kv_copy_bytes;
  s.rerope_tokens = rerope_tokens;
  s.moe_tokens = moe_tokens;
  return s;
}

inline bool operator==(const StepShape& x, const StepShape& y) {
  // Binding every field: one added to StepShape must be compared here.
  const auto& [t, s, fixed, logits_only, in, out, copy, rerope, moe] = x;
  return t == y.tokens && s == y.samplers && fixed == y.fixed_shape &&
         logits_only == y.sampled_logits_only && in == y.swap_in_bytes && out == y.swap_out_bytes &&
         copy == y.kv_copy_bytes && rerope == y.rerope_tokens && moe == y.moe_tokens;
}

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
// Attention of a model with latent attention or sliding layers (the mean
// over the layers' window groups); `all` = totals_of(work, 0).
OpCost variant_attention(const ModelSpec& model, const StepWork& work,
                         const StepShapeParams& params, const BatchTotals& all);
// Dense attention over totals `all`, written into `attn` field by field
// (the cost cache writes a step's attention in its entry: an OpCost built
// aside and copied whole would stall on store forwarding every step).
inline void write_dense_attention(const BatchTotals& b, const AttentionDims& s, OpCost& attn) {
  // Attention: QK^T and PV, one MAC each per (query, key, dim) = 4 flops
  // per pair per head dim; softmax (~5 operations per pair: scale, max,
  // subtract, exp, sum and the normalising multiply, rounded) is small next
  // to d and kept apart in vector_flops. K and V of every attended token are read once per
  // sequence; a flash kernel re-reads them once per query tile in long
  // prefill chunks, which is ignored here (calibrated by efficiency).
  // Q is read and O written in the activation dtype.
  // Every field is set, one store each (a field added to OpCost must be
  // set here too).
  static_assert(sizeof(OpCost) == 12 * sizeof(double), "OpCost changed: set the new field");
  attn.flops = 4.0 * s.Hq * s.d * b.attended_pairs;
  attn.mem_bytes = b.kv_tokens_read * 2.0 * s.Hkv * s.d * s.kvb + 2.0 * b.tokens * s.Hq * s.d * s.a;
  attn.link_bytes = 0;
  attn.host_bytes = 0;
  attn.present = true;
  attn.weight_bytes = 0;
  attn.kv_read_bytes = b.context_read * 2.0 * s.Hkv * s.d * s.kvb;
  attn.kv_write_bytes = 0;
  attn.residual_bytes = 0;
  attn.vector_flops = 5.0 * s.Hq * b.attended_pairs;
  attn.layer_share = 1;
  attn.network_bytes = 0;
}

// The same as a value (also used per window by the variants).
inline OpCost dense_attention_cost(const BatchTotals& b, const AttentionDims& s) {
  OpCost attn;
  write_dense_attention(b, s, attn);
  return attn;
}

// Attention of a step with `all` = totals_of(work, 0); `dense_full` and
// `dims` as the two functions above give them for model and params.
inline OpCost attention_cost(const ModelSpec& model, const StepWork& work,
                             const StepShapeParams& params, const BatchTotals& all,
                             const AttentionDims& dims, bool dense_full) {
  if (all.tokens <= 0) return OpCost{};
  // Latent attention and sliding layers replace the dense figures
  // (models/step_ops_variants.cpp).
  if (dense_full) return dense_attention_cost(all, dims);
  return variant_attention(model, work, params, all);
}

// Replaces the dense figures of the ops a model variant changes, attention
// aside: latent attention (qkv_proj, rope, kv_store, o_proj) and
// mixture-of-experts layers (mlp_gate_up, mlp_act, mlp_down as the mean
// over layers, and the expert all-to-all moe_dispatch / moe_combine). A
// dense model is left untouched. Called once the step has `tokens` > 0.
// `moe_tokens`: StepWork::moe_tokens (0: tokens x ep / tp).
void apply_token_variants(const ModelSpec& model, const StepShapeParams& params, double tokens,
                          double moe_tokens, StepOpCosts& ops);

}  // namespace kvsim::step_detail
