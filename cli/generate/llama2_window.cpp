#include "cli/generate/llama2_window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "cli/generate/llama2_genie.hpp"
#include "cli/generate/llama2_recompute.hpp"
#include "kernels/store_kvcache.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim::kernels {
namespace {

// One layer's attention of the pass's rows through a windowed block table:
// each query at position p reads keys [p + 1 - window, p] (vLLM's window
// includes the query) from the pool, llama2.c's softmax in float. A key in
// a block the policy freed is an error: the policy evicted too early.
void window_attention(const Llama2Config& c, const KvPool& pool, const std::vector<BlockId>& table,
                      int64_t layer, int64_t pos0, int64_t window, const WeightMatrix& q,
                      WeightMatrix& att) {
  const int64_t hs = c.head_size(), group = c.n_heads / c.n_kv_heads, bt = pool.block_tokens();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  std::vector<float> keys, values, score;
  for (int64_t i = 0; i < q.rows(); ++i) {
    const int64_t p = pos0 + i, lo = std::max<int64_t>(0, p + 1 - window), nk = p - lo + 1;
    keys.assign(static_cast<size_t>(nk * c.kv_dim()), 0.0f);
    values.assign(keys.size(), 0.0f);
    for (int64_t j = lo; j <= p; ++j) {
      const BlockId b = table.at(static_cast<size_t>(j / bt));
      if (b == kNoBlock)
        throw std::logic_error(
            fmt::format("sliding_window freed the block of position {}, which "
                        "position {} still reads",
                        j, p));
      for (int64_t h = 0; h < c.n_kv_heads; ++h) {
        const size_t at = static_cast<size_t>((j - lo) * c.kv_dim() + h * hs);
        pool.read_row(b, KvPart::key, layer, j % bt, h, keys.data() + at);
        pool.read_row(b, KvPart::value, layer, j % bt, h, values.data() + at);
      }
    }
    score.resize(static_cast<size_t>(nk));
    for (int64_t h = 0; h < c.n_heads; ++h) {
      const float* qh = q.row(i).data() + h * hs;
      const int64_t off = (h / group) * hs;
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < nk; ++j) {
        float dot = 0;
        for (int64_t d = 0; d < hs; ++d) dot += qh[d] * keys[j * c.kv_dim() + off + d];
        score[j] = dot * scale;
        max = std::max(max, score[j]);
      }
      float sum = 0;
      for (float& s : score) {
        s = std::exp(s - max);
        sum += s;
      }
      float* out = att.row(i).data() + h * hs;
      std::fill(out, out + hs, 0.0f);
      for (int64_t j = 0; j < nk; ++j)
        for (int64_t d = 0; d < hs; ++d)
          out[d] += score[j] / sum * values[j * c.kv_dim() + off + d];
    }
  }
}

// sliding_window over paged: the serving engine's PagedWindowPolicy
// (sim/cache/paged_window_policy.cpp) from the registry, on a pool of only
// the blocks a window needs, so the blocks it frees come back holding new
// positions.
GenerateResult generate_greedy_window_paged(const Llama2Weights& w, const Llama2Tokenizer& tok,
                                            const GenerateOptions& o) {
  const Llama2Config& c = w.config;
  const int64_t bs = o.block_size, steps = std::min<int64_t>(o.steps, c.seq_len);
  const std::vector<int32_t> prompt = encode_prompt(tok, o.prompt, steps);
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  config::ParamValues values;
  values.set("update_mode", std::string("paged"), true);
  values.set("window", o.window, true);
  values.set("block_size", bs, true);
  const std::shared_ptr<const PolicySpec> spec = make_policy_spec("sliding_window", values);
  // A long decode holds at most ceil(window / block_size) + 1 blocks
  // (paged_window_policy.hpp); the prompt's prefill holds all of its own.
  const int64_t blocks = std::max((n_prompt + bs - 1) / bs, (o.window + bs - 1) / bs + 1) + 1;
  KvPool pool(blocks, c.n_layers, bs, c.n_kv_heads, c.head_size(), o.kv_dtype);
  PoolSizing sizing;
  sizing.block_bytes = pool.geometry().block_bytes();
  sizing.num_blocks = blocks;
  sizing.capacity_tokens = blocks * bs;
  auto policy = spec->block_pool()->make(InstanceSpec{}, sizing);

  int64_t max_held = 0;
  const std::vector<int32_t> none;
  const auto forward = [&](SeqSlot slot, const int32_t* tokens, int64_t n, int64_t pos0) {
    const std::vector<BlockId>& table = policy->block_table(slot);
    int64_t live = 0;  // positions in the blocks still held
    for (size_t b = 0; b < table.size(); ++b)
      if (table[b] != kNoBlock)
        live += std::min<int64_t>(bs, pos0 + n - static_cast<int64_t>(b) * bs);
    max_held = std::max(max_held, live - n);
    const std::vector<int64_t> slots = slot_mapping_for(table, bs, pos0, n);
    const auto attend = [&](int64_t l, const WeightMatrix& q, const WeightMatrix& k,
                            const WeightMatrix& v, WeightMatrix& att) {
      store_kvcache(pool, l, k.data(), v.data(), slots);
      window_attention(c, pool, table, l, pos0, o.window, q, att);
    };
    return llama2_forward_with(w, tokens, n, pos0, 0, attend, "llama2_forward_window");
  };
  const AdmitPlan admit = policy->plan_admit(PrefixHit{}, n_prompt);
  if (!admit.fits) throw std::logic_error("the prompt does not fit the window's pool");
  const SeqSlot slot = policy->apply_admit(admit);
  std::vector<float> logits = forward(slot, prompt.data(), n_prompt, 0);
  policy->commit(slot, TokenView{prompt.data(), n_prompt, none.data(), 0}, n_prompt);
  const auto decode = [&](const std::vector<int32_t>& tokens, int64_t pos) {
    const GrowPlan grow = policy->plan_grow(slot, 1);
    if (!grow.fits) throw std::logic_error("the window's pool ran out of blocks");
    policy->apply_grow(slot, grow, 1);
    std::vector<float> out = forward(slot, &tokens.back(), 1, pos);
    policy->commit(slot, TokenView{tokens.data(), pos + 1, none.data(), 0}, pos + 1);
    return out;
  };
  GenerateResult r = greedy_token_loop(tok, o, prompt, steps, std::move(logits), decode);
  policy->release(slot);
  policy->check_drained();
  r.window.window = o.window;
  r.window.max_held = max_held;
  return r;
}

