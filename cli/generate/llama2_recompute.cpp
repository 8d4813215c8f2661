#include "cli/generate/llama2_recompute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/attention.hpp"

namespace kvsim::kernels {

std::vector<std::vector<float>> llama2_recompute_logits(const Llama2Weights& w,
                                                        const std::vector<int32_t>& tokens,
                                                        const std::vector<int64_t>& first_key,
                                                        KvDtype dtype) {
  const Llama2Config& c = w.config;
  const auto n = static_cast<int64_t>(tokens.size());
  if (static_cast<int64_t>(first_key.size()) != n)
    throw std::logic_error("recompute: one first key per token");
  const int64_t kv_dim = c.kv_dim();
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_size()));
  // Dense K/V of every position, per layer: the reference keeps them all and
  // reads only [first_key[p], p], so nothing it evicts can be read back.
  std::vector<std::vector<float>> keys(static_cast<size_t>(c.n_layers)),
      values(static_cast<size_t>(c.n_layers));
  for (auto& k : keys) k.reserve(static_cast<size_t>(n * kv_dim));
  for (auto& v : values) v.reserve(static_cast<size_t>(n * kv_dim));
  std::vector<std::vector<float>> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) {
    const int64_t lo = first_key[static_cast<size_t>(p)];
    if (lo < 0 || lo > p) throw std::logic_error("recompute: a first key outside [0, p]");
    const auto attend = [&](int64_t l, const WeightMatrix& q, const WeightMatrix& k,
                            const WeightMatrix& v, WeightMatrix& att) {
      auto& kl = keys[static_cast<size_t>(l)];
      auto& vl = values[static_cast<size_t>(l)];
      const size_t at = kl.size();
      kl.insert(kl.end(), k.data(), k.data() + kv_dim);
      vl.insert(vl.end(), v.data(), v.data() + kv_dim);
      if (dtype == KvDtype::fp16 || dtype == KvDtype::bf16) {
        round_trip_row(dtype, kl.data() + at, kv_dim, kl.data() + at);
        round_trip_row(dtype, vl.data() + at, kv_dim, vl.data() + at);
      }
      // One query over the kept keys, all visible (nq 1: causal is all).
      dense_attention_reference(q.data(), 1, kl.data() + lo * kv_dim, vl.data() + lo * kv_dim,
                                p - lo + 1, c.n_heads, c.n_kv_heads, c.head_size(), scale,
                                att.data());
    };
    out.push_back(llama2_forward_with(w, &tokens[static_cast<size_t>(p)], 1, p, 0, attend,
                                      "llama2_recompute_logits"));
  }
  return out;
}

std::vector<float> llama2_prefill_logits(const Llama2Weights& w, const int32_t* tokens, int64_t n,
                                         int64_t pos0, KvDtype dtype) {
  const Llama2Config& c = w.config;
  const int64_t kv_dim = c.kv_dim();
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_size()));
  std::vector<float> k_rows, v_rows;
  const auto attend = [&](int64_t, const WeightMatrix& q, const WeightMatrix& k,
                          const WeightMatrix& v, WeightMatrix& att) {
    k_rows.assign(k.data(), k.data() + n * kv_dim);
    v_rows.assign(v.data(), v.data() + n * kv_dim);
    if (dtype == KvDtype::fp16 || dtype == KvDtype::bf16) {
      round_trip_row(dtype, k_rows.data(), n * kv_dim, k_rows.data());
      round_trip_row(dtype, v_rows.data(), n * kv_dim, v_rows.data());
    }
    // Row i attends to rows 0..i (nq 1 over i + 1 keys: all of them).
    for (int64_t i = 0; i < n; ++i)
      dense_attention_reference(q.row(i).data(), 1, k_rows.data(), v_rows.data(), i + 1, c.n_heads,
                                c.n_kv_heads, c.head_size(), scale, att.row(i).data());
  };
  return llama2_forward_with(w, tokens, n, pos0, 0, attend, "llama2_prefill_logits");
}

std::vector<int64_t> sliding_window_first_keys(int64_t n_tokens, int64_t n_prompt, int64_t window,
                                               bool genie, int64_t prefill_pass) {
  std::vector<int64_t> first(static_cast<size_t>(n_tokens));
  for (int64_t p = 0; p < n_tokens; ++p) {
    if (!genie) {
      // vLLM's sliding window: the query and the window - 1 keys before it.
      first[static_cast<size_t>(p)] = std::max<int64_t>(0, p + 1 - window);
      continue;
    }
    // Genie: the cache holds the `window` newest tokens when a pass starts
    // (the update before it evicted the rest); the pass adds its own.
    const int64_t pass_start = p < n_prompt ? p / prefill_pass * prefill_pass : p;
    first[static_cast<size_t>(p)] = std::max<int64_t>(0, pass_start - window);
  }
  return first;
}

