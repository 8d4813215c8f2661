#include "models/pipeline_stages.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace kvsim {

namespace {

std::string layout_problem(int64_t layers, int64_t stages, const std::vector<int64_t>& partition,
                           const std::string& model) {
  if (stages < 1) return fmt::format("pipeline size {} must be >= 1", stages);
  if (stages > layers)
    return fmt::format("{} stages but {} has {} layers: each stage needs at least one", stages,
                       model, layers);
  if (partition.empty()) return {};
  if (static_cast<int64_t>(partition.size()) != stages)
    return fmt::format("the layer partition has {} entries for {} stages", partition.size(),
                       stages);
  int64_t sum = 0;
  for (const int64_t n : partition) {
    if (n < 1) return fmt::format("a stage of {} layers in the partition: each needs one", n);
    sum += n;
  }
  if (sum != layers)
    return fmt::format("the layer partition adds up to {} layers, {} has {}", sum, model, layers);
  return {};
}

}  // namespace

std::vector<PipelineStage> pipeline_stages(int64_t layers, int64_t stages,
                                           const std::vector<int64_t>& partition) {
  if (const std::string why = layout_problem(layers, stages, partition, "the model"); !why.empty())
    throw std::invalid_argument(why);
  std::vector<int64_t> share = partition;
  if (share.empty()) {
    share.assign(static_cast<size_t>(stages), layers / stages);
    const int64_t remaining = layers % stages;
    for (int64_t i = 2; i < remaining + 2; ++i) ++share[static_cast<size_t>(stages - i)];
  }
  std::vector<PipelineStage> out;
  int64_t first = 0;
  for (int64_t s = 0; s < stages; ++s) {
    const int64_t n = share[static_cast<size_t>(s)];
    out.push_back({s, first, n, s == 0, s == stages - 1});
    first += n;
  }
  return out;
}

std::string pipeline_problem(const ModelSpec& model, int64_t stages,
                             const std::vector<int64_t>& partition) {
  return layout_problem(model.num_hidden_layers, stages, partition, model.name);
}

ModelSpec stage_model(const ModelSpec& model, const PipelineStage& stage) {
  if (stage.first_layer < 0 || stage.layers < 1 ||
      stage.first_layer + stage.layers > model.num_hidden_layers)
    throw std::invalid_argument(fmt::format("stage layers {}..{} outside the model's {}",
                                            stage.first_layer, stage.first_layer + stage.layers,
                                            model.num_hidden_layers));
  if (stage.first_layer == 0 && stage.layers == model.num_hidden_layers) return model;
  ModelSpec m = model;
  m.num_hidden_layers = stage.layers;
  m.layer_attention.clear();
  for (int64_t i = 0; i < stage.layers; ++i) {
    const auto layer = static_cast<size_t>(stage.first_layer + i);
    m.layer_attention.push_back(layer < model.layer_attention.size() ? model.layer_attention[layer]
                                                                     : LayerAttention{});
  }
  if (model.moe.enabled()) {
    // is_moe_layer of the slice = is_moe_layer of the whole at first + i.
    m.moe.first_dense_layers = 0;
    m.moe.sparse_step = 1;
    m.moe.layer_freq = 1;
    m.moe.dense_layers.clear();
    for (int64_t i = 0; i < stage.layers; ++i)
      if (!model.is_moe_layer(stage.first_layer + i)) m.moe.dense_layers.push_back(i);
  }
  return m;
}

Bytes stage_weight_bytes_per_rank(const ModelSpec& model, const PipelineStage& stage, int64_t tp,
                                  int64_t ep) {
  const ModelSpec m = stage_model(model, stage);
  // weight_bytes_per_rank counts the embedding, the LM head (unless tied) and
  // the final norm with every model: take them out, then put back what this
  // stage holds.
  const Bytes eb = model.embedding_bytes_per_parameter();
  const int64_t vocab_rows = (model.vocab_size + tp - 1) / tp;
  const int64_t table = vocab_rows * model.hidden_size;
  const int64_t counted = table * (model.tie_word_embeddings ? 1 : 2) + model.hidden_size;
  const bool whole = stage.first && stage.last;
  int64_t held = 0;
  if (stage.first) held += table;
  if (stage.last) held += (model.tie_word_embeddings && whole ? 0 : table) + model.hidden_size;
  return m.weight_bytes_per_rank(tp, ep) - counted * eb + held * eb;
}

}  // namespace kvsim
