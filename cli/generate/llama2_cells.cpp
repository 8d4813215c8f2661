#include "cli/generate/llama2_cells.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace kvsim::kernels {
namespace {

constexpr int64_t kUbatch = 32;  // micro-batch of the prompt's decode

GgmlType type_for(const std::string& name, KvDtype fallback) {
  if (name.empty()) {
    switch (fallback) {
      case KvDtype::fp32:
        return GgmlType::f32;
      case KvDtype::fp16:
        return GgmlType::f16;
      case KvDtype::bf16:
        return GgmlType::bf16;
      case KvDtype::int8:
        throw std::invalid_argument(
            "llama_cells stores ggml types: use --type-k/--type-v q8_0 instead of int8");
      case KvDtype::fp8_e4m3:
      case KvDtype::fp8_e5m2:
        throw std::invalid_argument(
            "llama_cells stores ggml types (f32, f16, bf16, q8_0, ...), not fp8");
    }
  }
  const auto t = parse_ggml_type(name);
  if (!t)
    throw std::invalid_argument(fmt::format("unknown ggml type '{}' (allowed: {})", name,
                                            fmt::join(ggml_type_names(), ", ")));
  return *t;
}

LlamaKvTensorShape tensor_shape(const Llama2Config& c, const GenerateOptions& o, int64_t kv_size) {
  LlamaKvTensorShape s;
  s.n_layer = c.n_layers;
  s.kv_size = kv_size;
  s.n_embd_k = s.n_embd_v = c.kv_dim();
  s.type_k = type_for(o.type_k, o.kv_dtype);
  s.type_v = type_for(o.type_v, o.kv_dtype);
  s.v_trans = o.v_trans;
  return s;
}

LlamaBehaviour behaviour_for(const std::string& name) {
  const auto b = parse_llama_behaviour(name);
  if (!b)
    throw std::invalid_argument(fmt::format("unknown llama.cpp behaviour '{}' (allowed: {})", name,
                                            fmt::join(llama_behaviour_names(), ", ")));
  return *b;
}

}  // namespace

Llama2CellsRun::Llama2CellsRun(const Llama2Weights& w, const GenerateOptions& o, int64_t kv_size)
    : w_(w),
      cells_(static_cast<uint32_t>(kv_size)),
      kv_(tensor_shape(w.config, o, kv_size)),
      cell_token_(static_cast<size_t>(kv_size), -1),
      behaviour_(behaviour_for(o.llama_behaviour)),
      // seed 004 pads n to 32 cells (256 with flash attention); current
      // llama.cpp to at least 256 (llama_kv_cache::get_n_kv); masked
      // padding changes no value.
      pad_(behaviour_ == LlamaBehaviour::seed_2024 && o.v_trans ? 32u : 256u),
      // Current llama.cpp no longer defragments.
      defrag_thold_(behaviour_ == LlamaBehaviour::seed_2024 ? o.defrag_thold : -1) {}

void Llama2CellsRun::update() {
  const Llama2Config& c = w_.config;
  if (cells_.has_shift()) {
    // The K-shift: each key re-rotated by its cell's delta.
    for (uint32_t i = 0; i < cells_.size(); ++i)
      if (!cells_.cell(i).empty() && cells_.cell(i).delta != 0)
        kv_.shift_k(i, cells_.cell(i).delta, c.n_kv_heads, w_.rope_theta, w_.rope_style);
    (void)cells_.apply_shift();
  }
  if (do_defrag_) {
    const LlamaDefragPlan plan = cells_.plan_defrag();
    for (const LlamaCellMove& m : plan.moves) {
      kv_.move_cell(m.src, m.dst);
      cell_token_[m.dst] = cell_token_[m.src];
      cell_token_[m.src] = -1;
    }
    cells_.apply_defrag(plan);
    do_defrag_ = false;
    // The test counts padding past cell_max as holes: a plan may move nothing.
    if (!plan.moves.empty()) ++defrags_;
  }
}

