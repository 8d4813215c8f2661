#include "sim/cache/kv_cache_groups.hpp"
#include "base/checked_math.hpp"

#include <algorithm>

namespace kvsim {

int64_t KvCacheGroups::pages_held(int64_t tokens, int64_t block_size) const {
  const int64_t blocks = ceil_div(tokens, block_size);
  const int64_t first_in_window = std::max<int64_t>(0, tokens + 1 - window) / block_size;
  return full_groups * blocks + sliding_groups * std::max<int64_t>(0, blocks - first_in_window);
}

int64_t KvCacheGroups::pages_at_most(int64_t tokens, int64_t block_size) const {
  return (full_groups + sliding_groups) * ceil_div(tokens, block_size);
}

KvCacheGroups kv_cache_groups(const ModelSpec& model) {
  int64_t full = 0, sliding = 0, window = 0;
  for (int64_t layer = 0; layer < model.num_hidden_layers; ++layer) {
    const auto i = static_cast<size_t>(layer);
    if (i < model.layer_attention.size() && model.layer_attention[i].sliding) {
      ++sliding;
      window = std::max(window, model.layer_attention[i].window);
    } else {
      ++full;
    }
  }
  KvCacheGroups g;
  if (full == 0 || sliding == 0 || window <= 0) return g;
  g.page_layers = full;
  g.full_groups = 1;
  g.sliding_groups = ceil_div(sliding, full);
  g.window = window;
  return g;
}

}  // namespace kvsim
