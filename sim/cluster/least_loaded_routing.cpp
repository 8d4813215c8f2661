// least_loaded: the instance with the least outstanding work, counted in
// tokens (prompt + output of the requests routed to it and not yet done, as
// SGLang's router balances) or in requests (llm-d's queue-depth scorer).
// Ties go to the lowest index so runs are reproducible.
#include "sim/cluster/routing_policies.hpp"

namespace kvsim {

size_t least_loaded_index(std::span<const InstanceView> instances, bool by_tokens) {
  size_t best = 0;
  for (size_t i = 1; i < instances.size(); ++i) {
    const InstanceView& a = instances[i];
    const InstanceView& b = instances[best];
    const int64_t la = by_tokens ? a.outstanding_tokens : a.outstanding_requests;
    const int64_t lb = by_tokens ? b.outstanding_tokens : b.outstanding_requests;
    if (la < lb) best = i;
  }
  return best;
}

namespace {

class LeastLoadedRouting final : public RoutingPolicy {
 public:
  explicit LeastLoadedRouting(bool by_tokens) : by_tokens_(by_tokens) {}
  std::string_view name() const override { return "least_loaded"; }
  size_t pick(const Request&, std::span<const InstanceView> instances) override {
    return least_loaded_index(instances, by_tokens_);
  }

 private:
  bool by_tokens_;
};

}  // namespace

config::ComponentInfo least_loaded_routing_info() {
  using namespace config;
  return {"router",
          "least_loaded",
          "the instance with the least outstanding work (ties to the lowest index)",
          {choice_param("by", "tokens", {"tokens", "requests"},
                        "load counted as outstanding prompt + output tokens, or requests")}};
}

std::unique_ptr<RoutingPolicy> make_least_loaded_routing(const RoutingPolicyArgs& args) {
  return std::make_unique<LeastLoadedRouting>(args.params.string("by") == "tokens");
}

}  // namespace kvsim
