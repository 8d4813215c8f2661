#include "sim/genie/genie_passes.hpp"

#include <stdexcept>

namespace kvsim {

int64_t smallest_variant_at_least(int64_t n, const std::vector<int64_t>& variants) {
  if (variants.empty()) throw std::invalid_argument("no AR-n variants");
  for (const int64_t v : variants)
    if (v >= n) return v;
  return variants.back();
}

std::vector<PassShape> prefill_passes(int64_t tokens, const std::vector<int64_t>& variants) {
  if (variants.empty()) throw std::invalid_argument("no AR-n variants");
  if (tokens < 1) throw std::invalid_argument("a prefill needs at least 1 token");
  const int64_t largest = variants.back();
  std::vector<PassShape> passes;
  passes.reserve(static_cast<size_t>((tokens + largest - 1) / largest));
  int64_t left = tokens;
  while (left >= largest) {
    passes.push_back({largest, largest});
    left -= largest;
  }
  if (left > 0) passes.push_back({smallest_variant_at_least(left, variants), left});
  return passes;
}

bool turn_fits(int64_t n_past, int64_t input_tokens, int64_t reply_tokens,
               const std::vector<int64_t>& variants,
               const std::function<int64_t(int64_t)>& capacity, int64_t ctx_size) {
  const std::vector<PassShape> passes = prefill_passes(input_tokens, variants);
  int64_t n = n_past;
  for (size_t i = 0; i < passes.size(); ++i) {
    if (n > capacity(passes[i].variant)) return false;
    if (ctx_size > 0 && passes[i].variant == ctx_size && n > 0) return false;
    n += passes[i].useful_tokens;
    const int64_t next = i + 1 < passes.size() ? passes[i + 1].variant
                         : reply_tokens > 1    ? 1
                                               : passes[i].variant;
    if (n > capacity(next)) return false;
  }
  // reply_tokens - 1 AR-1 decodes, each adding one token; the last leaves
  // n + reply_tokens - 1 in the cache.
  return reply_tokens <= 1 || n + reply_tokens - 1 <= capacity(1);
}

}  // namespace kvsim