std::vector<float> Llama2CellsRun::decode(const int32_t* tokens, int64_t n) {
  update();
  const LlamaSlotPlan slot = cells_.find_slot(n, behaviour_ == LlamaBehaviour::seed_2024);
  if (!slot.fits)
    throw std::invalid_argument(fmt::format("no slot for {} tokens in {} cells ({} used)", n,
                                            cells_.size(), cells_.used()));
  std::vector<int64_t> pos(static_cast<size_t>(n));
  std::iota(pos.begin(), pos.end(), n_past_);
  cells_.apply_slot(slot, pos, 1);
  for (int64_t i = 0; i < n; ++i) cell_token_[slot.cells[static_cast<size_t>(i)]] = tokens[i];
  const uint32_t n_kv = cells_.padded_n(pad_);

  const Llama2Config& c = w_.config;
  const int64_t hs = c.head_size(), kv_dim = c.kv_dim();
  const int64_t group = c.n_heads / c.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  std::vector<float> keys(static_cast<size_t>(n_kv * kv_dim)),
      values(static_cast<size_t>(n_kv * kv_dim)), score(n_kv);
  const int64_t pos0 = n_past_;
  const auto attend = [&](int64_t l, const WeightMatrix& q, const WeightMatrix& k,
                          const WeightMatrix& v, WeightMatrix& att) {
    // The batch's K/V go into their cells, then every read comes back from
    // the tensors: the n padded cells, masked by sequence and position.
    for (int64_t i = 0; i < n; ++i) {
      kv_.write_k(l, slot.cells[static_cast<size_t>(i)], k.row(i).data());
      kv_.write_v(l, slot.cells[static_cast<size_t>(i)], v.row(i).data());
    }
    for (uint32_t j = 0; j < n_kv; ++j) {
      kv_.read_k(l, j, keys.data() + j * kv_dim);
      kv_.read_v(l, j, values.data() + j * kv_dim);
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = pos0 + i;
      for (int64_t h = 0; h < c.n_heads; ++h) {
        const float* qh = q.row(i).data() + h * hs;
        const int64_t off = (h / group) * hs;
        float max = -std::numeric_limits<float>::infinity();
        for (uint32_t j = 0; j < n_kv; ++j) {
          const LlamaKvCell& cell = cells_.cell(j);
          if (!cell.has(0) || cell.pos > p) {
            score[j] = -std::numeric_limits<float>::infinity();
            continue;
          }
          float dot = 0;
          for (int64_t d = 0; d < hs; ++d) dot += qh[d] * keys[j * kv_dim + off + d];
          score[j] = dot * scale;
          max = std::max(max, score[j]);
        }
        float sum = 0;
        for (uint32_t j = 0; j < n_kv; ++j) {
          score[j] = std::isinf(score[j]) ? 0.0f : std::exp(score[j] - max);
          sum += score[j];
        }
        float* out = att.row(i).data() + h * hs;
        std::fill(out, out + hs, 0.0f);
        for (uint32_t j = 0; j < n_kv; ++j) {
          if (score[j] == 0.0f) continue;
          const float a = score[j] / sum;
          for (int64_t d = 0; d < hs; ++d) out[d] += a * values[j * kv_dim + off + d];
        }
      }
    }
  };
  std::vector<float> logits =
      llama2_forward_with(w_, tokens, n, n_past_, 0, attend, "llama2_forward_cells");
  n_past_ += n;
  // llama_decode: queue a defragmentation when the holes exceed the threshold.
  if (defrag_thold_ >= 0 && cells_.fragmentation(cells_.padded_n(pad_)) > defrag_thold_)
    do_defrag_ = true;
  return logits;
}

void Llama2CellsRun::context_shift(int64_t n_keep, int64_t n_discard) {
  cells_.seq_rm(0, n_keep, n_keep + n_discard);
  cells_.seq_add(0, n_keep + n_discard, n_past_, -n_discard);
  n_past_ -= n_discard;
  for (uint32_t i = 0; i < cells_.size(); ++i)
    if (cells_.cell(i).empty()) cell_token_[i] = -1;
}

std::vector<int32_t> Llama2CellsRun::kept_tokens() const {
  std::vector<std::pair<int64_t, int32_t>> by_pos;
  for (uint32_t i = 0; i < cells_.size(); ++i)
    if (!cells_.cell(i).empty()) by_pos.emplace_back(cells_.cell(i).pos, cell_token_[i]);
  std::sort(by_pos.begin(), by_pos.end());
  std::vector<int32_t> out;
  for (const auto& [p, t] : by_pos) out.push_back(t);
  return out;
}

