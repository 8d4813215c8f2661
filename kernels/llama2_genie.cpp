#include "kernels/llama2_genie.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/rope.hpp"
#include "sim/cache/genie_mode_policy.hpp"
#include "sim/numerics/genie_numerics.hpp"

namespace kvsim::kernels {
namespace {

void rmsnorm(const WeightMatrix& x, const Eigen::VectorXf& weight, float eps, WeightMatrix& out) {
  out.resize(x.rows(), x.cols());
  for (int64_t i = 0; i < x.rows(); ++i) {
    const float ss = 1.0f / std::sqrt(x.row(i).squaredNorm() / static_cast<float>(x.cols()) + eps);
    out.row(i) = x.row(i).cwiseProduct(weight.transpose()) * ss;
  }
}

constexpr int64_t kPrefillVariant = 32;  // AR-32 prefill passes, AR-1 decode

struct KvRange {
  float lo = 0, hi = 0;
};

// One greedy run through Genie buffers; `ranges` (per layer), when given,
// collects the K/V range for an int8 calibration.
GenerateResult run_genie(const Llama2Weights& w, const Llama2Tokenizer& tok,
                         const GenerateOptions& o, const std::vector<Int8Params>& int8,
                         std::vector<KvRange>* ranges) {
  const Llama2Config& c = w.config;
  const int64_t steps = std::min<int64_t>(o.steps, c.seq_len);
  const std::vector<int32_t> prompt = tok.encode(o.prompt, true);
  if (static_cast<int64_t>(prompt.size()) > steps)
    throw std::invalid_argument(
        fmt::format("the prompt has {} tokens, more than --steps {}", prompt.size(), steps));
  OnDeviceCacheShape shape;
  shape.layers = c.n_layers;
  shape.kv_heads = c.n_kv_heads;
  shape.head_dim = c.head_size();
  shape.dtype_bytes = kv_dtype_bytes(o.kv_dtype);
  shape.ctx_size = o.ctx_size > 0 ? o.ctx_size : c.seq_len;
  shape.update_mode = o.policy;
  shape.ar_variants = {1};
  if (kPrefillVariant < shape.ctx_size) shape.ar_variants.push_back(kPrefillVariant);
  if (steps > shape.ctx_size)
    throw std::invalid_argument(
        fmt::format("--steps {} exceeds the Genie ctx_size {}", steps, shape.ctx_size));
  const auto policy = make_genie_mode_policy(shape);
  const auto mode = o.policy == "shift_concat"    ? GenieUpdateMode::shift_concat
                    : o.policy == "pointer_shift" ? GenieUpdateMode::pointer_shift
                                                  : GenieUpdateMode::smart_mask;
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
  auto pass = [&](const int32_t* tokens, int64_t n, int64_t pos0, int64_t variant) {
    if (pos0 != policy->n_past() || variant != policy->variant()) dispatch(pos0, variant);
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

  GenerateResult r;
  r.tokens = prompt;
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  dispatch(0, n_prompt > 1 ? kPrefillVariant : 1);  // clear cache
  std::vector<float> logits;
  for (int64_t pos = 0; pos < n_prompt;) {
    const int64_t m = std::min<int64_t>(kPrefillVariant, n_prompt - pos);
    logits = pass(prompt.data() + pos, m, pos, n_prompt > 1 ? kPrefillVariant : 1);
    pos += m;
  }
  for (int64_t i = 1; i < n_prompt; ++i)
    r.text += tok.piece(prompt[static_cast<size_t>(i - 1)], prompt[static_cast<size_t>(i)]);
  for (int64_t pos = n_prompt - 1; pos < steps; ++pos) {
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
    logits = pass(&next, 1, pos + 1, 1);
  }
  return r;
}

}  // namespace

bool is_genie_update_mode(const std::string& policy) {
  return policy == "shift_concat" || policy == "pointer_shift" || policy == "smart_mask";
}

std::vector<float> llama2_forward_genie(const Llama2Weights& w,
                                        const std::vector<GenieKvBuffer>& layers,
                                        const int32_t* tokens, int64_t n, int64_t pos0,
                                        std::vector<std::vector<float>>& new_k,
                                        std::vector<std::vector<float>>& new_v) {
  const Llama2Config& c = w.config;
  const int64_t hs = c.head_size();
  WeightMatrix x(n, c.dim), xb, q, k, v, att(n, c.dim), h1, h3;
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size)
      throw std::out_of_range("llama2_forward_genie: token id outside the vocabulary");
    x.row(i) = w.token_embedding.row(tokens[i]);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  new_k.resize(static_cast<size_t>(c.n_layers));
  new_v.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const auto li = static_cast<size_t>(l);
    rmsnorm(x, w.rms_att[li], w.norm_eps, xb);
    q.noalias() = xb * w.wq[li].transpose();
    k.noalias() = xb * w.wk[li].transpose();
    v.noalias() = xb * w.wv[li].transpose();
    for (int64_t i = 0; i < n; ++i) {
      apply_rope(q.row(i).data(), c.n_heads, hs, pos0 + i, w.rope_theta, w.rope_style);
      apply_rope(k.row(i).data(), c.n_kv_heads, hs, pos0 + i, w.rope_theta, w.rope_style);
    }
    // The pass's K/V (after RoPE) as the graph's output buffer holds them:
    // stored in the cache's dtype, so the pass reads what the update copies.
    new_k[li].assign(k.data(), k.data() + n * c.kv_dim());
    new_v[li].assign(v.data(), v.data() + n * c.kv_dim());
    layers[li].round_trip(new_k[li].data(), n * c.kv_dim());
    layers[li].round_trip(new_v[li].data(), n * c.kv_dim());
    for (int64_t i = 0; i < n; ++i)
      layers[li].attend(q.row(i).data(), c.n_heads, scale, att.row(i).data(), new_k[li].data(),
                        new_v[li].data(), i + 1);
    x.noalias() += att * w.wo[li].transpose();
    rmsnorm(x, w.rms_ffn[li], w.norm_eps, xb);
    h1.noalias() = xb * w.w1[li].transpose();
    h3.noalias() = xb * w.w3[li].transpose();
    h1 = (h1.array() / (1.0f + (-h1.array()).exp())) * h3.array();  // SwiGLU
    x.noalias() += h1 * w.w2[li].transpose();
  }
  WeightMatrix last = x.bottomRows(1);
  rmsnorm(last, w.rms_final, w.norm_eps, xb);
  const WeightMatrix& cls = w.config.shared_classifier ? w.token_embedding : w.classifier;
  Eigen::RowVectorXf logits = xb.row(0) * cls.transpose();
  return std::vector<float>(logits.data(), logits.data() + logits.size());
}

GenerateResult generate_greedy_genie(const Llama2Weights& w, const Llama2Tokenizer& tok,
                                     const GenerateOptions& o) {
  if (!is_genie_update_mode(o.policy))
    throw std::invalid_argument(fmt::format("'{}' is not a Genie update mode", o.policy));
  std::vector<Int8Params> int8;
  if (o.kv_dtype == KvDtype::int8) {
    // QNN quantises each KV tensor with one (scale, offset) fixed offline:
    // calibrate per layer on an fp32 run of the same positions.
    GenerateOptions cal = o;
    cal.kv_dtype = KvDtype::fp32;
    cal.keep_logits = false;
    std::vector<KvRange> ranges(static_cast<size_t>(w.config.n_layers));
    run_genie(w, tok, cal, {}, &ranges);
    for (const KvRange& r : ranges) {
      const float span[2] = {r.lo, r.hi};
      int8.push_back(int8_params_for(span, 2));
    }
  } else if (o.kv_dtype == KvDtype::bf16) {
    throw std::invalid_argument("Genie buffers hold fp32, fp16 or int8 KV (QNN has no bf16 KV)");
  }
  return run_genie(w, tok, o, int8, nullptr);
}

}  // namespace kvsim::kernels
