// exact: every instance's cache asked at the instant of routing, device and
// tiers alike (KvCachePolicy::lookup_prefix, const). What an oracle router
// would know; the prefix_aware router has always routed by it.
#include "sim/cache/tiers/tier_chain.hpp"
#include "sim/cluster/prefix_index.hpp"
#include "sim/cluster/routing_policy.hpp"

namespace kvsim {
namespace {

class ExactPrefixIndex final : public PrefixIndex {
 public:
  std::string_view kind() const override { return "exact"; }

  void overlaps(const Request& request, std::span<const InstanceView> instances,
                std::vector<PrefixOverlap>& out, const std::vector<uint8_t>* wanted) override {
    out.assign(instances.size(), PrefixOverlap{});
    // Built as the engine builds it (a described prompt hashes from its
    // runs), so the lookups find the blocks the engine registered; hashed
    // once, reused for every instance.
    const TokenView tokens = TokenView::of(request.prompt, request.output, 0);
    memo_.clear();
    for (size_t i = 0; i < instances.size(); ++i) {
      const KvCachePolicy* cache = instances[i].cache;
      if (cache == nullptr || (wanted != nullptr && (*wanted)[i] == 0)) continue;
      // A cache with nothing below the device counts its blocks alone: no
      // hit to build and drop per instance.
      if (const int64_t device = cache->device_prefix_tokens(tokens, memo_); device >= 0) {
        out[i].device = device;
        continue;
      }
      const PrefixHit hit = cache->lookup_prefix(tokens, memo_);
      const auto blocks = static_cast<int64_t>(hit.blocks.size() + hit.tier_hits.size());
      if (blocks == 0) continue;
      const int64_t bs = hit.cached_tokens / blocks;
      PrefixOverlap& o = out[i];
      o.device = static_cast<int64_t>(hit.blocks.size()) * bs;
      const TierChain* chain = cache->tiers();
      for (int8_t t : hit.tier_hits) {
        if (chain == nullptr || chain->shared(t))
          o.shared += bs;
        else if (chain->tier(t).name() == "ssd")
          o.disk += bs;
        else
          o.host += bs;
      }
    }
  }

 private:
  std::vector<BlockHash> memo_;
};

}  // namespace

config::ComponentInfo exact_prefix_index_info() {
  return {"prefix index",
          "exact",
          "each instance's cache (device and tiers) read at the instant of routing: an oracle no "
          "deployed router has",
          {}};
}

std::unique_ptr<PrefixIndex> make_exact_prefix_index(const config::ParamValues&) {
  return std::make_unique<ExactPrefixIndex>();
}

}  // namespace kvsim
