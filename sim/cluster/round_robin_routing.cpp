// round_robin: request k goes to instance k mod N, whatever their state
// (vLLM's and SGLang's simplest data-parallel front end). The baseline the
// smarter policies are measured against.
#include "sim/cluster/routing_policies.hpp"

namespace kvsim {
namespace {

class RoundRobinRouting final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "round_robin"; }
  size_t pick(const Request&, std::span<const InstanceView> instances) override {
    const size_t i = next_ % instances.size();
    next_ = i + 1;
    return i;
  }

 private:
  size_t next_ = 0;
};

}  // namespace

config::ComponentInfo round_robin_routing_info() {
  return {"router", "round_robin", "request k to instance k mod N, blind to load and cache", {}};
}

std::unique_ptr<RoutingPolicy> make_round_robin_routing(const RoutingPolicyArgs&) {
  return std::make_unique<RoundRobinRouting>();
}

}  // namespace kvsim
