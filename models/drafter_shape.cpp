#include "models/drafter_shape.hpp"

#include <cmath>
#include <stdexcept>

namespace kvsim {
namespace {

// The target's shape cut to `layers` decoder layers of full attention.
ModelSpec layers_of(const ModelSpec& target, int64_t layers, const std::string& name) {
  ModelSpec m = target;
  m.name = name;
  m.num_hidden_layers = layers;
  m.num_nextn_predict_layers = 0;
  m.layer_attention.assign(static_cast<size_t>(layers), LayerAttention{});
  return m;
}

// Weights held once per drafter whatever it shares: `m` without its
// embedding and LM head (a vocabulary of 0 has neither).
Bytes without_vocabulary(const ModelSpec& m, int64_t tp, int64_t ep) {
  ModelSpec bare = m;
  bare.vocab_size = 0;
  return bare.weight_bytes_per_rank(tp, ep);
}

}  // namespace

DrafterShape mtp_drafter(const ModelSpec& target) {
  const int64_t n = target.num_nextn_predict_layers;
  if (n < 1) throw std::invalid_argument(target.name + " has no multi-token-prediction layers");
  DrafterShape d;
  d.model = layers_of(target, n, target.name + "-mtp");
  // The module's layer is the kind the target's next layer would be
  // (DeepSeek-V3's layer 61 is past first_k_dense_replace: MoE).
  if (target.is_moe_layer(target.num_hidden_layers)) {
    d.model.moe.first_dense_layers = 0;
    d.model.moe.dense_layers.clear();
    d.model.moe.sparse_step = 1;
    d.model.moe.layer_freq = 1;
  } else {
    d.model.moe = MoeShape{};
  }
  const int64_t h = target.hidden_size;
  d.extra_linear = n * 2 * h * h;  // eh_proj
  d.extra_small = n * 2 * h;       // enorm, hnorm (shared_head.norm is the final norm)
  d.holds_embedding = false;
  d.holds_lm_head = false;
  return d;
}

DrafterShape eagle_drafter(const ModelSpec& target, bool eagle3) {
  DrafterShape d;
  d.model = layers_of(target, 1, target.name + (eagle3 ? "-eagle3" : "-eagle"));
  d.model.moe = MoeShape{};  // a dense MLP of intermediate_size
  const int64_t h = target.hidden_size;
  d.extra_linear = (eagle3 ? 3 : 2) * h * h;  // fc
  if (eagle3)  // q, k, v read 2h: the embedding beside the fused hidden state
    d.extra_linear +=
        h * (target.num_attention_heads + 2 * target.num_key_value_heads) * target.head_dim;
  d.holds_embedding = false;
  d.holds_lm_head = eagle3;
  return d;
}

DrafterShape draft_model_drafter(const ModelSpec& draft) {
  DrafterShape d;
  d.model = draft;
  return d;
}

Bytes DrafterShape::weight_bytes_per_rank(int64_t tp, int64_t ep) const {
  const int64_t table = (model.vocab_size + tp - 1) / tp * model.hidden_size;
  const int64_t vocabulary = model.tie_word_embeddings
                                 ? (holds_embedding || holds_lm_head ? table : 0)
                                 : (holds_embedding ? table : 0) + (holds_lm_head ? table : 0);
  const double linear =
      model.linear_weight_bytes_per_parameter() * static_cast<double>((extra_linear + tp - 1) / tp);
  const Bytes small = (vocabulary + extra_small) * model.embedding_bytes_per_parameter();
  return without_vocabulary(model, tp, ep) + static_cast<Bytes>(std::ceil(linear)) + small;
}

int64_t DrafterShape::parameter_count() const {
  ModelSpec bare = model;
  bare.vocab_size = 0;
  const int64_t table = model.vocab_size * model.hidden_size;
  const int64_t vocabulary = model.tie_word_embeddings
                                 ? (holds_embedding || holds_lm_head ? table : 0)
                                 : (holds_embedding ? table : 0) + (holds_lm_head ? table : 0);
  return bare.parameter_count() + extra_linear + extra_small + vocabulary;
}

}  // namespace kvsim
