// Per-step operator costs: hand-computed FLOPs and bytes for a small made-up
// model, tensor-parallel sharding, which ops run, and the dependency structure.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "models/step_ops.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// h=64, 2 layers, 8 heads of d=8, 4 KV heads, I=96, vocab 100, fp16, untied:
// every byte width (a, w, embedding, kv) is 2 unless a test changes it.
ModelSpec tiny_model() {
  ModelSpec m;
  m.name = "tiny";
  m.hidden_size = 64;
  m.num_hidden_layers = 2;
  m.num_attention_heads = 8;
  m.num_key_value_heads = 4;
  m.head_dim = 8;
  m.intermediate_size = 96;
  m.vocab_size = 100;
  m.max_position_embeddings = 256;
  m.weights_dtype = "fp16";
  return m;
}

const OpCost& cost(const StepOpCosts& ops, OpKind k) {
  return ops[static_cast<size_t>(k)];
}

// Three decoding sequences with contexts 10, 20 and 30.
StepWork decode_batch() {
  StepWork w;
  w.seqs = {{1, 10, true}, {1, 20, true}, {1, 30, true}};
  return w;
}

TEST(StepOps, DecodeOfThreeSequencesByHand) {
  const StepOpCosts ops = step_op_costs(tiny_model(), decode_batch(), {1, 2});
  // T = 3 tokens, S = 3 samplers, Hq = 8, Hkv = 4, qkv columns (8+2*4)*8 = 128.
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::qkv_proj).flops, 2.0 * 3 * 64 * 128);  // 49152
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::qkv_proj).mem_bytes, 64 * 128 * 2 + 3 * (64 + 128) * 2);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::o_proj).flops, 24576);  // 2*3*64*64
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::o_proj).mem_bytes, 8192 + 768);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::mlp_gate_up).flops, 73728);  // 2*3*64*192
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::mlp_gate_up).mem_bytes, 24576 + 1536);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::mlp_act).flops, 1440);      // 5*3*96
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::mlp_act).mem_bytes, 1728);  // 3*3*96*2
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::mlp_down).flops, 36864);    // 2*3*96*64
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::mlp_down).mem_bytes, 12288 + 960);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::input_norm).flops, 768);  // 4*3*64
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::input_norm).mem_bytes, 768 + 128);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::post_norm).mem_bytes, 896);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::rope).flops, 864);       // 3*3*12*8
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::rope).mem_bytes, 1152);  // 2*3*12*8*2
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::kv_store).flops, 0);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::kv_store).mem_bytes, 768);  // 3*2*4*8*(2+2)
  // Attention: pairs 11 + 21 + 31 = 63; flops 4*8*8*63; K,V of 63 tokens
  // (63*2*4*8*2 = 8064) plus Q and O (2*3*8*8*2 = 768).
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::attention).flops, 16128);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::attention).mem_bytes, 8064 + 768);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::embedding).mem_bytes, 768);  // 2*3*64*2
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::final_norm).mem_bytes, 896);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::lm_head).flops, 38400);  // 2*3*64*100
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::lm_head).mem_bytes, 12800 + 384 + 600);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::sampling).flops, 300);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::sampling).mem_bytes, 1200);  // 3*100*4
  for (size_t i = 0; i < kOpKindCount; ++i) {
    EXPECT_DOUBLE_EQ(ops[i].link_bytes, 0) << op_kind_name(static_cast<OpKind>(i));
    EXPECT_DOUBLE_EQ(ops[i].host_bytes, 0) << op_kind_name(static_cast<OpKind>(i));
  }
}

TEST(StepOps, PrefillChunkWithCachedContextByHand) {
  StepWork w;
  w.seqs = {{4, 6, false}};  // a middle chunk: 4 new tokens after 6 cached, no sample
  const StepOpCosts ops = step_op_costs(tiny_model(), w, {1, 2});
  // Causal pairs: query j sees 6 + j + 1 keys -> 7+8+9+10 = 34 = 4*6 + 4*5/2.
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::attention).flops, 4.0 * 8 * 8 * 34);  // 8704
  // K,V of 10 tokens (10*2*4*8*2 = 1280) + Q and O (2*4*8*8*2 = 1024).
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::attention).mem_bytes, 1280 + 1024);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::qkv_proj).flops, 2.0 * 4 * 64 * 128);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::kv_store).mem_bytes, 4 * 2 * 4 * 8 * (2 + 2));
  EXPECT_TRUE(cost(ops, OpKind::attention).present);
  EXPECT_TRUE(cost(ops, OpKind::final_norm).present);  // vLLM norms every token
  EXPECT_FALSE(cost(ops, OpKind::lm_head).present);
  EXPECT_FALSE(cost(ops, OpKind::sampling).present);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::lm_head).flops, 0);
}

