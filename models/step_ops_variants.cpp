// Step pricing of the model variants beyond a dense, full-attention decoder:
// multi-head latent attention (DeepSeek-V2/V3), sliding-window layers
// (Gemma 2/3, Mistral) and mixture-of-experts MLPs (Mixtral, Qwen3-MoE,
// DeepSeek-V3), with expert parallelism. Each replaces the dense figures of
// the ops it changes; a dense full-attention model never reaches this file's
// arithmetic, so its step costs stay as they were.
#include <algorithm>
#include <utility>
#include <vector>

#include "base/checked_math.hpp"
#include "models/moe_routing.hpp"
#include "models/step_ops_parts.hpp"

namespace kvsim::step_detail {
namespace {

OpCost& op_of(StepOpCosts& ops, OpKind k) {
  return ops[static_cast<size_t>(k)];
}

// The mean over layers of an op that costs `a` in n_a layers and `b` in n_b.
OpCost blend(const OpCost& a, double n_a, const OpCost& b, double n_b) {
  if (n_b == 0) return a;
  if (n_a == 0) return b;
  OpCost r = scaled(a, n_a / (n_a + n_b));
  add_to(r, scaled(b, n_b / (n_a + n_b)));
  return r;
}

// Layers grouped by the window they attend over (0: full attention).
std::vector<std::pair<int64_t, int64_t>> window_groups(const ModelSpec& m) {
  std::vector<std::pair<int64_t, int64_t>> groups;
  for (int64_t layer = 0; layer < m.num_hidden_layers; ++layer) {
    const auto i = static_cast<size_t>(layer);
    const int64_t w = i < m.layer_attention.size() && m.layer_attention[i].sliding
                          ? m.layer_attention[i].window
                          : 0;
    auto it =
        std::find_if(groups.begin(), groups.end(), [w](const auto& g) { return g.first == w; });
    if (it == groups.end())
      groups.emplace_back(w, 1);
    else
      ++it->second;
  }
  return groups;
}

struct RankShape {
  double T, h, Hq, Hkv, d, a, w, we, kvb;
};

// Dense attention of one layer: step_ops.cpp's formula over the totals of
// one window, with the step's query tokens.
OpCost dense_attention(BatchTotals t, const RankShape& s) {
  t.tokens = s.T;
  return dense_attention_cost(t, AttentionDims{s.d, s.Hq, s.Hkv, s.a, s.kvb});
}

// Latent attention of one layer. Decode (one query token) runs in the
// weight-absorbed form over the latent cache (FlashMLA, vLLM's MLA decode):
// per (query, key, head) a score over kv_lora + rope and a weighted sum over
// kv_lora, 2*(2*kv_lora + rope) flops. Prefill chunks decompress the cached
// latents with kv_b (2 * kv_lora * Hq * (nope + v) flops per key) and run
// ordinary attention over nope + rope keys and v values (vLLM's MLA prefill).
// The cache read is the latent plus the RoPE key per token.
OpCost mla_attention(const BatchTotals& t, const RankShape& s, const MlaShape& m) {
  const double lat = static_cast<double>(m.kv_lora_rank);
  const double r = static_cast<double>(m.qk_rope_head_dim);
  const double n = static_cast<double>(m.qk_nope_head_dim);
  const double v = static_cast<double>(m.v_head_dim);
  const double decode_pairs = t.attended_pairs - t.prefill_pairs;
  OpCost c;
  c.flops = 2.0 * s.Hq * (2.0 * lat + r) * decode_pairs +
            2.0 * t.prefill_kv_tokens * lat * s.Hq * (n + v) +
            2.0 * s.Hq * (n + r + v) * t.prefill_pairs;
  c.mem_bytes = t.kv_tokens_read * (lat + r) * s.kvb + s.T * s.Hq * (2.0 * lat + r) * s.a;
  c.kv_read_bytes = t.context_read * (lat + r) * s.kvb;
  c.vector_flops = 5.0 * s.Hq * t.attended_pairs;
  c.present = true;
  return c;
}

// The latent projections on one rank (vLLM: q_a and kv_a replicated, q_b,
// kv_b and o split by heads). W_UK (the key half of kv_b) is absorbed into
// the query, W_UV (the value half) applied to the attention output.
void mla_projections(const RankShape& s, const MlaShape& m, StepOpCosts& ops) {
  const double lat = static_cast<double>(m.kv_lora_rank);
  const double r = static_cast<double>(m.qk_rope_head_dim);
  const double n = static_cast<double>(m.qk_nope_head_dim);
  const double v = static_cast<double>(m.v_head_dim);
  const double ql = static_cast<double>(m.q_lora_rank);
  const double T = s.T;
  auto head_blocks = [&](double in, double out) {  // one in x out matrix per head
    OpCost c;
    c.flops = 2.0 * T * s.Hq * in * out;
    c.weight_bytes = s.Hq * in * out * s.w;
    c.mem_bytes = c.weight_bytes + T * s.Hq * (in + out) * s.a;
    return c;
  };
  OpCost qkv = ql > 0 ? matmul(T, s.h, ql, s.w, s.a) : OpCost{};
  add_to(qkv, matmul(T, ql > 0 ? ql : s.h, s.Hq * (n + r), s.w, s.a));
  add_to(qkv, matmul(T, s.h, lat + r, s.w, s.a));
  add_to(qkv, head_blocks(n, lat));
  qkv.present = true;
  op_of(ops, OpKind::qkv_proj) = qkv;

  // RoPE on q_rope of every head and the one shared k_rope; the q_a and kv_a
  // RMSNorms folded in (4 flops, a read and a write per element).
  const double rot = T * (s.Hq + 1.0) * r;
  const double normed = T * (ql + lat);
  OpCost& rope = op_of(ops, OpKind::rope);
  rope = OpCost{};
  rope.flops = 3.0 * rot + 4.0 * normed;
  rope.mem_bytes = 2.0 * (rot + normed) * s.a + (ql + lat) * s.we;
  rope.weight_bytes = (ql + lat) * s.we;
  rope.present = true;

  OpCost& store = op_of(ops, OpKind::kv_store);
  store = OpCost{};
  store.mem_bytes = T * (lat + r) * (s.a + s.kvb);
  store.kv_write_bytes = T * (lat + r) * s.kvb;
  store.present = true;

  OpCost o = head_blocks(lat, v);
  add_to(o, matmul(T, s.Hq * v, s.h, s.w, s.a));
  o.present = true;
  op_of(ops, OpKind::o_proj) = o;
}

// A MoE layer's MLP on the busiest rank (models/moe_routing.hpp): router
// (E logits per token, 16-bit), the routed experts' gate/up and down over the
// rank's assignments, weights of the experts its tokens touch only, and the
// shared experts (split over tp like a dense MLP). The expert group routes
// `moe_tokens` (the data-parallel ranks' tokens together), or, not given,
// this rank's T times the ep / tp replicas it stands for. With ep > 1 the
// tokens go to the experts' ranks and back: the busiest rank receives its
// assignments' hidden states, 1 / ep of them from each rank (uniform
// sources), and sends as many outputs back; those of the ranks on its node
// cross the device link (HCCS), those of other nodes the network link
// (RoCE), at the same time.
void price_moe(const ModelSpec& m, const StepShapeParams& p, const RankShape& s, double moe_tokens,
               StepOpCosts& ops) {
  int64_t moe_layers = 0;
  for (int64_t layer = 0; layer < m.num_hidden_layers; ++layer) moe_layers += m.is_moe_layer(layer);
  if (moe_layers == 0) return;
  const double n_moe = static_cast<double>(moe_layers);
  const double n_dense = static_cast<double>(m.num_hidden_layers - moe_layers);
  const double T = s.T;
  const double replicas = p.ep > 1 ? static_cast<double>(p.ep) / static_cast<double>(p.tp) : 1.0;
  const double group_tokens = moe_tokens > 0 ? moe_tokens : T * std::max(1.0, replicas);
  const ExpertRankLoad load = busiest_expert_rank(m.moe, group_tokens, p.ep, p.expert_skew);
  const double A = load.assignments;
  const double D = load.experts_touched;
  const double Ie = static_cast<double>(p.ep > 1 ? m.moe.expert_intermediate
                                                 : ceil_div(m.moe.expert_intermediate, p.tp));
  const double Is = static_cast<double>(ceil_div(m.moe.shared_intermediate, p.tp));
  const double E = static_cast<double>(m.moe.experts);

  auto experts = [&](double in, double out) {
    OpCost c;
    c.flops = 2.0 * A * in * out;
    c.weight_bytes = D * in * out * s.w;
    c.mem_bytes = c.weight_bytes + A * (in + out) * s.a;
    c.present = true;
    return c;
  };
  OpCost gate_up = experts(s.h, 2.0 * Ie);
  add_to(gate_up, matmul(T, s.h, E, s.we, s.a));
  if (Is > 0) add_to(gate_up, matmul(T, s.h, 2.0 * Is, s.w, s.a));
  OpCost act;
  act.flops = 5.0 * (A * Ie + T * Is);
  act.mem_bytes = 3.0 * (A * Ie + T * Is) * s.a;
  act.present = true;
  OpCost down = experts(Ie, s.h);
  if (Is > 0) add_to(down, matmul(T, Is, s.h, s.w, s.a));
  down.residual_bytes = T * s.h * s.a;

  for (auto [kind, moe] : {std::pair{OpKind::mlp_gate_up, gate_up}, std::pair{OpKind::mlp_act, act},
                           std::pair{OpKind::mlp_down, down}}) {
    op_of(ops, kind) = blend(op_of(ops, kind), n_dense, moe, n_moe);
  }
  if (p.ep > 1) {
    OpCost all_to_all;
    const double ranks = static_cast<double>(p.ep);
    const double on_node =
        static_cast<double>(p.ep_ranks_per_node > 0 ? std::min(p.ep_ranks_per_node, p.ep) : p.ep);
    // (All on one node: the one product as before, to the bit.)
    const double per_rank = A * s.h * s.a / ranks;
    all_to_all.link_bytes =
        on_node == ranks ? A * s.h * s.a * (ranks - 1.0) / ranks : per_rank * (on_node - 1.0);
    all_to_all.network_bytes = per_rank * (ranks - on_node);
    all_to_all.mem_bytes = all_to_all.link_bytes + all_to_all.network_bytes;
    all_to_all.present = true;
    OpCost mean = blend(OpCost{}, n_dense, all_to_all, n_moe);
    // Dense layers exchange nothing: no link latency on them.
    mean.layer_share = n_moe / (n_dense + n_moe);
    op_of(ops, OpKind::moe_dispatch) = mean;
    op_of(ops, OpKind::moe_combine) = mean;
    op_of(ops, OpKind::moe_dispatch).present = true;
    op_of(ops, OpKind::moe_combine).present = true;
  }
}

RankShape rank_shape(const ModelSpec& m, const StepShapeParams& p, double tokens) {
  RankShape s{};
  s.T = tokens;
  s.h = static_cast<double>(m.hidden_size);
  s.Hq = static_cast<double>(ceil_div(m.num_attention_heads, p.tp));
  s.Hkv = static_cast<double>(m.kv_heads_per_rank(p.tp));
  s.d = static_cast<double>(m.head_dim);
  s.a = static_cast<double>(m.activation_bytes());
  s.w = m.linear_weight_bytes_per_parameter();
  s.we = static_cast<double>(m.embedding_bytes_per_parameter());
  s.kvb = static_cast<double>(p.kv_dtype_bytes);
  return s;
}

}  // namespace

bool attention_is_dense_full(const ModelSpec& m) {
  const auto groups = window_groups(m);
  return !m.mla.enabled() && groups.size() == 1 && groups.front().first == 0;
}

void apply_token_variants(const ModelSpec& m, const StepShapeParams& p, double tokens,
                          double moe_tokens, StepOpCosts& ops) {
  if (!m.mla.enabled() && !m.moe.enabled()) return;
  const RankShape s = rank_shape(m, p, tokens);
  if (m.mla.enabled()) mla_projections(s, m.mla, ops);
  price_moe(m, p, s, moe_tokens, ops);
}

// Attention as the mean over the layers' window groups.
OpCost variant_attention(const ModelSpec& m, const StepWork& work, const StepShapeParams& p,
                         const BatchTotals& all) {
  const RankShape s = rank_shape(m, p, all.tokens);
  OpCost mean;
  double seen = 0;
  for (const auto& [window, count] : window_groups(m)) {
    const BatchTotals t = window == 0 ? all : totals_of(work, window);
    const OpCost one = m.mla.enabled() ? mla_attention(t, s, m.mla) : dense_attention(t, s);
    mean = seen == 0 ? one : blend(mean, seen, one, static_cast<double>(count));
    seen += static_cast<double>(count);
  }
  mean.present = true;
  return mean;
}

}  // namespace kvsim::step_detail