namespace {

// The reference logits at each position of a context-reset run: position p
// of epoch e (tokens fed since reset e) is recomputed as the new sequence
// BOS + kept tokens + those tokens, at positions 0...
std::vector<std::vector<float>> reset_reference(const Llama2Weights& w,
                                                const std::vector<int32_t>& tokens,
                                                const WindowDrift& d, KvDtype dtype) {
  const auto n = static_cast<int64_t>(tokens.size());
  std::vector<int64_t> starts = {0};
  starts.insert(starts.end(), d.resets_at.begin(), d.resets_at.end());
  std::vector<std::vector<float>> out;
  for (size_t e = 0; e < starts.size(); ++e) {
    const int64_t from = starts[e];
    const int64_t to = e + 1 < starts.size() ? starts[e + 1] : n;
    std::vector<int32_t> seq;
    if (e > 0) seq.assign(tokens.begin(), tokens.begin() + d.kept);
    seq.insert(seq.end(), tokens.begin() + from, tokens.begin() + to);
    const std::vector<int64_t> first(seq.size(), 0);
    std::vector<std::vector<float>> logits = llama2_recompute_logits(w, seq, first, dtype);
    const size_t skip = e > 0 ? static_cast<size_t>(d.kept) : 0;
    out.insert(out.end(), std::make_move_iterator(logits.begin() + static_cast<int64_t>(skip)),
               std::make_move_iterator(logits.end()));
  }
  return out;
}

size_t top1_index(const std::vector<float>& v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

void compare_window_run(const Llama2Weights& w, const GenerateOptions& o, int64_t n_prompt,
                        const GenerateResult& full, GenerateResult& r) {
  WindowDrift& d = r.window;
  const auto n = static_cast<int64_t>(r.tokens.size());
  std::vector<std::vector<float>> ref;
  if (o.window > 0) {
    const std::vector<int64_t> first = sliding_window_first_keys(
        n, n_prompt, o.window, o.update_mode != "paged", kGeniePrefillVariant);
    for (int64_t p = 0; p < n && d.first_past < 0; ++p)
      if (first[static_cast<size_t>(p)] > 0) d.first_past = p;
    ref = llama2_recompute_logits(w, r.tokens, first, o.kv_dtype);
    // Re-encoding the kept tokens alone, at each position past the window.
    double sum = 0;
    int64_t values = 0;
    for (size_t i = 0; i < r.logits.size(); ++i) {
      const auto p = static_cast<int64_t>(n_prompt - 1 + static_cast<int64_t>(i));
      const int64_t lo = first[static_cast<size_t>(p)];
      if (lo == 0) continue;
      const std::vector<float> fresh =
          llama2_prefill_logits(w, r.tokens.data() + lo, p - lo + 1, lo, o.kv_dtype);
      for (size_t j = 0; j < fresh.size(); ++j) {
        const double diff = std::fabs(static_cast<double>(fresh[j]) - r.logits[i][j]);
        d.fresh_max_abs_diff = std::max(d.fresh_max_abs_diff, diff);
        sum += diff;
        ++values;
      }
      d.fresh_top1_agreements += top1_index(fresh) == top1_index(r.logits[i]) ? 1 : 0;
      ++d.fresh_compared;
    }
    if (values > 0) d.fresh_mean_abs_diff = sum / static_cast<double>(values);
  } else {
    if (!d.resets_at.empty()) d.first_past = d.resets_at.front();
    ref = reset_reference(w, r.tokens, d, o.kv_dtype);
  }
  // r.logits[i] are those of position n_prompt - 1 + i.
  double sum = 0;
  int64_t values = 0;
  for (size_t i = 0; i < r.logits.size(); ++i) {
    const std::vector<float>& got = r.logits[i];
    const std::vector<float>& want = ref.at(static_cast<size_t>(n_prompt - 1) + i);
    for (size_t j = 0; j < got.size(); ++j) {
      const double diff = std::fabs(static_cast<double>(got[j]) - want[j]);
      d.max_abs_diff = std::max(d.max_abs_diff, diff);
      sum += diff;
      ++values;
    }
    d.top1_agree &= top1_index(got) == top1_index(want);
    ++d.compared;
  }
  if (values > 0) d.mean_abs_diff = sum / static_cast<double>(values);
  // The full context: the first position whose token differs, or where one
  // run stopped (BOS) and the other did not.
  const auto m = static_cast<int64_t>(full.tokens.size());
  d.full_compared = std::max<int64_t>(0, std::min(n, m) - n_prompt);
  for (int64_t p = n_prompt; p < std::max(n, m) && d.first_divergence < 0; ++p)
    if (p >= n || p >= m || r.tokens[static_cast<size_t>(p)] != full.tokens[static_cast<size_t>(p)])
      d.first_divergence = p;
  d.ran = true;
}

}  // namespace kvsim::kernels
