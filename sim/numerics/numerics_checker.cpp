#include "sim/numerics/numerics_checker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/attention.hpp"
#include "kernels/kv_fp8.hpp"
#include "kernels/store_kvcache.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim::numerics {

CheckerParams checker_params(const InstanceSpec& s, const PoolSizing& sizing) {
  CheckerParams p;
  p.num_blocks = sizing.num_blocks;
  p.block_size = s.policy().block_pool()->block_size();
  p.dtype = *kernels::parse_kv_dtype(s.kv.dtype);
  // The synthetic K and V lie in [-1, 1): a calibration of the tensor finds
  // amax 1 (vLLM's k_scale / v_scale from calibration data).
  if (s.kv.kv_scale == "per_tensor" && kernels::kv_dtype_has_row_params(p.dtype) &&
      p.dtype != kernels::KvDtype::int8)
    p.fp8_tensor_scale = kernels::fp8_tensor_scale(1.0f, p.dtype == kernels::KvDtype::fp8_e5m2
                                                             ? kernels::Fp8Format::e5m2
                                                             : kernels::Fp8Format::e4m3);
  const NumericsConfig& n = s.numerics;
  p.shape.layers = std::min(n.shadow_layers, s.model.num_hidden_layers);
  p.shape.kv_heads = std::min(n.shadow_heads, s.model.kv_heads_per_rank(s.tp));
  // Keep the model's grouped-query ratio (capped), so GQA indexing is exercised.
  const int64_t group =
      std::clamp<int64_t>(s.model.num_attention_heads / s.model.num_key_value_heads, 1, 4);
  p.shape.q_heads = p.shape.kv_heads * group;
  p.shape.head_dim = n.shadow_head_dim;
  p.shape.rope_theta = static_cast<float>(s.model.rope_theta);
  p.shape.rope_style =
      kernels::parse_rope_style(s.model.rope_style).value_or(kernels::RopeStyle::rotate_half);
  p.every_step = n.mode == "full";
  p.sample_every = n.sample_every;
  p.sample_sequences = n.mode == "sampled";
  p.tolerance = n.tolerance;
  p.layout = s.policy().block_pool()->layout();
  return p;
}

NumericsChecker::NumericsChecker(const CheckerParams& params)
    : NumericsChecker(params, make_checker_kv_view(params.layout)) {}

NumericsChecker::NumericsChecker(const CheckerParams& params, std::unique_ptr<CheckerKvView> view)
    : p_(params),
      pool_(params.num_blocks, params.shape.layers, params.block_size, params.shape.kv_heads,
            params.shape.head_dim, params.dtype, params.fp8_tensor_scale),
      view_(std::move(view)) {}

std::vector<int32_t> NumericsChecker::block_table_of(const Sequence& seq,
                                                     const KvCachePolicy& policy) const {
  const auto& t = policy.block_table(seq.slot);
  return {t.begin(), t.end()};
}

void NumericsChecker::write_new_tokens(const Sequence& seq, const std::vector<int32_t>& table,
                                       int64_t first, int64_t n) {
  const SyntheticShape& sh = p_.shape;
  const int64_t row = sh.kv_heads * sh.head_dim;
  const TokenView tokens = seq.tokens();
  std::vector<float> k(static_cast<size_t>(n * row)), v(k.size());
  for (int64_t l = 0; l < sh.layers; ++l) {
    for (int64_t i = 0; i < n; ++i) {
      synthetic_rows(sh, Tensor::key, tokens.at(first + i), first + i, l, k.data() + i * row);
      synthetic_rows(sh, Tensor::value, tokens.at(first + i), first + i, l, v.data() + i * row);
    }
    view_->store(pool_, l, table, first, n, k.data(), v.data());
  }
}

void NumericsChecker::extend_reference(const Sequence& seq, Shadow& shadow, int64_t k_len) const {
  const SyntheticShape& sh = p_.shape;
  const int64_t d = sh.head_dim, krow = sh.kv_heads * d;
  const TokenView tokens = seq.tokens();
  shadow.ref_k.resize(static_cast<size_t>(sh.layers));
  shadow.ref_v.resize(static_cast<size_t>(sh.layers));
  for (int64_t l = 0; l < sh.layers; ++l) {
    auto& k = shadow.ref_k[static_cast<size_t>(l)];
    auto& v = shadow.ref_v[static_cast<size_t>(l)];
    k.resize(static_cast<size_t>(std::max(k_len, shadow.ref_len) * krow));
    v.resize(k.size());
    for (int64_t pos = shadow.ref_len; pos < k_len; ++pos) {
      float* kr = k.data() + pos * krow;
      float* vr = v.data() + pos * krow;
      synthetic_rows(sh, Tensor::key, tokens.at(pos), pos, l, kr);
      synthetic_rows(sh, Tensor::value, tokens.at(pos), pos, l, vr);
      for (int64_t h = 0; h < sh.kv_heads; ++h) {
        kernels::round_trip_row(p_.dtype, kr + h * d, d, kr + h * d, p_.fp8_tensor_scale);
        kernels::round_trip_row(p_.dtype, vr + h * d, d, vr + h * d, p_.fp8_tensor_scale);
      }
    }
  }
  shadow.ref_len = std::max(shadow.ref_len, k_len);
}

