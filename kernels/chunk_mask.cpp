#include "kernels/chunk_mask.hpp"

namespace kvsim::kernels {

std::vector<uint8_t> chunk_isolated_mask(std::span<const int32_t> chunk_ids) {
  const auto n = static_cast<int64_t>(chunk_ids.size());
  std::vector<uint8_t> allowed(static_cast<size_t>(n * n), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t qi = chunk_ids[static_cast<size_t>(i)];
    for (int64_t j = 0; j <= i; ++j) {
      const int32_t kj = chunk_ids[static_cast<size_t>(j)];
      // A chunk token sees the system prompt and its own chunk (the seed's
      // mask[q, :sys_end] and mask[q, chunk_start:q], plus itself).
      const bool ok = qi < 0 || kj == kSystemPromptChunk || kj == qi;
      allowed[static_cast<size_t>(i * n + j)] = ok ? 1 : 0;
    }
  }
  return allowed;
}

}  // namespace kvsim::kernels