TEST(StepOps, MixedBatchAddsUp) {
  StepWork mixed = decode_batch();
  mixed.seqs.push_back({4, 6, true});  // last prefill chunk: samples
  const StepOpCosts ops = step_op_costs(tiny_model(), mixed, {1, 2});
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::attention).flops, 4.0 * 8 * 8 * (63 + 34));
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::qkv_proj).flops, 2.0 * 7 * 64 * 128);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::lm_head).flops, 2.0 * 4 * 64 * 100);
}

TEST(StepOps, TensorParallelHalvesGemmsAndAddsAllReduce) {
  const ModelSpec m = tiny_model();
  const StepOpCosts one = step_op_costs(m, decode_batch(), {1, 2});
  const StepOpCosts two = step_op_costs(m, decode_batch(), {2, 2});
  for (OpKind k : {OpKind::qkv_proj, OpKind::o_proj, OpKind::mlp_gate_up, OpKind::mlp_down,
                   OpKind::attention, OpKind::lm_head, OpKind::mlp_act}) {
    EXPECT_DOUBLE_EQ(cost(two, k).flops * 2, cost(one, k).flops) << op_kind_name(k);
  }
  EXPECT_DOUBLE_EQ(cost(two, OpKind::kv_store).mem_bytes * 2,
                   cost(one, OpKind::kv_store).mem_bytes);
  // Norms are replicated: the same work on every rank.
  EXPECT_DOUBLE_EQ(cost(two, OpKind::input_norm).flops, cost(one, OpKind::input_norm).flops);
  for (OpKind k : {OpKind::attn_allreduce, OpKind::mlp_allreduce}) {
    EXPECT_FALSE(cost(one, k).present);
    EXPECT_DOUBLE_EQ(cost(one, k).link_bytes, 0);
    EXPECT_TRUE(cost(two, k).present);
    // Ring: 2*(tp-1)/tp * T*h*a = 1 * 3*64*2 = 384 bytes.
    EXPECT_DOUBLE_EQ(cost(two, k).link_bytes, 384);
    EXPECT_DOUBLE_EQ(cost(two, k).mem_bytes, 384);
  }
  const StepOpCosts four = step_op_costs(m, decode_batch(), {4, 2});
  EXPECT_DOUBLE_EQ(cost(four, OpKind::mlp_allreduce).link_bytes, 2.0 * 3 / 4 * 3 * 64 * 2);
}

TEST(StepOps, KvHeadsReplicateBeyondTheirCount) {
  // tp = 8 > 4 KV heads: each rank still holds and projects one KV head.
  const StepOpCosts ops = step_op_costs(tiny_model(), decode_batch(), {8, 2});
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::qkv_proj).flops, 2.0 * 3 * 64 * (1 + 2 * 1) * 8);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::kv_store).mem_bytes, 3 * 2 * 1 * 8 * (2 + 2));
}

TEST(StepOps, DtypesChangeBytesNotFlops) {
  ModelSpec m = tiny_model();
  const StepOpCosts fp16 = step_op_costs(m, decode_batch(), {1, 2});
  const StepOpCosts int8_kv = step_op_costs(m, decode_batch(), {1, 1});
  EXPECT_DOUBLE_EQ(cost(int8_kv, OpKind::kv_store).mem_bytes, 3 * 2 * 4 * 8 * (2 + 1));
  EXPECT_DOUBLE_EQ(cost(int8_kv, OpKind::attention).mem_bytes, 63 * 2 * 4 * 8 * 1 + 768);
  EXPECT_DOUBLE_EQ(cost(int8_kv, OpKind::attention).flops, cost(fp16, OpKind::attention).flops);

  m.weights_dtype = "w8a8";  // linear weights 1 B, activations and lm_head 2 B
  const StepOpCosts w8 = step_op_costs(m, decode_batch(), {1, 2});
  EXPECT_DOUBLE_EQ(cost(w8, OpKind::qkv_proj).mem_bytes, 64 * 128 * 1 + 3 * (64 + 128) * 2);
  EXPECT_DOUBLE_EQ(cost(w8, OpKind::lm_head).mem_bytes, cost(fp16, OpKind::lm_head).mem_bytes);
  EXPECT_DOUBLE_EQ(cost(w8, OpKind::qkv_proj).flops, cost(fp16, OpKind::qkv_proj).flops);

  m.weights_dtype = "fp32";  // everything 4 B
  const StepOpCosts fp32 = step_op_costs(m, decode_batch(), {1, 4});
  EXPECT_DOUBLE_EQ(cost(fp32, OpKind::o_proj).mem_bytes, 2 * cost(fp16, OpKind::o_proj).mem_bytes);
}

