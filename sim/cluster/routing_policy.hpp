#pragma once
// How a cluster's router picks the instance that serves a request (llm-d's
// and SGLang's routers, vLLM's data-parallel front end). A routing policy
// sees a snapshot of every candidate instance (its outstanding load and, for
// prefix-aware routing, a const view of its KV cache) and returns an index;
// it never changes an instance. One file per policy, registered by name in
// routing_registry.cpp (DESIGN practice 1).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "sim/cache/kv_cache_policy.hpp"
#include "workloads/request.hpp"

namespace kvsim {

// What a router knows of one instance when it routes a request.
struct InstanceView {
  int64_t outstanding_requests = 0;  // routed to it and not yet left it
  int64_t outstanding_tokens = 0;    // prompt + output tokens of those requests
  // The instance's cache, for the longest cached prefix (lookup_prefix is
  // const); nullptr when the engine has none a router could read.
  const KvCachePolicy* cache = nullptr;
};

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  virtual std::string_view name() const = 0;
  // The index in `instances` (never empty) that serves `request`. May keep
  // state of its own (a cursor); called once per request, in arrival order.
  virtual size_t pick(const Request& request, std::span<const InstanceView> instances) = 0;
};

// The least loaded of `instances` by outstanding tokens (`by_tokens`) or
// requests, ties to the lowest index: the fallback every policy shares.
size_t least_loaded_index(std::span<const InstanceView> instances, bool by_tokens);

}  // namespace kvsim
