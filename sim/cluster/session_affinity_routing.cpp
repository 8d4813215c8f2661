// session_affinity: every call of a session goes to one instance, the
// session id hashed onto the instances (a sticky session at a load
// balancer, vLLM production-stack's session router), so a call finds the
// history its previous calls left in that instance's cache. A request of
// no session (id 0) goes to the least loaded instance.
//
// Sub-agents (Request::parent_session): a sub-agent's calls start from its
// parent's context, so with `follow_parent` (the default) they go where
// the root of their session tree goes, and the shared prefix is found
// there; without it each session hashes on its own id. The router learns a
// session's root from the first call that names its parent and forgets it
// at the session's last call (Request::session_continues false), so its
// table holds the sub-agent sessions in flight only; a root session keeps
// no entry. A sub-agent whose parent it never saw (or already forgot)
// takes its parent as the root.
#include <unordered_map>

#include "sim/cluster/routing_policies.hpp"
#include "workloads/rng.hpp"

namespace kvsim {
namespace {

class SessionAffinityRouting final : public RoutingPolicy {
 public:
  explicit SessionAffinityRouting(bool follow_parent) : follow_parent_(follow_parent) {}
  std::string_view name() const override { return "session_affinity"; }
  size_t pick(const Request& request, std::span<const InstanceView> instances) override {
    if (request.session == 0) return least_loaded_index(instances, /*by_tokens=*/true);
    const uint64_t key = follow_parent_ ? root_of(request) : request.session;
    // SplitMix64's finaliser: consecutive session ids land on unrelated instances.
    return static_cast<size_t>(mix64(key) % instances.size());
  }

 private:
  uint64_t root_of(const Request& request) {
    uint64_t root = request.session;
    if (const auto it = root_.find(request.session); it != root_.end()) {
      root = it->second;
    } else if (request.parent_session != 0) {
      const auto parent = root_.find(request.parent_session);
      root = parent != root_.end() ? parent->second : request.parent_session;
    }
    if (!request.session_continues)
      root_.erase(request.session);
    else if (root != request.session)
      root_[request.session] = root;
    return root;
  }

  bool follow_parent_;
  std::unordered_map<uint64_t, uint64_t> root_;  // sub-agent session -> its root session
};

}  // namespace

config::ComponentInfo session_affinity_routing_info() {
  using namespace config;
  return {"router",
          "session_affinity",
          "every call of a session to the instance its id hashes to (a sub-agent to its root "
          "session's); no session: least loaded",
          {bool_param("follow_parent", true,
                      "a sub-agent session goes where the root of its session tree goes, where "
                      "the context it shares is cached")}};
}

std::unique_ptr<RoutingPolicy> make_session_affinity_routing(const RoutingPolicyArgs& args) {
  return std::make_unique<SessionAffinityRouting>(args.params.boolean("follow_parent"));
}

}  // namespace kvsim
