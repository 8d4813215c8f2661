#pragma once
// An incremental attention reference: the output of fixed queries over keys
// that arrive a few at a time, kept as FlashAttention's online-softmax state
// (per query head: running max, running sum of exp(score - max), and the
// exp-weighted sum of values), in double. Appending n keys costs O(n) and
// the output at any length is read in O(q_heads * head_dim), so a sequence
// followed for its whole life is checked at every length without a dense
// recompute over its history. States over disjoint sets of keys merge into
// the state over their union (the split-K combination of flash-decoding),
// so a state per block of keys can be kept once and combined for any set of
// blocks. Every key is visible to every query (one query per head placed
// after the context, as in decode). It shares no code with the paged kernels
// it checks (its own double-precision exp, its own loops); tests compare it
// with the dense reference.
#include <cstdint>
#include <vector>

namespace kvsim::kernels {

// The fixed queries, and what folds keys into a state: a state is
// state_size() doubles, per query head [max, sum, acc[head_dim]].
class OnlineSoftmax {
 public:
  // q: [q_heads, head_dim].
  void reset(const float* q, int64_t q_heads, int64_t kv_heads, int64_t head_dim, float scale);
  int64_t state_size() const { return q_heads_ * (head_dim_ + 2); }
  int64_t q_heads() const { return q_heads_; }
  int64_t head_dim() const { return head_dim_; }

  // The state over no keys.
  void clear(double* state) const;
  // Folds n keys and values, each [n, kv_heads, head_dim], into `state`.
  void append(double* state, const float* k, const float* v, int64_t n);
  // Folds the state `from` (over other keys) into `into`.
  void merge(double* into, const double* from) const;
  // The attention output of a state, [q_heads, head_dim] (zeros with no keys).
  void output(const double* state, float* out) const;

 private:
  int64_t q_heads_ = 0, kv_heads_ = 0, head_dim_ = 0;
  std::vector<double> q_;       // scaled queries
  std::vector<double> scores_;  // scratch: [q_heads, n] scores, then weights
};

// exp(x) for x[0, n) in place, in double: Cody-Waite reduction and a degree
// 12 polynomial (relative error below 1e-15; arguments below -700 give
// exp(-700), which no sum of weights of order 1 can tell from 0).
void exp_in_place(double* x, int64_t n);

// One state over keys appended in runs.
class IncrementalAttention {
 public:
  // q: [q_heads, head_dim]. Forgets every key (storage is kept for reuse).
  void reset(const float* q, int64_t q_heads, int64_t kv_heads, int64_t head_dim, float scale);
  // Appends n keys and values, each [n, kv_heads, head_dim].
  void append(const float* k, const float* v, int64_t n);
  // The attention output over the keys so far, [q_heads, head_dim] (zeros with no keys).
  void output(float* out) const;
  int64_t keys() const { return keys_; }

 private:
  OnlineSoftmax softmax_;
  std::vector<double> state_;
  int64_t keys_ = 0;
};

}  // namespace kvsim::kernels
