#include "cli/generate/llama2_genie.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "cli/generate/genie_session_file.hpp"
#include "sim/cache/genie_mode_policy.hpp"
#include "sim/numerics/genie_numerics.hpp"
#include "sim/policies/genie_buffer_spec.hpp"
#include "sim/policies/policy_registry.hpp"

namespace kvsim::kernels {
namespace {

// The Genie update mode `policy` names, from its spec (sim/policies/).
std::shared_ptr<const GenieModeSpec> mode_spec(const std::string& policy) {
  const std::shared_ptr<const PolicySpec> spec = make_policy_spec(policy);
  const auto* mode = dynamic_cast<const GenieModeSpec*>(spec.get());
  if (mode == nullptr)
    throw std::invalid_argument(fmt::format("'{}' is not a Genie update mode", policy));
  return std::shared_ptr<const GenieModeSpec>(spec, mode);
}

}  // namespace

namespace {

constexpr int64_t kPrefillVariant = kGeniePrefillVariant;

struct KvRange {
  float lo = 0, hi = 0;
};

// One greedy run through Genie buffers; `ranges` (per layer), when given,
// collects the K/V range for an int8 calibration.
// A loaded session against the run it is to continue: the same KV shape,
// room for its positions, and a token left to feed.
void check_session(const GenieSession& s, const GenieCacheShape& shape, const GenerateOptions& o,
                   int64_t steps) {
  const GenieSessionHeader& h = s.header;
  const auto differs = [&](const char* what, auto saved, auto here) {
    throw std::invalid_argument(fmt::format("{}: the session's {} is {}, this run's {}",
                                            o.load_session, what, saved, here));
  };
  if (h.layers != shape.layers) differs("layers", h.layers, shape.layers);
  if (h.kv_heads != shape.kv_heads) differs("kv_heads", h.kv_heads, shape.kv_heads);
  if (h.head_dim != shape.head_dim) differs("head_dim", h.head_dim, shape.head_dim);
  if (h.dtype != o.kv_dtype)
    differs("KV dtype (--kv-dtype)", kv_dtype_name(h.dtype), kv_dtype_name(o.kv_dtype));
  if (h.dtype == KvDtype::int8 && static_cast<int64_t>(h.int8.size()) != h.layers)
    throw std::invalid_argument(
        fmt::format("{}: an int8 session needs one (scale, offset) per layer", o.load_session));
  if (static_cast<int64_t>(h.tokens.size()) != h.n_valid + 1)
    throw std::invalid_argument(fmt::format(
        "{}: the session holds {} positions and {} tokens; it continues only with one token "
        "more than positions (a session saved after BOS has nothing to continue)",
        o.load_session, h.n_valid, h.tokens.size()));
  if (h.n_valid + 1 > steps)
    throw std::invalid_argument(
        fmt::format("{}: the session already holds {} positions; --steps {} leaves none to run",
                    o.load_session, h.n_valid, steps));
}

GenerateResult run_genie(const Llama2Weights& w, const Llama2Tokenizer& tok,
                         const GenerateOptions& o, const std::vector<Int8Params>& int8,
                         std::vector<KvRange>* ranges, const GenieSession* loaded) {
  const Llama2Config& c = w.config;
  const int64_t steps = std::min<int64_t>(o.steps, c.seq_len);
  const std::vector<int32_t> prompt =
      loaded != nullptr ? loaded->header.tokens : encode_prompt(tok, o.prompt, steps);
  GenieCacheShape shape;
  shape.layers = c.n_layers;
  shape.kv_heads = c.n_kv_heads;
  shape.head_dim = c.head_size();
  shape.dtype_bytes = kv_dtype_bytes(o.kv_dtype);
  shape.ctx_size = o.ctx_size > 0 ? o.ctx_size : c.seq_len;
  shape.ar_variants = {1};
  if (kPrefillVariant < shape.ctx_size) shape.ar_variants.push_back(kPrefillVariant);
  // A window or a context reset makes room; otherwise the run must fit.
  if (steps > shape.ctx_size && o.window == 0 && !o.context_reset)
    throw std::invalid_argument(fmt::format(
        "--steps {} exceeds the Genie ctx_size {} (a longer run needs --policy sliding_window "
        "or --context-reset)",
        steps, shape.ctx_size));
  if (loaded != nullptr) check_session(*loaded, shape, o, steps);
  // The mode's own policy plans the updates; its spec says which buffers.
  // Under sliding_window that mode is wrapped (sim/cache/
  // sliding_window_policy.cpp), whose plans evict the oldest tokens.
  const std::shared_ptr<const GenieModeSpec> spec =
      mode_spec(o.window > 0 ? o.update_mode : o.policy);
  shape.window = o.window;
  const int64_t largest = shape.ar_variants.back();
  if (o.window > 0 && o.window > shape.ctx_size - largest)
    throw std::invalid_argument(fmt::format(
        "--window {} does not fit the cache: ctx_size {} - largest variant AR-{} = {} (allowed: "
        "1..{})",
        o.window, shape.ctx_size, largest, shape.ctx_size - largest, shape.ctx_size - largest));
  const std::unique_ptr<GenieKvPolicy> policy =
      o.window > 0 ? make_sliding_window_policy(spec->make_mode(shape), o.window)
                   : std::unique_ptr<GenieKvPolicy>(spec->make_mode(shape));
  const GenieUpdateMode mode = *spec->numerics_mode();
  std::vector<GenieKvBuffer> layers;
  for (int64_t l = 0; l < c.n_layers; ++l)
    layers.emplace_back(shape.ctx_size, c.n_kv_heads, c.head_size(), o.kv_dtype, mode, 1,
                        int8.empty() ? Int8Params{} : int8[static_cast<size_t>(l)]);

  // The update of a pass is dispatched before the next pass, for the
  // variant that pass runs (dispatchUpdate's "update and set").
  std::vector<std::vector<float>> pending_k(static_cast<size_t>(c.n_layers)),
      pending_v(static_cast<size_t>(c.n_layers));
  auto dispatch = [&](int64_t n_past, int64_t variant) {
    const KvUpdatePlan plan = policy->plan_update({n_past, variant});
    policy->apply_update(plan);
    for (size_t l = 0; l < layers.size(); ++l)
      numerics::replay_update(plan, layers[l], pending_k[l].data(), pending_v[l].data());
  };
  int64_t computed = 0;  // positions whose K/V a pass produced
  int64_t max_held = 0;  // most tokens the buffers held before a pass
  auto pass = [&](const int32_t* tokens, int64_t n, int64_t pos0, int64_t variant) {
    if (pos0 != policy->n_past() || variant != policy->variant()) dispatch(pos0, variant);
    max_held = std::max(max_held, layers.front().n_valid());
    computed = pos0 + n;
    std::vector<float> logits =
        llama2_forward_genie(w, layers, tokens, n, pos0, pending_k, pending_v);
    if (ranges) {
      for (size_t l = 0; l < layers.size(); ++l)
        for (const auto* vec : {&pending_k[l], &pending_v[l]})
          for (float x : *vec) {
            (*ranges)[l].lo = std::min((*ranges)[l].lo, x);
            (*ranges)[l].hi = std::max((*ranges)[l].hi, x);
          }
    }
    return logits;
  };

  const auto n_prompt = static_cast<int64_t>(prompt.size());
  // Clear the cache, then AR-32 passes over `seq` from position 0.
  const auto prefill = [&](const std::vector<int32_t>& seq) {
    const auto n = static_cast<int64_t>(seq.size());
    const int64_t variant = n > 1 ? kPrefillVariant : 1;
    dispatch(0, variant);  // clear cache
    std::vector<float> out;
    for (int64_t pos = 0; pos < n;) {
      const int64_t m = std::min<int64_t>(kPrefillVariant, n - pos);
      out = pass(seq.data() + pos, m, pos, variant);
      pos += m;
    }
    return out;
  };
  // A context reset keeps BOS and the first n_keep prompt tokens: they and
  // the newest token are prefilled again from position 0 (a fresh context,
  // as the genie engine starts one when a dialog finds its context full).
  const int64_t kept = 1 + std::min<int64_t>(o.n_keep, n_prompt - 1);
  if (o.context_reset && kept + 1 > policy->capacity_tokens(kPrefillVariant))
    throw std::invalid_argument(fmt::format(
        "--n-keep {}: a context reset prefills {} tokens again (BOS, {} kept, the newest), more "
        "than ctx_size {} - AR-{} = {} hold",
        o.n_keep, kept + 1, kept - 1, shape.ctx_size, kPrefillVariant,
        policy->capacity_tokens(kPrefillVariant)));
  if (o.context_reset && n_prompt > policy->capacity_tokens(kPrefillVariant))
    throw std::invalid_argument(fmt::format(
        "--ctx-size {}: the prompt's {} tokens do not fit its AR-{} passes ({} "
        "positions); a context reset starts from the prompt",
        shape.ctx_size, n_prompt, kPrefillVariant, policy->capacity_tokens(kPrefillVariant)));
  int64_t shift = 0;  // token index - cache position, after a reset
  std::vector<int64_t> resets_at;
  const auto decode = [&](const std::vector<int32_t>& tokens, int64_t pos) {
    const int64_t at = pos - shift;
    if (o.context_reset && at > policy->capacity_tokens(1)) {
      std::vector<int32_t> seq(tokens.begin(), tokens.begin() + kept);
      seq.push_back(tokens.back());
      resets_at.push_back(pos);
      shift = pos - kept;
      return prefill(seq);
    }
    return pass(&tokens.back(), 1, at, 1);
  };
  std::vector<float> logits;
  GenerateResult r;
  if (loaded != nullptr) {
    // loadCache: the policy is told the cache holds the session's positions
    // (clear, then one forward update for them); each buffer is cleared and
    // read back from the file, with no pass and no output buffer involved.
    const int64_t n = loaded->header.n_valid;
    if (n > policy->capacity_tokens(1))
      throw std::invalid_argument(
          fmt::format("{}: {} saved positions do not fit ctx_size {} (AR-1 holds {})",
                      o.load_session, n, shape.ctx_size, policy->capacity_tokens(1)));
    dispatch(0, 1);
    if (n > 0) policy->apply_update(policy->plan_update({n, 1}));
    const int64_t each = c.n_kv_heads * c.head_size() * n * kv_dtype_bytes(o.kv_dtype);
    for (size_t l = 0; l < layers.size(); ++l)
      layers[l].load_valid(loaded->keys.data() + static_cast<int64_t>(l) * each,
                           loaded->values.data() + static_cast<int64_t>(l) * each, n);
    r.session_loaded_positions = n;
    r.session_loaded_kv_bytes = genie_session_kv_bytes(layers);
    logits = decode(prompt, n);  // the session's last token, not yet run
  } else {
    logits = prefill(prompt);
  }
  GenerateResult g = greedy_token_loop(tok, o, prompt, steps, std::move(logits), decode);
  g.window.window = o.window;
  g.window.kept = o.context_reset ? kept : 0;
  g.window.max_held = max_held;
  g.window.resets_at = std::move(resets_at);
  g.session_loaded_positions = r.session_loaded_positions;
  g.session_loaded_kv_bytes = r.session_loaded_kv_bytes;
  if (!o.save_session.empty()) {
    // dumpCache after the last pass's update (seed 002: the update follows
    // the pass), for the AR-1 graph the next decode would run.
    if (computed != policy->n_past() || policy->variant() != 1) dispatch(computed, 1);
    GenieSessionHeader h;
    h.mode = o.policy;
    h.layers = c.n_layers;
    h.kv_heads = c.n_kv_heads;
    h.head_dim = c.head_size();
    h.dtype = o.kv_dtype;
    h.ctx_size = shape.ctx_size;
    h.variant = policy->variant();
    h.n_valid = layers.front().n_valid();
    h.tokens = g.tokens;
    if (o.kv_dtype == KvDtype::int8) h.int8 = int8;
    g.session_file_bytes = write_genie_session(o.save_session, "--save-session", h, layers);
    g.session_saved_positions = h.n_valid;
    g.session_saved_kv_bytes = genie_session_kv_bytes(layers);
  }
  return g;
}

}  // namespace

std::vector<float> llama2_forward_genie(const Llama2Weights& w,
                                        const std::vector<GenieKvBuffer>& layers,
                                        const int32_t* tokens, int64_t n, int64_t pos0,
                                        std::vector<std::vector<float>>& new_k,
                                        std::vector<std::vector<float>>& new_v) {
  const Llama2Config& c = w.config;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_size()));
  new_k.resize(static_cast<size_t>(c.n_layers));
  new_v.resize(static_cast<size_t>(c.n_layers));
  const auto genie_attention = [&](int64_t l, const WeightMatrix& q, const WeightMatrix& k,
                                   const WeightMatrix& v, WeightMatrix& att) {
    const auto li = static_cast<size_t>(l);
    // The pass's K/V (after RoPE) as the graph's output buffer holds them:
    // stored in the cache's dtype, so the pass reads what the update copies.
    new_k[li].assign(k.data(), k.data() + n * c.kv_dim());
    new_v[li].assign(v.data(), v.data() + n * c.kv_dim());
    layers[li].round_trip(new_k[li].data(), n * c.kv_dim());
    layers[li].round_trip(new_v[li].data(), n * c.kv_dim());
    for (int64_t i = 0; i < n; ++i)
      layers[li].attend(q.row(i).data(), c.n_heads, scale, att.row(i).data(), new_k[li].data(),
                        new_v[li].data(), i + 1);
  };
  return llama2_forward_with(w, tokens, n, pos0, 0, genie_attention, "llama2_forward_genie");
}