void NumericsChecker::check(const Sequence& seq, Shadow& shadow, const std::vector<int32_t>& table,
                            int64_t new_tokens) {
  const SyntheticShape& sh = p_.shape;
  const int64_t k_len = seq.computed;
  const int64_t nq = std::min(new_tokens, p_.queries_per_check);
  const int64_t d = sh.head_dim;
  const int64_t qrow = sh.q_heads * d;
  const TokenView tokens = seq.tokens();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> q(static_cast<size_t>(nq * qrow)), out(q.size()), ref(q.size());
  extend_reference(seq, shadow, k_len);
  for (int64_t l = 0; l < sh.layers; ++l) {
    for (int64_t i = 0; i < nq; ++i) {
      const int64_t pos = k_len - nq + i;
      synthetic_rows(sh, Tensor::query, tokens.at(pos), pos, l, q.data() + i * qrow);
    }
    view_->attend(pool_, l, table, q.data(), nq, k_len, sh.q_heads, scale, out.data());
    for (const float x : out) {
      uint32_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      output_digest_ = (output_digest_ ^ bits) * 0x100000001b3ULL;
    }
    // The reference: the sequence's own history, stored and loaded in the
    // cache's dtype (so only bookkeeping, not rounding, can differ).
    const auto& k = shadow.ref_k[static_cast<size_t>(l)];
    const auto& v = shadow.ref_v[static_cast<size_t>(l)];
    kernels::dense_attention_reference(q.data(), nq, k.data(), v.data(), k_len, sh.q_heads,
                                       sh.kv_heads, d, scale, ref.data());
    double err = 0.0;
    for (size_t i = 0; i < out.size(); ++i)
      err = std::max(err, static_cast<double>(std::fabs(out[i] - ref[i])));
    if (!(err <= p_.tolerance)) {
      throw CheckFailed(fmt::format(
          "numerics check failed: request {} at step {}: layer {}, {} queries over {} cached "
          "tokens: max abs error {:.3g} against the dense reference exceeds tolerance {:.3g}",
          seq.request.id, step_, l, nq, k_len, err, p_.tolerance));
    }
    max_abs_err_ = std::max(max_abs_err_, err);
  }
  ++checks_;
}

void NumericsChecker::on_step_done(const ScheduledBatch& batch, const KvCachePolicy& policy,
                                   TimeNs) {
  ++step_;
  // KV that left the device before this step: swapped blocks go to the host
  // with their content (nothing has written the pool since their last step).
  for (const Sequence* seq : batch.preempted) {
    auto it = shadows_.find(seq->request.id);
    if (it == shadows_.end()) continue;
    if (seq->state != SeqState::swapped) {
      shadows_.erase(it);  // recompute: the content will be written again
      continue;
    }
    Shadow& s = it->second;
    s.host_bytes.resize(s.table.size());
    s.host_params.resize(s.table.size());
    for (size_t b = 0; b < s.table.size(); ++b)
      pool_.copy_block_out(s.table[b], s.host_bytes[b], s.host_params[b]);
  }
  for (const Sequence* seq : batch.swapped_in) {
    auto it = shadows_.find(seq->request.id);
    if (it == shadows_.end()) continue;
    Shadow& s = it->second;
    const std::vector<int32_t> table = block_table_of(*seq, policy);
    for (size_t b = 0; b < s.host_bytes.size() && b < table.size(); ++b)
      if (swap_copy_arrives(*seq, b))
        pool_.copy_block_in(table[b], s.host_bytes[b], s.host_params[b]);
    s.host_bytes.clear();
    s.host_params.clear();
    s.table = table;
  }
  const bool checking = p_.every_step || (step_ - 1) % static_cast<uint64_t>(p_.sample_every) == 0;
  for (const ScheduledSeq& item : batch.items) {
    const Sequence& seq = *item.seq;
    const int64_t first = seq.computed - item.tokens;
    std::vector<int32_t> table = block_table_of(seq, policy);
    write_new_tokens(seq, table, first, item.tokens);
    Shadow& shadow = shadows_[seq.request.id];
    if (checking && item.tokens > 0) check(seq, shadow, table, item.tokens);
    shadow.table = std::move(table);
  }
}

void NumericsChecker::on_release(const Sequence& seq) {
  shadows_.erase(seq.request.id);
}

void NumericsChecker::report(RunMetrics& m) const {
  m.numerics.checks = static_cast<int64_t>(checks_);
  m.numerics.max_abs_err = max_abs_err_;
}

}  // namespace kvsim::numerics
