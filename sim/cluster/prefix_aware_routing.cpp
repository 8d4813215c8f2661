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
// What it knows of the caches is its prefix index's (`index:`, default
// exact: every cache read at the instant of routing). With tiers below the
// device, what an instance holds itself (device and its own DRAM/SSD) ranks
// first, and the blocks every instance reaches alike through a shared tier
// (a cluster's global pool) only break ties: they would load on any
// instance, so they say nothing about where to go.
#include <algorithm>

#include "sim/cluster/routing_policies.hpp"

namespace kvsim {
namespace {

class PrefixAwareRouting final : public RoutingPolicy {
 public:
  PrefixAwareRouting(double load_bound, std::unique_ptr<PrefixIndex> index)
      : load_bound_(load_bound), index_(std::move(index)) {}
  std::string_view name() const override { return "prefix_aware"; }
  PrefixIndex* prefix_index() override { return index_.get(); }

  size_t pick(const Request& request, std::span<const InstanceView> instances) override {
    const size_t i = choose(request, instances);
    index_->routed(request, i);
    return i;
  }

 private:
  size_t choose(const Request& request, std::span<const InstanceView> instances) {
    const int64_t own = static_cast<int64_t>(request.prompt.size() + request.output.size());
    int64_t total = own;
    for (const InstanceView& v : instances) total += v.outstanding_tokens;
    const double bound =
        load_bound_ * static_cast<double>(total) / static_cast<double>(instances.size());
    // Only the instances within the bound are looked up (the others cannot
    // take the request).
    within_.resize(instances.size());
    for (size_t i = 0; i < instances.size(); ++i)
      within_[i] = static_cast<double>(instances[i].outstanding_tokens + own) <= bound ? 1 : 0;
    index_->overlaps(request, instances, overlaps_, &within_);
    size_t best = instances.size();
    Score best_hit;
    for (size_t i = 0; i < instances.size(); ++i) {
      const InstanceView& v = instances[i];
      if (within_[i] == 0) continue;
      const Score hit{overlaps_[i].own(), overlaps_[i].total()};
      if (best_hit < hit || (hit == best_hit && hit.total > 0 &&
                             v.outstanding_tokens < instances[best].outstanding_tokens)) {
        best = i;
        best_hit = hit;
      }
    }
    if (best < instances.size()) return best;
    return least_loaded_index(instances, /*by_tokens=*/true);
  }

  struct Score {
    int64_t own = 0;    // tokens on the device or in the instance's own tiers
    int64_t total = 0;  // cached tokens, shared tiers included
    auto operator<=>(const Score&) const = default;
  };

  double load_bound_;
  std::unique_ptr<PrefixIndex> index_;
  std::vector<PrefixOverlap> overlaps_;
  std::vector<uint8_t> within_;
};

}  // namespace

config::ComponentInfo prefix_aware_routing_info() {
  using namespace config;
  return {"router",
          "prefix_aware",
          "the longest cached prefix among instances within a load bound, else the least loaded",
          {number_param("load_bound", 1.5, 1.0, 1e6, "x mean outstanding tokens",
                        "an instance takes a request only while its outstanding tokens, the "
                        "request's included, stay within this multiple of the mean"),
           prefix_index_param()}};
}

std::unique_ptr<RoutingPolicy> make_prefix_aware_routing(const RoutingPolicyArgs& args) {
  return std::make_unique<PrefixAwareRouting>(args.params.number("load_bound"),
                                              make_prefix_index(args.index));
}

}  // namespace kvsim