TEST(StepOps, FamilyExtrasCostSomething) {
  ModelSpec m = tiny_model();
  const StepOpCosts plain = step_op_costs(m, decode_batch(), {1, 2});
  m.attention_bias = true;  // Qwen2: one add per qkv output, bias read once
  const StepOpCosts biased = step_op_costs(m, decode_batch(), {1, 2});
  EXPECT_DOUBLE_EQ(cost(biased, OpKind::qkv_proj).flops - cost(plain, OpKind::qkv_proj).flops,
                   3 * 128);
  EXPECT_DOUBLE_EQ(
      cost(biased, OpKind::qkv_proj).mem_bytes - cost(plain, OpKind::qkv_proj).mem_bytes, 128 * 2);
  m.attention_bias = false;
  m.qk_norm = true;  // Qwen3: per-head q/k RMSNorm folded into rope
  const StepOpCosts normed = step_op_costs(m, decode_batch(), {1, 2});
  EXPECT_DOUBLE_EQ(cost(normed, OpKind::rope).flops, 7.0 * 3 * 12 * 8);
  EXPECT_DOUBLE_EQ(cost(normed, OpKind::rope).mem_bytes, 2 * 1152 + 2 * 8 * 2);
}

TEST(StepOps, SwapsAndCopiesOnly) {
  StepWork w;
  w.swap_in_bytes = 1000;
  w.swap_out_bytes = 3000;
  w.kv_copy_bytes = 500;
  const StepOpCosts ops = step_op_costs(tiny_model(), w, {1, 2});
  EXPECT_TRUE(cost(ops, OpKind::swap_in).present);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::swap_in).host_bytes, 1000);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::swap_in).mem_bytes, 1000);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::swap_out).host_bytes, 3000);
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::kv_copy).mem_bytes, 1000);  // read + write
  EXPECT_DOUBLE_EQ(cost(ops, OpKind::kv_copy).host_bytes, 0);
  for (size_t i = 0; i < kOpKindCount; ++i) {
    const OpKind k = static_cast<OpKind>(i);
    const bool movement = k == OpKind::swap_in || k == OpKind::swap_out || k == OpKind::kv_copy;
    EXPECT_EQ(ops[i].present, movement) << op_kind_name(k);
  }
}

TEST(StepOps, EmptyStepHasNothingPresent) {
  StepWork w;
  w.seqs = {{0, 50, false}};  // a sequence with no work this step
  const StepOpCosts ops = step_op_costs(tiny_model(), w, {2, 2});
  for (size_t i = 0; i < kOpKindCount; ++i) {
    EXPECT_FALSE(ops[i].present) << op_kind_name(static_cast<OpKind>(i));
    EXPECT_DOUBLE_EQ(ops[i].mem_bytes, 0) << op_kind_name(static_cast<OpKind>(i));
  }
}

TEST(StepOps, PresentOpsOfADecodeStep) {
  const StepOpCosts ops = step_op_costs(tiny_model(), decode_batch(), {1, 2});
  for (size_t i = 0; i < kOpKindCount; ++i) {
    const OpKind k = static_cast<OpKind>(i);
    const bool expected = k != OpKind::swap_in && k != OpKind::swap_out && k != OpKind::kv_copy &&
                          k != OpKind::kv_rerope && k != OpKind::attn_allreduce &&
                          k != OpKind::mlp_allreduce && k != OpKind::moe_dispatch &&
                          k != OpKind::moe_combine;
    EXPECT_EQ(ops[i].present, expected) << op_kind_name(k);
  }
}

TEST(StepOps, BadInputsThrow) {
  const ModelSpec m = tiny_model();
  EXPECT_THROW(step_op_costs(m, decode_batch(), {0, 2}), std::invalid_argument);
  EXPECT_THROW(step_op_costs(m, decode_batch(), {1, 0}), std::invalid_argument);
  StepWork negative;
  negative.seqs = {{-1, 0, false}};
  EXPECT_THROW(step_op_costs(m, negative, {1, 2}), std::invalid_argument);
  StepWork negative_swap;
  negative_swap.swap_in_bytes = -5;
  EXPECT_THROW(step_op_costs(m, negative_swap, {1, 2}), std::invalid_argument);
}

// --- names and dependencies --------------------------------------------------

TEST(StepOps, NamesAreUniqueAndPerLayerMatchesTheLayerList) {
  std::set<std::string> names;
  const StepDependencies deps = step_dependencies();
  for (size_t i = 0; i < kOpKindCount; ++i) {
    const OpKind k = static_cast<OpKind>(i);
    const std::string name(op_kind_name(k));
    EXPECT_NE(name, "unknown");
    EXPECT_TRUE(names.insert(name).second) << name;
    const bool in_layer =
        std::find(deps.layer_ops.begin(), deps.layer_ops.end(), k) != deps.layer_ops.end();
    EXPECT_EQ(op_is_per_layer(k), in_layer) << name;
  }
  EXPECT_EQ(op_kind_name(OpKind::kv_store), "kv_store");
}

