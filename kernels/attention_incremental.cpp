#include "kernels/attention_incremental.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kvsim::kernels {

void IncrementalAttention::reset(const float* q, int64_t q_heads, int64_t kv_heads,
                                 int64_t head_dim, float scale) {
  if (q_heads <= 0 || kv_heads <= 0 || head_dim <= 0 || q_heads % kv_heads != 0)
    throw std::invalid_argument("attention: q_heads must be a positive multiple of kv_heads");
  q_heads_ = q_heads;
  kv_heads_ = kv_heads;
  head_dim_ = head_dim;
  keys_ = 0;
  q_.resize(static_cast<size_t>(q_heads * head_dim));
  for (size_t i = 0; i < q_.size(); ++i) q_[i] = static_cast<double>(q[i]) * scale;
  max_.assign(static_cast<size_t>(q_heads), -INFINITY);
  sum_.assign(static_cast<size_t>(q_heads), 0.0);
  acc_.assign(static_cast<size_t>(q_heads * head_dim), 0.0);
}

namespace {

struct State {
  const double* q;
  double* max;
  double* sum;
  double* acc;
  int64_t q_heads, kv_heads, head_dim;
};

// One key and value at a time into every query head's online softmax.
__attribute__((always_inline)) inline void append_keys(const State& st, const float* k,
                                                       const float* v, int64_t n) {
  const int64_t d = st.head_dim, group = st.q_heads / st.kv_heads;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < st.q_heads; ++h) {
      const int64_t kh = h / group;
      const float* kr = k + (t * st.kv_heads + kh) * d;
      const float* vr = v + (t * st.kv_heads + kh) * d;
      const double* qh = st.q + h * d;
      double s = 0;
      for (int64_t c = 0; c < d; ++c) s += qh[c] * static_cast<double>(kr[c]);
      double* acc = st.acc + h * d;
      double& mx = st.max[h];
      double& sum = st.sum[h];
      // The new key's weight relative to the running max; a new max rescales
      // what was summed so far instead (one exp either way).
      double w = 1.0;
      if (s > mx) {
        const double corr = std::exp(mx - s);  // 0 for the first key
        sum *= corr;
        for (int64_t c = 0; c < d; ++c) acc[c] *= corr;
        mx = s;
      } else {
        w = std::exp(s - mx);
      }
      sum += w;
      for (int64_t c = 0; c < d; ++c) acc[c] += w * static_cast<double>(vr[c]);
    }
  }
}

void append_generic(const State& st, const float* k, const float* v, int64_t n) {
  append_keys(st, k, v, n);
}

#if defined(__x86_64__)
// The same loops with 4-wide double vectors and FMA where the machine has them.
__attribute__((target("avx2,fma"))) void append_avx2(const State& st, const float* k,
                                                     const float* v, int64_t n) {
  append_keys(st, k, v, n);
}
bool avx2_available() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}
#endif

}  // namespace

void IncrementalAttention::append(const float* k, const float* v, int64_t n) {
  const State st{q_.data(), max_.data(), sum_.data(), acc_.data(), q_heads_, kv_heads_, head_dim_};
#if defined(__x86_64__)
  if (avx2_available()) {
    append_avx2(st, k, v, n);
    keys_ += n;
    return;
  }
#endif
  append_generic(st, k, v, n);
  keys_ += n;
}

void IncrementalAttention::output(float* out) const {
  for (int64_t h = 0; h < q_heads_; ++h) {
    const double sum = sum_[static_cast<size_t>(h)];
    for (int64_t c = 0; c < head_dim_; ++c) {
      const double a = acc_[static_cast<size_t>(h * head_dim_ + c)];
      out[h * head_dim_ + c] = sum > 0 ? static_cast<float>(a / sum) : 0.0f;
    }
  }
}

}  // namespace kvsim::kernels
