// The dense reference: written for obviousness, not speed, and sharing no
// code with the paged kernels it checks.
#include <cmath>
#include <vector>

#include "kernels/attention.hpp"

namespace kvsim::kernels {

void dense_attention_reference(const float* q, int64_t nq, const float* k, const float* v,
                               int64_t nk, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                               float scale, float* out, const uint8_t* allowed) {
  const int64_t group = q_heads / kv_heads;
  std::vector<double> w(static_cast<size_t>(nk));
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t h = 0; h < q_heads; ++h) {
      const int64_t kh = h / group;
      const float* qi = q + (i * q_heads + h) * head_dim;
      double mx = -INFINITY;
      for (int64_t j = 0; j < nk; ++j) {
        const bool ok = allowed ? allowed[i * nk + j] != 0 : j <= nk - nq + i;
        if (!ok) {
          w[static_cast<size_t>(j)] = -INFINITY;
          continue;
        }
        double s = 0;
        const float* kj = k + (j * kv_heads + kh) * head_dim;
        for (int64_t c = 0; c < head_dim; ++c) s += static_cast<double>(qi[c]) * kj[c];
        w[static_cast<size_t>(j)] = s * scale;
        mx = std::max(mx, s * scale);
      }
      double sum = 0;
      for (int64_t j = 0; j < nk; ++j) {
        const double e =
            std::isinf(w[static_cast<size_t>(j)]) ? 0.0 : std::exp(w[static_cast<size_t>(j)] - mx);
        w[static_cast<size_t>(j)] = e;
        sum += e;
      }
      float* o = out + (i * q_heads + h) * head_dim;
      for (int64_t c = 0; c < head_dim; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < nk; ++j) {
          if (w[static_cast<size_t>(j)] != 0.0)
            acc += w[static_cast<size_t>(j)] * v[(j * kv_heads + kh) * head_dim + c];
        }
        o[c] = sum > 0 ? static_cast<float>(acc / sum) : 0.0f;
      }
    }
  }
}

}  // namespace kvsim::kernels
