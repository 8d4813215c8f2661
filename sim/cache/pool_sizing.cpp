#include "sim/cache/pool_sizing.hpp"

#include <algorithm>
#include <cmath>

#include "models/pipeline_stages.hpp"

namespace kvsim {

Bytes derived_activation_reserve(const ModelSpec& model, int64_t tp, int64_t max_batched_tokens,
                                 int64_t max_num_seqs, bool with_logits) {
  const int64_t a = model.activation_bytes();
  const int64_t per_token = (2 * model.hidden_size + 3 * model.intermediate_size / tp) * a;
  const int64_t logits = with_logits ? max_num_seqs * (model.vocab_size / tp) * 4 : 0;
  return max_batched_tokens * per_token + logits;
}

namespace {

// One stage's pool: its devices' budget less their weights and activations,
// in blocks of its own layers' KV.
PoolSizing size_stage(const ModelSpec& model, const PipelineStage& stage, const PoolSizingInput& in,
                      Bytes budget) {
  PoolSizing s;
  const ModelSpec m = stage_model(model, stage);
  s.kv_bytes_per_token = m.kv_bytes_per_token(in.kv_dtype_bytes, in.tp);
  s.block_bytes = s.kv_bytes_per_token * in.block_size;
  // The per-attention-type groups are laid out over the whole model; a
  // pipeline split of a hybrid model is refused by the scenario's checks.
  const bool whole_model = stage.first_layer == 0 && stage.layers == model.num_hidden_layers;
  if (in.kv_groups_by_attention && whole_model) s.groups = kv_cache_groups(model);
  if (s.groups.hybrid()) {
    s.block_bytes = s.groups.page_layers * in.block_size *
                    model.kv_bytes_per_token_per_layer(in.kv_dtype_bytes, in.tp);
  }
  s.weights_bytes = in.pp <= 1 ? model.weight_bytes_per_rank(in.tp, in.ep)
                               : stage_weight_bytes_per_rank(model, stage, in.tp, in.ep);
  if (stage.last && (in.drafter_weight_bytes > 0 || in.drafter_kv_bytes_per_token > 0)) {
    // The drafter runs after the last stage's LM head (vLLM's proposer).
    s.drafter_weights_bytes = in.drafter_weight_bytes;
    s.drafter_kv_bytes_per_token = in.drafter_kv_bytes_per_token;
    s.weights_bytes += in.drafter_weight_bytes;
    s.kv_bytes_per_token += in.drafter_kv_bytes_per_token;
    s.block_bytes += in.drafter_kv_bytes_per_token * in.block_size;
  }
  s.activation_reserve = in.activation_reserve.value_or(derived_activation_reserve(
      model, in.tp, in.max_batched_tokens, in.max_num_seqs, /*with_logits=*/stage.last));
  s.budget = budget;
  s.kv_budget = s.budget - s.weights_bytes - s.activation_reserve;
  s.num_blocks = (s.kv_budget > 0 && s.block_bytes > 0) ? s.kv_budget / s.block_bytes : 0;
  s.binding_stage = stage.index;
  s.stage_layers = stage.layers;
  return s;
}

}  // namespace

PoolSizing size_paged_pool(const ModelSpec& model, const PoolSizingInput& in) {
  // floor(memory * fraction): the fraction is a user-facing decimal, the
  // budget an integer number of bytes.
  const auto budget =
      static_cast<Bytes>(std::floor(static_cast<double>(in.device_memory) * in.memory_fraction));
  const int64_t pp = std::max<int64_t>(in.pp, 1);
  PoolSizing s;
  if (pp == 1 || !pipeline_problem(model, pp, in.pipeline_layers).empty()) {
    // One stage (a layout the model cannot take is refused by the
    // scenario's checks; sized as one stage here so this stays total).
    s = size_stage(model, PipelineStage{0, 0, model.num_hidden_layers, true, true}, in, budget);
  } else {
    // Every stage keeps the same number of blocks (a block holds a token
    // range in every layer): the stage with the fewest binds.
    bool any = false;
    for (const PipelineStage& stage :
         pipeline_stages(model.num_hidden_layers, pp, in.pipeline_layers)) {
      const PoolSizing one = size_stage(model, stage, in, budget);
      if (!any || one.num_blocks < s.num_blocks) s = one;
      any = true;
    }
  }
  s.capacity_tokens = s.num_blocks * in.block_size;
  if (s.groups.hybrid())
    s.capacity_tokens =
        s.num_blocks / (s.groups.full_groups + s.groups.sliding_groups) * in.block_size;
  s.host_blocks = s.block_bytes > 0 ? in.swap_space / s.block_bytes : 0;
  const auto chunk_budget = static_cast<Bytes>(
      std::floor(static_cast<double>(in.device_memory) * in.chunk_pool_fraction));
  s.chunk_pool_blocks = s.block_bytes > 0 ? chunk_budget / s.block_bytes : 0;
  s.chunk_pool_bytes = s.chunk_pool_blocks * s.block_bytes;
  s.chunk_pool = in.chunk_pool_fraction > 0;
  s.instance_block_bytes =
      (model.kv_bytes_per_token(in.kv_dtype_bytes, in.tp) + in.drafter_kv_bytes_per_token) *
      in.block_size * in.tp;
  return s;
}

}  // namespace kvsim
