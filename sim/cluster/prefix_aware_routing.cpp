// prefix_aware: the instance whose cache holds the longest prefix of the
// request's prompt, among the instances whose load stays within a bound
// (llm-d's precise prefix-cache scorer and SGLang's cache-aware router both
// trade hits against balance). The bound is that of consistent hashing with
// bounded loads (Mirrokni, Thorup, Zadimoghaddam, SODA'18): an instance may
// take the request while its outstanding tokens, the request's included,
// stay within load_bound x the mean over instances. No candidate holds any
// of the prefix: the least loaded instance takes it, so a cold prefix
// spreads like least_loaded does.
//
// With tiers below the device, what an instance holds itself (device and
// its own DRAM/SSD) ranks first, and the blocks every instance reaches alike
// through a shared tier (a cluster's global pool) only break ties: they
// would load on any instance, so they say nothing about where to go.
#include <algorithm>

#include "sim/cluster/routing_policies.hpp"

namespace kvsim {
namespace {

class PrefixAwareRouting final : public RoutingPolicy {
 public:
  explicit PrefixAwareRouting(double load_bound) : load_bound_(load_bound) {}
  std::string_view name() const override { return "prefix_aware"; }

  size_t pick(const Request& request, std::span<const InstanceView> instances) override {
    const int64_t own = static_cast<int64_t>(request.prompt.size() + request.output.size());
    int64_t total = own;
    for (const InstanceView& v : instances) total += v.outstanding_tokens;
    const double bound =
        load_bound_ * static_cast<double>(total) / static_cast<double>(instances.size());
    // Built as the engine builds it (a described prompt hashes from its
    // runs), so the router finds the blocks the engine registered.
    const TokenView tokens = TokenView::of(request.prompt, request.output, 0);
    // The block hashes depend on the content only: hashed once, reused for
    // every instance's lookup.
    memo_.clear();
    size_t best = instances.size();
    Score best_hit;
    for (size_t i = 0; i < instances.size(); ++i) {
      const InstanceView& v = instances[i];
      if (v.cache == nullptr) continue;
      if (static_cast<double>(v.outstanding_tokens + own) > bound) continue;
      const Score hit = score(*v.cache, v.cache->lookup_prefix(tokens, memo_));
      if (best_hit < hit || (hit == best_hit && hit.total > 0 &&
                             v.outstanding_tokens < instances[best].outstanding_tokens)) {
        best = i;
        best_hit = hit;
      }
    }
    if (best < instances.size()) return best;
    return least_loaded_index(instances, /*by_tokens=*/true);
  }

 private:
  struct Score {
    int64_t own = 0;    // blocks on the device or in the instance's own tiers
    int64_t total = 0;  // cached tokens, shared tiers included
    auto operator<=>(const Score&) const = default;
  };
  static Score score(const KvCachePolicy& cache, const PrefixHit& hit) {
    Score s{static_cast<int64_t>(hit.blocks.size()), hit.cached_tokens};
    const TierChain* chain = cache.tiers();
    for (int8_t t : hit.tier_hits) s.own += chain != nullptr && !chain->shared(t) ? 1 : 0;
    return s;
  }

  double load_bound_;
  std::vector<BlockHash> memo_;
};

}  // namespace

config::ComponentInfo prefix_aware_routing_info() {
  using namespace config;
  return {"router",
          "prefix_aware",
          "the longest cached prefix among instances within a load bound, else the least loaded",
          {number_param("load_bound", 1.5, 1.0, 1e6, "x mean outstanding tokens",
                        "an instance takes a request only while its outstanding tokens, the "
                        "request's included, stay within this multiple of the mean")}};
}

std::unique_ptr<RoutingPolicy> make_prefix_aware_routing(const config::ParamValues& params) {
  return std::make_unique<PrefixAwareRouting>(params.number("load_bound"));
}

}  // namespace kvsim
