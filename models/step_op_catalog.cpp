// The catalogue of a step's ops, apart from their costs: each op's name, which
// ops repeat once per layer, and the dependencies the step graph
// (devices/step_graph.hpp) schedules them by.
#include "models/step_ops.hpp"

namespace kvsim {

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::embedding:
      return "embedding";
    case OpKind::swap_in:
      return "swap_in";
    case OpKind::swap_out:
      return "swap_out";
    case OpKind::kv_copy:
      return "kv_copy";
    case OpKind::kv_rerope:
      return "kv_rerope";
    case OpKind::input_norm:
      return "input_norm";
    case OpKind::qkv_proj:
      return "qkv_proj";
    case OpKind::rope:
      return "rope";
    case OpKind::kv_store:
      return "kv_store";
    case OpKind::attention:
      return "attention";
    case OpKind::o_proj:
      return "o_proj";
    case OpKind::attn_allreduce:
      return "attn_allreduce";
    case OpKind::post_norm:
      return "post_norm";
    case OpKind::mlp_gate_up:
      return "mlp_gate_up";
    case OpKind::mlp_act:
      return "mlp_act";
    case OpKind::mlp_down:
      return "mlp_down";
    case OpKind::mlp_allreduce:
      return "mlp_allreduce";
    case OpKind::final_norm:
      return "final_norm";
    case OpKind::lm_head:
      return "lm_head";
    case OpKind::sampling:
      return "sampling";
    case OpKind::moe_dispatch:
      return "moe_dispatch";
    case OpKind::moe_combine:
      return "moe_combine";
    case OpKind::count:
      break;
  }
  return "unknown";
}

bool op_is_per_layer(OpKind kind) {
  return (kind >= OpKind::input_norm && kind <= OpKind::mlp_allreduce) ||
         kind == OpKind::moe_dispatch || kind == OpKind::moe_combine;
}

StepDependencies step_dependencies() {
  using K = OpKind;
  StepDependencies deps;
  deps.pre_ops = {K::embedding, K::swap_in, K::swap_out, K::kv_copy, K::kv_rerope};
  deps.layer_ops = {K::input_norm,   K::qkv_proj,     K::rope,           K::kv_store,
                    K::attention,    K::o_proj,       K::attn_allreduce, K::post_norm,
                    K::moe_dispatch, K::mlp_gate_up,  K::mlp_act,        K::mlp_down,
                    K::moe_combine,  K::mlp_allreduce};
  deps.post_ops = {K::final_norm, K::lm_head, K::sampling};
  deps.layer_edges = {
      {K::input_norm, K::qkv_proj},
      {K::qkv_proj, K::rope},
      {K::rope, K::kv_store},
      {K::qkv_proj, K::kv_store},  // V goes straight to the store
      {K::rope, K::attention},
      {K::kv_store, K::attention},
      {K::attention, K::o_proj},
      {K::o_proj, K::attn_allreduce},
      {K::attn_allreduce, K::post_norm},
      {K::post_norm, K::mlp_gate_up},
      {K::mlp_gate_up, K::mlp_act},
      {K::mlp_act, K::mlp_down},
      {K::mlp_down, K::mlp_allreduce},
      // Expert parallelism: the routed tokens reach their experts' ranks
      // before the expert GEMMs, and the outputs come back before the
      // layer's result is reduced (absent ops pass through).
      {K::post_norm, K::moe_dispatch},
      {K::moe_dispatch, K::mlp_gate_up},
      {K::mlp_down, K::moe_combine},
      {K::moe_combine, K::mlp_allreduce},
  };
  deps.layer_entry = K::input_norm;
  deps.layer_exit = K::mlp_allreduce;
  // Swapped-in and copied blocks must be in place before layer 0 writes new
  // tokens into them (kv_store: a swapped-in or copy-on-write block can be the
  // one receiving the token) and before it attends over them. Later layers
  // depend on them through the layer chain. swap_out has no consumer: it
  // overlaps with compute (its blocks are no longer read).
  deps.pre_to_first_layer = {
      {K::embedding, K::input_norm}, {K::swap_in, K::kv_store},  {K::swap_in, K::attention},
      {K::kv_copy, K::kv_store},     {K::kv_copy, K::attention}, {K::kv_rerope, K::attention},
  };
  deps.last_layer_to_post = {{K::mlp_allreduce, K::final_norm}};
  deps.post_edges = {{K::final_norm, K::lm_head}, {K::lm_head, K::sampling}};
  return deps;
}

}  // namespace kvsim