bool is_genie_mode(const std::string& name) {
  return name == "shift_concat" || name == "pointer_shift" || name == "smart_mask" ||
         name == "native_kv";
}

// The run with its logits, the full-context run of the same prompt and
// steps (`full_policy`, no window, no reset, the model's whole context),
// and their comparison.
GenerateResult with_references(const Llama2Weights& w, const Llama2Tokenizer& tok,
                               const GenerateOptions& o, const std::string& full_policy,
                               GenerateResult (*run)(const Llama2Weights&, const Llama2Tokenizer&,
                                                     const GenerateOptions&)) {
  GenerateOptions kept = o;
  kept.keep_logits = true;
  GenerateResult r = run(w, tok, kept);
  GenerateOptions f = o;
  f.policy = full_policy;
  f.window = 0;
  f.context_reset = false;
  f.ctx_size = 0;
  f.keep_logits = false;
  const GenerateResult full = generate_greedy(w, tok, f);
  const auto n_prompt = static_cast<int64_t>(
      encode_prompt(tok, o.prompt, std::min<int64_t>(o.steps, w.config.seq_len)).size());
  compare_window_run(w, kept, n_prompt, full, r);
  if (!o.keep_logits) r.logits.clear();
  return r;
}

}  // namespace

std::vector<std::string> sliding_window_bases() {
  const PolicyEntry* entry = find_policy("sliding_window");
  for (const config::ParamSpec& p : entry->info.params)
    if (p.key == entry->base_key) return p.choices;
  throw std::logic_error("sliding_window declares no update_mode");
}

GenerateResult generate_greedy_sliding_window(const Llama2Weights& w, const Llama2Tokenizer& tok,
                                              const GenerateOptions& o) {
  const std::vector<std::string> bases = sliding_window_bases();
  if (std::find(bases.begin(), bases.end(), o.update_mode) == bases.end())
    throw std::invalid_argument(fmt::format("--update-mode '{}': sliding_window wraps one of {}",
                                            o.update_mode, fmt::join(bases, ", ")));
  if (o.window < 1)
    throw std::invalid_argument(
        "--window: sliding_window needs the number of tokens it keeps (1.., at most ctx_size - 32 "
        "over a Genie mode)");
  if (o.context_reset)
    throw std::invalid_argument("--context-reset: a sliding window never fills its context");
  if (o.update_mode == "paged") {
    if (o.ctx_size > 0)
      throw std::invalid_argument(
          "--ctx-size sizes Genie's buffers; sliding_window over paged sizes its pool by --window");
    return with_references(w, tok, o, "paged", generate_greedy_window_paged);
  }
  return with_references(w, tok, o, o.update_mode, generate_greedy_genie);
}

GenerateResult generate_greedy_context_reset(const Llama2Weights& w, const Llama2Tokenizer& tok,
                                             const GenerateOptions& o) {
  if (!is_genie_mode(o.policy))
    throw std::invalid_argument(fmt::format(
        "--context-reset takes a Genie update mode (shift_concat, pointer_shift, smart_mask, "
        "native_kv), not --policy {}",
        o.policy));
  return with_references(w, tok, o, o.policy, generate_greedy_genie);
}

}  // namespace kvsim::kernels