std::vector<float> llama2_cells_logits(const Llama2Weights& w, const GenerateOptions& o,
                                       const std::vector<int32_t>& tokens, int64_t kv_size) {
  Llama2CellsRun run(w, o, kv_size);
  std::vector<float> logits;
  const auto n = static_cast<int64_t>(tokens.size());
  for (int64_t pos = 0; pos < n;) {
    const int64_t m = std::min(kUbatch, n - pos);
    logits = run.decode(tokens.data() + pos, m);
    pos += m;
  }
  return logits;
}

GenerateResult generate_greedy_cells(const Llama2Weights& w, const Llama2Tokenizer& tok,
                                     const GenerateOptions& o) {
  const Llama2Config& c = w.config;
  const int64_t kv_size = o.ctx_size > 0 ? o.ctx_size : c.seq_len;
  int64_t steps = std::min<int64_t>(o.steps, c.seq_len);
  const bool shift = behaviour_for(o.llama_behaviour) == LlamaBehaviour::seed_2024;
  const std::vector<int32_t> prompt = encode_prompt(tok, o.prompt, steps);
  if (!shift) {
    // Context shift off, as llama-server: a prompt that fills the cells is
    // refused, and the text stops once they are full.
    if (static_cast<int64_t>(prompt.size()) >= kv_size)
      throw std::invalid_argument(fmt::format(
          "the prompt ({} tokens) exceeds the available context size ({} cells); behaviour "
          "current shifts no context",
          prompt.size(), kv_size));
    steps = std::min(steps, kv_size);
  }
  const int64_t n_keep = std::min<int64_t>(o.n_keep, static_cast<int64_t>(prompt.size())) + 1;
  if (n_keep + kUbatch > kv_size)
    throw std::invalid_argument(
        fmt::format("--ctx-size {} leaves no room past the {} kept tokens for a micro-batch of {}",
                    kv_size, n_keep, kUbatch));
  Llama2CellsRun run(w, o, kv_size);
  ContextShiftDrift drift;
  double sum_diff = 0;
  int64_t diff_values = 0;
  // llama.cpp main: when the next batch does not fit, keep n_keep, drop
  // half of the rest and shift the remainder down.
  const auto make_room = [&](int64_t n) {
    if (run.n_past() + n <= kv_size) return false;
    const int64_t discard = (run.n_past() - n_keep) / 2;
    run.context_shift(n_keep, discard);
    ++drift.shifts;
    drift.discarded_tokens += discard;
    return true;
  };
  const auto compare = [&](const std::vector<float>& logits) {
    const std::vector<float> ref = llama2_cells_logits(w, o, run.kept_tokens(), kv_size);
    for (size_t i = 0; i < ref.size(); ++i) {
      const double d = std::fabs(static_cast<double>(ref[i]) - logits[i]);
      drift.max_abs_diff = std::max(drift.max_abs_diff, d);
      sum_diff += d;
      ++diff_values;
    }
    drift.top1_agree &= std::max_element(ref.begin(), ref.end()) - ref.begin() ==
                        std::max_element(logits.begin(), logits.end()) - logits.begin();
    ++drift.compared;
  };

  const auto n_prompt = static_cast<int64_t>(prompt.size());
  std::vector<float> logits;
  for (int64_t pos = 0; pos < n_prompt;) {
    const int64_t m = std::min(kUbatch, n_prompt - pos);
    const bool shifted = make_room(m);
    logits = run.decode(prompt.data() + pos, m);
    if (shifted) compare(logits);
    pos += m;
  }
  const auto decode = [&](const std::vector<int32_t>& tokens, int64_t) {
    const bool shifted = make_room(1);
    std::vector<float> out = run.decode(&tokens.back(), 1);
    if (shifted) compare(out);
    return out;
  };
  GenerateResult r = greedy_token_loop(tok, o, prompt, steps, std::move(logits), decode);
  drift.defrags = run.defrags();
  if (diff_values > 0) drift.mean_abs_diff = sum_diff / static_cast<double>(diff_values);
  r.drift = drift;
  return r;
}

}  // namespace kvsim::kernels
