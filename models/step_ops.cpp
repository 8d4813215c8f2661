#include "models/step_ops.hpp"

#include <algorithm>
#include <stdexcept>

#include "base/checked_math.hpp"
#include "models/step_ops_parts.hpp"

namespace kvsim {

void StepTotals::add(const SeqWork& s, bool fixed_shape) {
  const double q = static_cast<double>(s.query_tokens);
  const double c = static_cast<double>(s.context_before);
  tokens += q;
  if (s.samples) samplers += 1;
  // Query token j (0-based) sees the c cached keys and the j+1 new keys up
  // to itself: sum_j (c + j + 1) = q*c + q*(q+1)/2. A fixed-shape graph
  // computes the whole q x (c + q) block under its mask.
  const double pairs = fixed_shape ? q * (c + q) : q * c + q * (q + 1) / 2;
  attended_pairs += pairs;
  if (s.query_tokens > 0) {
    kv_tokens_read += c + q;
    context_read += c;
  }
  if (s.query_tokens > 1) {
    prefill_pairs += pairs;
    prefill_kv_tokens += c + q;
  }
}

namespace step_detail {

// Keys a query at position n (1-based count of tokens up to it) sees under a
// window W: min(n, W); summed over n = 1..N it is N(N+1)/2 up to W, then W
// per token.
double windowed_keys_up_to(double n, double window) {
  if (n <= window) return n * (n + 1) / 2;
  return window * (window + 1) / 2 + (n - window) * window;
}

BatchTotals totals_of(const StepWork& work, int64_t window) {
  // Full attention sums whole numbers per sequence, so an engine may hand
  // over the sums; a window needs each sequence's position.
  if (work.totals_given) {
    if (window > 0)
      throw std::logic_error("step_op_costs: a sliding-window layer needs per-sequence work");
    return work.totals;
  }
  BatchTotals t;
  const double w = static_cast<double>(window);
  for (const SeqWork& s : work.seqs) {
    if (s.query_tokens < 0 || s.context_before < 0)
      throw std::invalid_argument("step_op_costs: negative query_tokens or context_before");
    if (window <= 0) {
      t.add(s, work.fixed_shape);
      continue;
    }
    const double q = static_cast<double>(s.query_tokens);
    const double c = static_cast<double>(s.context_before);
    t.tokens += q;
    if (s.samples) t.samplers += 1;
    // A sliding layer: query at position c + j sees the last W keys only;
    // the cached keys read are the W - 1 before the first query.
    const double cached = std::min(c, w - 1);
    const double pairs = work.fixed_shape
                             ? q * (cached + q)
                             : windowed_keys_up_to(c + q, w) - windowed_keys_up_to(c, w);
    t.attended_pairs += pairs;
    if (s.query_tokens > 0) {
      t.kv_tokens_read += cached + q;
      t.context_read += cached;
    }
    if (s.query_tokens > 1) {
      t.prefill_pairs += pairs;
      t.prefill_kv_tokens += cached + q;
    }
  }
  return t;
}

// A GEMM of `tokens` rows: x[tokens, in] . W[in, out].
// flops = 2 * tokens * in * out (one multiply-add = 2 flops);
// bytes = weights in*out*w once (batch-shared) + activations in and out.
OpCost matmul(double tokens, double in, double out, double w, double a) {
  OpCost c;
  c.flops = 2.0 * tokens * in * out;
  c.mem_bytes = in * out * w + tokens * (in + out) * a;
  c.weight_bytes = in * out * w;
  return c;
}

void add_to(OpCost& into, const OpCost& c) {
  into.flops += c.flops;
  into.mem_bytes += c.mem_bytes;
  into.link_bytes += c.link_bytes;
  into.host_bytes += c.host_bytes;
  into.network_bytes += c.network_bytes;
  into.weight_bytes += c.weight_bytes;
  into.kv_read_bytes += c.kv_read_bytes;
  into.kv_write_bytes += c.kv_write_bytes;
  into.residual_bytes += c.residual_bytes;
  into.vector_flops += c.vector_flops;
  into.present = into.present || c.present;
}

OpCost scaled(const OpCost& c, double f) {
  OpCost s = c;
  s.flops *= f;
  s.mem_bytes *= f;
  s.link_bytes *= f;
  s.host_bytes *= f;
  s.network_bytes *= f;
  s.weight_bytes *= f;
  s.kv_read_bytes *= f;
  s.kv_write_bytes *= f;
  s.residual_bytes *= f;
  s.vector_flops *= f;
  return s;
}

}  // namespace step_detail

namespace {

using step_detail::BatchTotals;
using step_detail::matmul;
using step_detail::totals_of;

// RMSNorm over `tokens` rows of `width`: square, sum, rsqrt, scale, multiply
// by weight ~ 4 flops per element; read x, write y, read the weight once.
// (A fused residual-add norm also reads/writes the residual; the brief's
// 2*T*h*a is kept and the residual traffic is folded into efficiency.)
OpCost rms_norm(double tokens, double width, double a, double weight_bytes) {
  OpCost c;
  c.flops = 4.0 * tokens * width;
  c.mem_bytes = 2.0 * tokens * width * a + width * weight_bytes;
  c.weight_bytes = width * weight_bytes;
  return c;
}

// Ring all-reduce of the [T, h] hidden state: each rank sends and receives
// 2*(tp-1)/tp of the buffer. mem_bytes counts the same amount of device
// memory traffic (read what is sent, write what arrives); the reduction
// adds are negligible and not counted.
OpCost all_reduce(double tokens, double hidden, double a, int64_t tp) {
  OpCost c;
  const double bytes =
      2.0 * static_cast<double>(tp - 1) / static_cast<double>(tp) * tokens * hidden * a;
  c.link_bytes = bytes;
  c.mem_bytes = bytes;
  return c;
}

}  // namespace

namespace step_detail {

void check_step_inputs(const StepWork& work, const StepShapeParams& params) {
  if (params.tp < 1) throw std::invalid_argument("step_op_costs: tp must be >= 1");
  if (params.kv_dtype_bytes < 1)
    throw std::invalid_argument("step_op_costs: kv_dtype_bytes must be >= 1");
  if (work.swap_in_bytes < 0 || work.swap_out_bytes < 0 || work.kv_copy_bytes < 0 ||
      work.rerope_tokens < 0)
    throw std::invalid_argument("step_op_costs: negative swap or copy bytes");
  if (params.ep < 1) throw std::invalid_argument("step_op_costs: ep must be >= 1");
  if (params.ep_ranks_per_node < 0)
    throw std::invalid_argument("step_op_costs: ep_ranks_per_node must be >= 0");
  if (!(work.moe_tokens >= 0))
    throw std::invalid_argument("step_op_costs: moe_tokens must be >= 0");
}

AttentionDims attention_dims(const ModelSpec& model, const StepShapeParams& params) {
  AttentionDims dims;
  dims.d = static_cast<double>(model.head_dim);
  dims.Hq = static_cast<double>(ceil_div(model.num_attention_heads, params.tp));
  dims.Hkv = static_cast<double>(model.kv_heads_per_rank(params.tp));
  dims.a = static_cast<double>(model.activation_bytes());
  dims.kvb = static_cast<double>(params.kv_dtype_bytes);
  return dims;
}

void token_op_costs(const ModelSpec& model, const StepShape& shape, const StepShapeParams& params,
                    StepOpCosts& ops) {
  const double T = shape.tokens;
  const double S = shape.samplers;
  const int64_t tp = params.tp;
  // Per-rank shapes (vLLM sharding; tensor_parallel_problem() rejects a tp
  // that does not divide, the ceilings only keep this function total).
  const double h = static_cast<double>(model.hidden_size);
  const double d = static_cast<double>(model.head_dim);
  const double Hq = static_cast<double>(ceil_div(model.num_attention_heads, tp));
  const double Hkv = static_cast<double>(model.kv_heads_per_rank(tp));
  const double I = static_cast<double>(ceil_div(model.intermediate_size, tp));
  const double vocab = static_cast<double>(model.vocab_size);
  const double vocab_rank = static_cast<double>(ceil_div(model.vocab_size, tp));
  const double a = static_cast<double>(model.activation_bytes());
  const double w = model.linear_weight_bytes_per_parameter();
  const double we = static_cast<double>(model.embedding_bytes_per_parameter());
  const double kvb = static_cast<double>(params.kv_dtype_bytes);

  auto op = [&ops](OpKind k) -> OpCost& { return ops[static_cast<size_t>(k)]; };

  if (T > 0) {
    // Embedding: gather T rows of the (vocab-sharded) table and write them.
    // The all-reduce vLLM's VocabParallelEmbedding does at tp > 1 is small
    // next to the per-layer ones and is not modelled.
    op(OpKind::embedding).mem_bytes = T * h * we + T * h * a;
    op(OpKind::embedding).weight_bytes = T * h * we;

    // The residual stream enters each layer at its input norm and leaves it
    // at the MLP's down projection.
    op(OpKind::input_norm) = rms_norm(T, h, a, we);
    op(OpKind::input_norm).residual_bytes = T * h * a;
    op(OpKind::post_norm) = rms_norm(T, h, a, we);

    // Fused q/k/v projection: out = (Hq + 2*Hkv) * d columns; Qwen2 adds a
    // bias (one add per output, bias read once).
    const double qkv_out = (Hq + 2.0 * Hkv) * d;
    OpCost& qkv = op(OpKind::qkv_proj);
    qkv = matmul(T, h, qkv_out, w, a);
    if (model.attention_bias) {
      qkv.flops += T * qkv_out;
      qkv.mem_bytes += qkv_out * we;
      qkv.weight_bytes += qkv_out * we;
    }

    // RoPE rotates every q and k element: out = x*cos -/+ y*sin, 3 flops per
    // element (2 mul + 1 add); read q,k and write them back. The cos/sin
    // cache (d values per token, shared by all heads) is left out.
    // Qwen3's per-head q/k RMSNorm runs right before the rotation (vLLM
    // Qwen3Attention) and is folded into this op: 4 flops and a read+write
    // per element, plus its two head_dim weights.
    const double qk_elems = T * (Hq + Hkv) * d;
    OpCost& rope = op(OpKind::rope);
    rope.flops = 3.0 * qk_elems;
    rope.mem_bytes = 2.0 * qk_elems * a;
    if (model.qk_norm) {
      rope.flops += 4.0 * qk_elems;
      rope.mem_bytes += 2.0 * qk_elems * a + 2.0 * d * we;
      rope.weight_bytes = 2.0 * d * we;
    }

    // KV store (seed 001 store_kvcache): read the new K and V in the
    // activation dtype, write them into the cache in the KV dtype.
    // Quantisation to int8 costs a few vector ops, not counted.
    op(OpKind::kv_store).mem_bytes = T * 2.0 * Hkv * d * (a + kvb);
    op(OpKind::kv_store).kv_write_bytes = T * 2.0 * Hkv * d * kvb;

    op(OpKind::o_proj) = matmul(T, Hq * d, h, w, a);

    // Gate and up as one fused GEMM of 2*I columns (vLLM MergedColumnParallelLinear).
    op(OpKind::mlp_gate_up) = matmul(T, h, 2.0 * I, w, a);
    // SiLU(gate) * up: ~5 flops per element (exp, add, divide, multiply,
    // multiply); read gate and up, write the product.
    OpCost& act = op(OpKind::mlp_act);
    act.flops = 5.0 * T * I;
    act.mem_bytes = 3.0 * T * I * a;
    op(OpKind::mlp_down) = matmul(T, I, h, w, a);
    op(OpKind::mlp_down).residual_bytes = T * h * a;

    if (tp > 1) {
      op(OpKind::attn_allreduce) = all_reduce(T, h, a, tp);
      op(OpKind::mlp_allreduce) = all_reduce(T, h, a, tp);
    }

    // The final norm runs on all T tokens: vLLM's model forward normalises
    // every hidden state and only then picks the sampled rows for logits.
    op(OpKind::final_norm) = rms_norm(T, h, a, we);

    // Latent attention and expert MLPs replace the dense figures of the
    // ops they change (models/step_ops_variants.cpp); attention is priced
    // apart (attention_cost).
    apply_token_variants(model, params, T, shape.moe_tokens, ops);

    const OpKind run_with_tokens[] = {OpKind::input_norm,  OpKind::qkv_proj, OpKind::rope,
                                      OpKind::kv_store,    OpKind::o_proj,   OpKind::post_norm,
                                      OpKind::mlp_gate_up, OpKind::mlp_act,  OpKind::mlp_down,
                                      OpKind::final_norm,  OpKind::embedding};
    for (OpKind k : run_with_tokens) op(k).present = true;
    op(OpKind::attn_allreduce).present = tp > 1;
    op(OpKind::mlp_allreduce).present = tp > 1;
  }

  // Logits only for the S sampled rows (every row in a fixed-shape graph
  // unless it was exported to slice the sampled row first), against this
  // rank's vocab shard; lm_head stays in 16-bit (we) even in quantised
  // models. Gathering the shards' logits is small (S * vocab) and not
  // modelled as link traffic.
  const double logit_rows = shape.fixed_shape && !shape.sampled_logits_only ? T : S;
  if (logit_rows > 0) {
    OpCost& lm = op(OpKind::lm_head);
    lm.flops = 2.0 * logit_rows * h * vocab_rank;
    lm.mem_bytes = h * vocab_rank * we + logit_rows * h * a + logit_rows * vocab_rank * a;
    lm.weight_bytes = h * vocab_rank * we;
    lm.residual_bytes = logit_rows * vocab_rank * a;
    lm.present = true;
  }
  if (S > 0) {
    // Sampling reads the full fp32 logits row per sampled sequence and does
    // ~1 op per entry (softmax/argmax/top-k scan).
    OpCost& sampling = op(OpKind::sampling);
    sampling.flops = S * vocab;
    sampling.mem_bytes = S * vocab * 4.0;
    sampling.present = true;
  }

  if (shape.swap_in_bytes > 0) {
    OpCost& c = op(OpKind::swap_in);
    c.host_bytes = static_cast<double>(shape.swap_in_bytes);
    c.mem_bytes = c.host_bytes;
    c.present = true;
  }
  if (shape.swap_out_bytes > 0) {
    OpCost& c = op(OpKind::swap_out);
    c.host_bytes = static_cast<double>(shape.swap_out_bytes);
    c.mem_bytes = c.host_bytes;
    c.present = true;
  }
  if (shape.kv_copy_bytes > 0) {
    // Block copy inside device memory: read the source, write the destination.
    OpCost& c = op(OpKind::kv_copy);
    c.mem_bytes = 2.0 * static_cast<double>(shape.kv_copy_bytes);
    c.present = true;
  }
  if (shape.rerope_tokens > 0) {
    // Seed 003's remap turns each copied key from the virtual position to
    // its real one (rotations compose: one rotation by the delta), in every
    // layer: 3 flops per K element (x*cos - y*sin), K read and written in
    // place. V is untouched.
    // With latent attention only the shared RoPE key turns.
    const double k_width =
        model.mla.enabled() ? static_cast<double>(model.mla.qk_rope_head_dim) : Hkv * d;
    const double k_elems = static_cast<double>(shape.rerope_tokens) * k_width *
                           static_cast<double>(model.num_hidden_layers);
    OpCost& c = op(OpKind::kv_rerope);
    c.flops = 3.0 * k_elems;
    c.mem_bytes = 2.0 * k_elems * kvb;
    c.present = true;
  }
}

}  // namespace step_detail

StepOpCosts step_op_costs(const ModelSpec& model, const StepWork& work,
                          const StepShapeParams& params) {
  step_detail::check_step_inputs(work, params);
  const BatchTotals all = totals_of(work, 0);
  StepOpCosts ops{};
  step_detail::token_op_costs(model, step_detail::shape_of(work, all), params, ops);
  ops[static_cast<size_t>(OpKind::attention)] = step_detail::attention_cost(
      model, work, params, all, step_detail::attention_dims(model, params),
      step_detail::attention_is_dense_full(model));
  return ops;
}

}  // namespace kvsim
