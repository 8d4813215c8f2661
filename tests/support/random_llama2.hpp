#pragma once
// A small llama2 model with random weights (a fixed seed), for kernel tests
// that need a real transformer without the shared stories260K checkpoint:
// its KV depends on context as a trained model's does.
#include <random>

#include "kernels/llama2_model.hpp"

namespace kvsim::testing {

inline kernels::Llama2Weights random_llama2(uint32_t seed = 7, int32_t layers = 3) {
  kernels::Llama2Weights w;
  kernels::Llama2Config& c = w.config;
  c.dim = 32;
  c.hidden_dim = 64;
  c.n_layers = layers;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 64;
  c.seq_len = 256;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  const auto matrix = [&](int64_t rows, int64_t cols) {
    kernels::WeightMatrix m(rows, cols);
    for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
  };
  const auto ones = [&](int64_t n) {
    Eigen::VectorXf v(n);
    for (int64_t i = 0; i < n; ++i) v(i) = 1.0f + 0.1f * normal(rng);
    return v;
  };
  const int64_t kv = c.kv_dim();
  w.token_embedding = matrix(c.vocab_size, c.dim);
  for (int32_t l = 0; l < layers; ++l) {
    w.rms_att.push_back(ones(c.dim));
    w.rms_ffn.push_back(ones(c.dim));
    w.wq.push_back(matrix(c.dim, c.dim));
    w.wk.push_back(matrix(kv, c.dim));
    w.wv.push_back(matrix(kv, c.dim));
    w.wo.push_back(matrix(c.dim, c.dim));
    w.w1.push_back(matrix(c.hidden_dim, c.dim));
    w.w2.push_back(matrix(c.dim, c.hidden_dim));
    w.w3.push_back(matrix(c.hidden_dim, c.dim));
  }
  w.rms_final = ones(c.dim);
  return w;
}

}  // namespace kvsim::testing
