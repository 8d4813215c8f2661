// session_affinity: every turn of a chat session goes to one instance, the
// session id hashed onto the instances (a sticky session at a load
// balancer, vLLM production-stack's session router), so a turn finds the
// history its previous turns left in that instance's cache. Hashing keeps no
// table, so memory does not grow with the number of sessions. A request of
// no session (id 0) goes to the least loaded instance.
#include "sim/cluster/routing_policies.hpp"

namespace kvsim {
namespace {

// SplitMix64's finaliser: consecutive session ids land on unrelated instances.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class SessionAffinityRouting final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "session_affinity"; }
  size_t pick(const Request& request, std::span<const InstanceView> instances) override {
    if (request.session == 0) return least_loaded_index(instances, /*by_tokens=*/true);
    return static_cast<size_t>(mix(request.session) % instances.size());
  }
};

}  // namespace

config::ComponentInfo session_affinity_routing_info() {
  return {"router",
          "session_affinity",
          "every turn of a session to the instance its id hashes to; no session: least loaded",
          {}};
}

std::unique_ptr<RoutingPolicy> make_session_affinity_routing(const config::ParamValues&) {
  return std::make_unique<SessionAffinityRouting>();
}

}  // namespace kvsim
