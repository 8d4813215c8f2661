#pragma once
// An incremental attention reference: the output of fixed queries over keys
// that arrive a few at a time, kept as FlashAttention's online-softmax state
// (per query head: running max, running sum of exp(score - max), and the
// exp-weighted sum of values), in double. Appending n keys costs O(n) and
// the output at any length is read in O(q_heads * head_dim), so a sequence
// followed for its whole life is checked at every length without a dense
// recompute over its history. Every key is visible to every query (one
// query per head placed after the context, as in decode). It shares no code
// with the paged kernels it checks; tests compare it with the dense one.
#include <cstdint>
#include <vector>

namespace kvsim::kernels {

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
  int64_t q_heads_ = 0, kv_heads_ = 0, head_dim_ = 0, keys_ = 0;
  std::vector<double> q_;    // scaled queries
  std::vector<double> max_;  // per query head
  std::vector<double> sum_;
  std::vector<double> acc_;  // [q_heads, head_dim]
};

}  // namespace kvsim::kernels
