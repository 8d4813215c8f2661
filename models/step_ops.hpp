#pragma once
// The operators one forward step of a decoder-only model runs, with their
// FLOPs and memory bytes as a function of the batch (how many new tokens each
// sequence brings and how much context it attends to). The model knows shapes
// and data dependencies; it knows nothing of bandwidths (DESIGN: nothing above
// the device knows a bandwidth).
#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "models/model_spec.hpp"

namespace kvsim {

enum class OpKind : uint8_t {
  // once per step, before the layers
  embedding,
  swap_in,    // host -> device KV blocks (preempted sequences coming back)
  swap_out,   // device -> host KV blocks (sequences being preempted)
  kv_rerope,  // cached keys turned to a new position in place (seed 003 chunk remap)
  kv_copy,    // device-side block copies requested by the cache policy
  // per decoder layer
  input_norm,
  qkv_proj,
  rope,
  kv_store,
  attention,
  o_proj,
  attn_allreduce,  // only with tensor parallelism > 1
  post_norm,
  mlp_gate_up,
  mlp_act,
  mlp_down,
  mlp_allreduce,  // only with tensor parallelism > 1
  // once per step, after the layers
  final_norm,
  lm_head,
  sampling,
  // per decoder layer, mixture-of-experts layers with expert parallelism
  // only: tokens sent to the ranks holding their experts and the expert
  // outputs sent back (all-to-all over the device link). Listed last so the
  // devices' placement tables only grow at their end.
  moe_dispatch,
  moe_combine,
  count
};
constexpr size_t kOpKindCount = static_cast<size_t>(OpKind::count);
std::string_view op_kind_name(OpKind kind);
bool op_is_per_layer(OpKind kind);

// What one sequence contributes to a step.
struct SeqWork {
  int64_t query_tokens = 0;    // new tokens computed this step (prefill chunk or 1 for decode)
  int64_t context_before = 0;  // tokens already in the KV cache before this step
  bool samples = false;        // produces a token this step (last chunk of prefill, or decode)
};

// The batch reduced to the sums the cost formulas need. Every term is a sum
// of whole numbers, so adding sequences in any order (or keeping the sums
// as sequences change) gives the same values as walking `seqs`.
struct StepTotals {
  double tokens = 0;             // T: new tokens computed this step
  double samplers = 0;           // S: sequences that produce a token
  double attended_pairs = 0;     // sum_i P_i, (query, key) pairs under the causal mask
  double kv_tokens_read = 0;     // sum_i (c_i + q_i), cached tokens whose K and V are read
  double context_read = 0;       // sum_i c_i over sequences that compute: KV of earlier steps
  double prefill_pairs = 0;      // the part of attended_pairs from sequences with q_i > 1
  double prefill_kv_tokens = 0;  // the part of kv_tokens_read from sequences with q_i > 1
  // Adds one sequence (query_tokens, context_before >= 0).
  void add(const SeqWork& s, bool fixed_shape);
  // Adds `decodes` sequences computing one token each and sampling it,
  // after `context` cached tokens in all: add() of each, summed at once
  // (q = 1: q*c + q*(q+1)/2 == q*(c+q) == c + 1 pairs). A serving step's
  // decodes and a drafter's one-token passes are priced through it.
  void add_decodes(int64_t decodes, int64_t context) {
    const auto n = static_cast<double>(decodes);
    const auto c = static_cast<double>(context);
    tokens += n;
    samplers += n;
    attended_pairs += c + n;
    kv_tokens_read += c + n;
    context_read += c;
  }
};

// One step of the engine as the timing model sees it.
struct StepWork {
  std::vector<SeqWork> seqs;
  // When set, the engine summed the sequences itself and `seqs` is not read
  // (a serving step then costs no per-sequence record).
  bool totals_given = false;
  StepTotals totals;
  Bytes swap_in_bytes = 0;    // over the host link, per rank
  Bytes swap_out_bytes = 0;   // over the host link, per rank
  Bytes kv_copy_bytes = 0;    // device-side copy, per rank (read + write counted by the op)
  int64_t rerope_tokens = 0;  // tokens whose cached keys are re-rotated (all layers)
  // A fixed-shape graph (seed 002's AR-n graphs) computes every row it is
  // given: attention over the whole [query x (context + query)] block, the
  // causal part masked rather than skipped, and logits for every token, not
  // only the sampled ones. A serving engine's kernels skip both (false).
  bool fixed_shape = false;
  // A fixed-shape graph exported to return only its sampled row's logits
  // (AI Hub's 2024 Llama 2 / Llama 3 prompt processors slice the last hidden
  // state before the LM head: num_logits_to_return = 1): the LM head then
  // runs for the sampled rows only, as in a serving engine.
  bool sampled_logits_only = false;
  // Tokens the MoE layers' expert group routes this step, summed over the
  // data-parallel attention ranks that share it (vLLM's DP attention with
  // EP: every rank's tokens meet at the dispatch). 0: this rank's tokens
  // times ep / tp, the other replicas taken as alike.
  double moe_tokens = 0;
};

// Work of one operator on one tensor-parallel rank. For per-layer ops the
// figures are for ONE layer; the step runs them num_hidden_layers times.
// When layers differ (dense-first and MoE layers, sliding and full
// attention), a per-layer op's figures are the mean over the layers, so the
// step's totals (layers x figure) are exact; the roofline of the mean is an
// approximation of the mean of the rooflines (the device graph has one
// duration per op kind).
struct OpCost {
  double flops = 0;       // floating-point (or integer MAC x2) operations
  double mem_bytes = 0;   // bytes read + written in device memory (HBM / DDR)
  double link_bytes = 0;  // bytes over the device-to-device link (all-reduce)
  double host_bytes = 0;  // bytes over the host link (swap)
  bool present = false;   // the op runs in this step (e.g. no all-reduce at tp=1)
  // What mem_bytes is made of, for devices that keep some of it on chip (an
  // HTP keeps a layer's intermediates in VTCM, seed 002): parameters read,
  // KV cache entries of earlier steps read, KV entries this step writes, and
  // the activations that outlive a layer (the residual stream read at a
  // layer's entry and written at its exit, and the logits). The rest of
  // mem_bytes is intermediate activations.
  double weight_bytes = 0;
  double kv_read_bytes = 0;
  double kv_write_bytes = 0;
  double residual_bytes = 0;
  // Vector-unit work an op does besides `flops` and not counted in them: the
  // softmax between QK^T and PV (~5 operations per score). A fused attention
  // kernel hides it (Ascend: folded into efficiency); a device that runs it
  // on a separate unit between two matrix passes (HTP: HVX) prices it.
  double vector_flops = 0;
  // The share of the layers the op runs on, when it runs on some only (the
  // all-to-all of a MoE model with dense-first layers): the fields above are
  // then means over all layers, and the op's fixed costs (link latency,
  // launch) are paid on that share of them.
  double layer_share = 1;
  // Bytes over the inter-node network link (RoCE) beside link_bytes over
  // the device link (HCCS): an expert all-to-all whose ranks span nodes
  // sends to the peers on other nodes over the NIC while the ones of its
  // own node go over the device link, both at once.
  double network_bytes = 0;
};
using StepOpCosts = std::array<OpCost, kOpKindCount>;

struct StepShapeParams {
  int64_t tp = 1;
  Bytes kv_dtype_bytes = 2;
  // Expert parallelism: a MoE layer's routed experts are split whole over
  // `ep` ranks (1: every rank holds every expert, tensor-parallel). ep > tp
  // means ep / tp attention replicas (data-parallel attention) share one
  // expert group; the step is one replica's, the others assumed alike.
  int64_t ep = 1;
  // Zipf exponent of expert popularity (0: uniform routing); see
  // models/moe_routing.hpp.
  double expert_skew = 0;
  // Expert-parallel ranks on one node (0: all `ep` on one node). The
  // all-to-all reaches the others of its node over the device link (HCCS)
  // and those of other nodes over the network link (RoCE).
  int64_t ep_ranks_per_node = 0;
};

// Per-op costs of a step. Pure: same inputs, same outputs.
StepOpCosts step_op_costs(const ModelSpec& model, const StepWork& work,
                          const StepShapeParams& params);

// Data dependencies between ops (producer, consumer), fixed for a model:
// within a layer, from one layer to the next (via layer_entry/layer_exit),
// and between the once-per-step ops and the first/last layer. The device turns
// these into a graph over its engines.
// An op that is not `present` in a step (the all-reduces at tp = 1, lm_head
// in a step that samples nothing) is a pass-through: its consumers depend on
// its producers. Edges only add constraints; every listed edge is a true data
// dependency (see step_ops.cpp for why each pre-op edge exists).
struct StepDependencies {
  std::vector<OpKind> pre_ops;                         // before the layers, in program order
  std::vector<OpKind> layer_ops;                       // one layer, in program order
  std::vector<OpKind> post_ops;                        // after the layers, in program order
  std::vector<std::pair<OpKind, OpKind>> layer_edges;  // within a layer
  OpKind layer_entry = OpKind::input_norm;             // first op of a layer
  OpKind layer_exit = OpKind::mlp_allreduce;           // its output feeds the next layer's entry
  // Edges from pre ops into layer 0, and from the last layer into post ops.
  std::vector<std::pair<OpKind, OpKind>> pre_to_first_layer;
  std::vector<std::pair<OpKind, OpKind>> last_layer_to_post;
  std::vector<std::pair<OpKind, OpKind>> post_edges;
};
StepDependencies step_dependencies();

}  // namespace kvsim