TEST(StepOps, EveryOpAppearsOnceInTheDependencies) {
  const StepDependencies deps = step_dependencies();
  std::map<OpKind, int> seen;
  for (const auto* group : {&deps.pre_ops, &deps.layer_ops, &deps.post_ops})
    for (OpKind k : *group) ++seen[k];
  EXPECT_EQ(seen.size(), kOpKindCount);
  for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << op_kind_name(k);
  EXPECT_EQ(deps.layer_ops.front(), deps.layer_entry);
  EXPECT_EQ(deps.layer_ops.back(), deps.layer_exit);
}

// Unrolls pre ops, `layers` copies of the layer and post ops into one graph
// (node = group * kOpKindCount + op) and checks it is acyclic (Kahn) and that
// every edge joins ops of the groups it claims.
TEST(StepOps, DependencyGraphIsAcyclicAndWellFormed) {
  const StepDependencies deps = step_dependencies();
  auto in = [](const std::vector<OpKind>& v, OpKind k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  };
  auto position = [](const std::vector<OpKind>& v, OpKind k) {
    return std::find(v.begin(), v.end(), k) - v.begin();
  };
  // Layer edges follow program order, so program order is a valid schedule.
  for (const auto& [from, to] : deps.layer_edges) {
    ASSERT_TRUE(in(deps.layer_ops, from) && in(deps.layer_ops, to));
    EXPECT_LT(position(deps.layer_ops, from), position(deps.layer_ops, to))
        << op_kind_name(from) << " -> " << op_kind_name(to);
  }
  for (const auto& [from, to] : deps.pre_to_first_layer)
    EXPECT_TRUE(in(deps.pre_ops, from) && in(deps.layer_ops, to)) << op_kind_name(from);
  for (const auto& [from, to] : deps.last_layer_to_post)
    EXPECT_TRUE(in(deps.layer_ops, from) && in(deps.post_ops, to)) << op_kind_name(to);
  for (const auto& [from, to] : deps.post_edges)
    EXPECT_TRUE(in(deps.post_ops, from) && in(deps.post_ops, to));

  constexpr int kLayers = 3;
  const int groups = kLayers + 2;  // 0 = pre, 1..kLayers = layers, last = post
  const int n = groups * static_cast<int>(kOpKindCount);
  std::vector<std::vector<int>> out(n);
  std::vector<int> indegree(n, 0);
  auto id = [](int group, OpKind k) {
    return group * static_cast<int>(kOpKindCount) + static_cast<int>(k);
  };
  auto edge = [&](int a, int b) {
    out[a].push_back(b);
    ++indegree[b];
  };
  for (const auto& [from, to] : deps.pre_to_first_layer) edge(id(0, from), id(1, to));
  for (int l = 1; l <= kLayers; ++l) {
    for (const auto& [from, to] : deps.layer_edges) edge(id(l, from), id(l, to));
    if (l > 1) edge(id(l - 1, deps.layer_exit), id(l, deps.layer_entry));
  }
  for (const auto& [from, to] : deps.last_layer_to_post)
    edge(id(kLayers, from), id(groups - 1, to));
  for (const auto& [from, to] : deps.post_edges) edge(id(groups - 1, from), id(groups - 1, to));

  std::vector<int> ready;
  for (int v = 0; v < n; ++v)
    if (indegree[v] == 0) ready.push_back(v);
  int visited = 0;
  while (!ready.empty()) {
    const int v = ready.back();
    ready.pop_back();
    ++visited;
    for (int w : out[v])
      if (--indegree[w] == 0) ready.push_back(w);
  }
  EXPECT_EQ(visited, n) << "the unrolled step graph has a cycle";

  // Within a layer only the entry has no producer: nothing floats free.
  for (OpKind k : deps.layer_ops) {
    if (k == deps.layer_entry) continue;
    const bool has_producer = std::any_of(deps.layer_edges.begin(), deps.layer_edges.end(),
                                          [k](const auto& e) { return e.second == k; });
    EXPECT_TRUE(has_producer) << op_kind_name(k);
  }
  // Swapped-in and copied KV is in place before layer 0 attends; swap_out
  // overlaps with compute (no consumer).
  auto has_edge = [&](OpKind a, OpKind b) {
    return std::find(deps.pre_to_first_layer.begin(), deps.pre_to_first_layer.end(),
                     std::make_pair(a, b)) != deps.pre_to_first_layer.end();
  };
  EXPECT_TRUE(has_edge(OpKind::embedding, OpKind::input_norm));
  EXPECT_TRUE(has_edge(OpKind::swap_in, OpKind::attention));
  EXPECT_TRUE(has_edge(OpKind::kv_copy, OpKind::attention));
  for (const auto& e : deps.pre_to_first_layer) EXPECT_NE(e.first, OpKind::swap_out);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