GenerateResult generate_greedy_genie(const Llama2Weights& w, const Llama2Tokenizer& tok,
                                     const GenerateOptions& o) {
  (void)mode_spec(o.window > 0 ? o.update_mode : o.policy);  // a Genie mode, or invalid_argument
  if ((o.window > 0 || o.context_reset) && (!o.load_session.empty() || !o.save_session.empty()))
    throw std::invalid_argument(
        "--save-session and --load-session take a run that fits its context (no --window, no "
        "--context-reset)");
  std::vector<Int8Params> int8;
  std::optional<GenieSession> loaded;
  if (!o.load_session.empty()) {
    if (!o.prompt.empty())
      throw std::invalid_argument(
          "--prompt with --load-session: the session's tokens are the prompt");
    loaded = read_genie_session(o.load_session);
  }
  if (o.kv_dtype == KvDtype::bf16) {
    throw std::invalid_argument("Genie buffers hold fp32, fp16 or int8 KV (QNN has no bf16 KV)");
  } else if (loaded && o.kv_dtype == KvDtype::int8) {
    // The graph's quantParam is fixed offline: the session carries the one
    // it was saved with.
    int8 = loaded->header.int8;
  } else if (o.kv_dtype == KvDtype::int8) {
    // QNN quantises each KV tensor with one (scale, offset) fixed offline:
    // calibrate per layer on an fp32 run of the same positions.
    GenerateOptions cal = o;
    cal.kv_dtype = KvDtype::fp32;
    cal.keep_logits = false;
    std::vector<KvRange> ranges(static_cast<size_t>(w.config.n_layers));
    cal.save_session.clear();
    run_genie(w, tok, cal, {}, &ranges, nullptr);
    for (const KvRange& r : ranges) {
      const float span[2] = {r.lo, r.hi};
      int8.push_back(int8_params_for(span, 2));
    }
  }
  return run_genie(w, tok, o, int8, nullptr, loaded ? &*loaded : nullptr);
}

}  // namespace kvsim::kernels
