#include "cli/generate/llama2_generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "base/cancellation.hpp"
#include "cli/generate/llama2_cells.hpp"
#include "cli/generate/llama2_genie.hpp"
#include "cli/generate/llama2_window.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim::kernels {

std::vector<int32_t> encode_prompt(const Llama2Tokenizer& tok, const std::string& prompt,
                                   int64_t steps) {
  std::vector<int32_t> tokens = tok.encode(prompt, true);
  if (static_cast<int64_t>(tokens.size()) > steps)
    throw std::invalid_argument(
        fmt::format("the prompt has {} tokens, more than --steps {}", tokens.size(), steps));
  return tokens;
}

GenerateResult greedy_token_loop(const Llama2Tokenizer& tok, const GenerateOptions& o,
                                 const std::vector<int32_t>& prompt, int64_t steps,
                                 std::vector<float> logits, const Llama2DecodeStep& decode) {
  GenerateResult r;
  r.tokens = prompt;
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  for (int64_t i = 1; i < n_prompt; ++i)
    r.text += tok.piece(prompt[static_cast<size_t>(i - 1)], prompt[static_cast<size_t>(i)]);
  for (int64_t pos = n_prompt - 1; pos < steps; ++pos) {
    throw_if_cancelled();  // an embedding's stop request (base/cancellation.hpp)
    if (o.keep_logits) r.logits.push_back(logits);
    const int32_t token = r.tokens.back();
    int32_t next =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const auto gen = static_cast<size_t>(pos - (n_prompt - 1));
    if (o.forced) {
      if (gen >= o.forced->size()) break;
      next = (*o.forced)[gen];
    }
    if (next == kLlama2Bos) break;  // llama2.c stops on BOS
    r.text += tok.piece(token, next);
    r.tokens.push_back(next);
    if (pos + 1 >= steps) break;
    logits = decode(r.tokens, pos + 1);
  }
  return r;
}

namespace {

// stories260K through a policy's block pool (its spec makes the pool's
// mechanism, as the serving engine does), on a real KvPool.
GenerateResult generate_greedy_blocks(const Llama2Weights& w, const Llama2Tokenizer& tok,
                                      const GenerateOptions& o) {
  const Llama2Config& c = w.config;
  if (o.block_size <= 0) throw std::invalid_argument("block size must be positive");
  const int64_t steps = std::min<int64_t>(o.steps, c.seq_len);
  const std::vector<int32_t> prompt = encode_prompt(tok, o.prompt, steps);

  KvPool pool((steps + o.block_size - 1) / o.block_size + 1, c.n_layers, o.block_size, c.n_kv_heads,
              c.head_size(), o.kv_dtype);
  config::ParamValues values;
  values.set("block_size", o.block_size, true);
  // One sequence: nothing to share (and no hash to keep).
  if (find_policy(o.policy) != nullptr && find_policy(o.policy)->info.find("prefix_caching"))
    values.set("prefix_caching", false, true);
  const std::shared_ptr<const PolicySpec> spec = make_policy_spec(o.policy, values);
  if (spec->block_pool() == nullptr)
    throw std::invalid_argument(fmt::format("'{}' keeps no block pool", o.policy));
  PoolSizing sizing;
  sizing.block_bytes = pool.geometry().block_bytes();
  sizing.num_blocks = pool.num_blocks();
  sizing.capacity_tokens = sizing.num_blocks * o.block_size;
  auto policy = spec->block_pool()->make(InstanceSpec{}, sizing);

  const auto n_prompt = static_cast<int64_t>(prompt.size());
  const std::vector<int32_t> none;
  const auto view = [&](const std::vector<int32_t>& tokens, int64_t n) {
    return TokenView{tokens.data(), n, none.data(), 0};
  };
  // Admit the prompt (one prefill), then grow by one token per step.
  AdmitPlan admit = policy->plan_admit(PrefixHit{}, n_prompt);
  if (!admit.fits) throw std::invalid_argument("the prompt does not fit the pool");
  const SeqSlot slot = policy->apply_admit(admit);
  std::vector<float> logits =
      llama2_forward(w, pool, policy->block_table(slot), prompt.data(), n_prompt, 0);
  policy->commit(slot, view(prompt, n_prompt), n_prompt);
  const auto decode = [&](const std::vector<int32_t>& tokens, int64_t pos) {
    const GrowPlan grow = policy->plan_grow(slot, 1);
    if (!grow.fits) throw std::logic_error("the pool ran out of blocks");
    policy->apply_grow(slot, grow, 1);
    std::vector<float> out =
        llama2_forward(w, pool, policy->block_table(slot), &tokens.back(), 1, pos);
    policy->commit(slot, view(tokens, pos + 1), pos + 1);
    return out;
  };
  GenerateResult r = greedy_token_loop(tok, o, prompt, steps, std::move(logits), decode);
  policy->release(slot);
  policy->check_drained();
  return r;
}

}  // namespace

namespace {

using Generator = GenerateResult (*)(const Llama2Weights&, const Llama2Tokenizer&,
                                     const GenerateOptions&);

// Which generator runs each policy's layout (a registry, one line a policy):
// a block pool, Genie's buffers (cli/generate/llama2_genie.cpp) or
// llama.cpp's cells with tensors of their own (cli/generate/llama2_cells.cpp),
// or sliding_window over one of the first two (cli/generate/llama2_window.cpp).
const std::vector<std::pair<std::string_view, Generator>>& generators() {
  static const std::vector<std::pair<std::string_view, Generator>> table = {
      {"chunk_lru", generate_greedy_blocks},
      {"llama_cells", generate_greedy_cells},
      {"native_kv", generate_greedy_genie},
      {"paged", generate_greedy_blocks},
      {"pointer_shift", generate_greedy_genie},
      {"shift_concat", generate_greedy_genie},
      {"sliding_window", generate_greedy_sliding_window},
      {"smart_mask", generate_greedy_genie},
  };
  return table;
}

}  // namespace

std::vector<std::string> generate_policy_names() {
  std::vector<std::string> names;
  for (const auto& [name, generator] : generators()) names.emplace_back(name);
  return names;
}

GenerateResult generate_greedy(const Llama2Weights& w, const Llama2Tokenizer& tok,
                               const GenerateOptions& o) {
  // Session files are Genie's dumpCache/loadCache (seed 002).
  if ((!o.save_session.empty() || !o.load_session.empty()) && o.policy != "shift_concat" &&
      o.policy != "pointer_shift" && o.policy != "smart_mask" && o.policy != "native_kv")
    throw std::invalid_argument(
        fmt::format("--save-session and --load-session take a Genie update mode (shift_concat, "
                    "pointer_shift, smart_mask, native_kv), not --policy {}",
                    o.policy));
  if (o.window > 0 && o.policy != "sliding_window")
    throw std::invalid_argument(
        fmt::format("--window takes --policy sliding_window, not --policy {}", o.policy));
  if (o.context_reset) return generate_greedy_context_reset(w, tok, o);
  for (const auto& [name, generator] : generators())
    if (name == o.policy) return generator(w, tok, o);
  throw std::invalid_argument(fmt::format("no generator for cache policy '{}' (there are: {})",
                                          o.policy, fmt::join(generate_policy_names(), ", ")));
}

}  // namespace kvsim::kernels
