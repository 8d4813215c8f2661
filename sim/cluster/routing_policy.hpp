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
  // const); nullptr when the engine has none a router could read. Only the
  // `exact` prefix index reads it (prefix_index.hpp).
  const KvCachePolicy* cache = nullptr;
  int64_t block_size = 0;  // tokens per KV block of the instance (0: none)
  // KV blocks those requests hold at their end: each one's prompt + output
  // tokens rounded up to blocks, counted by the router as it routes and as
  // requests leave (NVIDIA Dynamo's router tracks its workers' active
  // blocks the same way, from the requests it sent, not from the engine).
  int64_t outstanding_blocks = 0;
  // Blocks of the instance's pool in use, as a fraction of them (vLLM's
  // kv_cache_usage: 1 - free / total, cached free blocks counting as free),
  // read at the instant of routing.
  double kv_utilization = 0;
};

class PrefixIndex;

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  virtual std::string_view name() const = 0;
  // The index in `instances` (never empty) that serves `request`. May keep
  // state of its own (a cursor); called once per request, in arrival order.
  virtual size_t pick(const Request& request, std::span<const InstanceView> instances) = 0;
  // The prefix index it routes by (prefix_index.hpp), or nullptr: the
  // cluster attaches it to the instances, feeds it their KV events when it
  // asks for them, and advances it to the clock before each pick.
  virtual PrefixIndex* prefix_index() { return nullptr; }
};

// The least loaded of `instances` by outstanding tokens (`by_tokens`) or
// requests, ties to the lowest index: the fallback every policy shares.
size_t least_loaded_index(std::span<const InstanceView> instances, bool by_tokens);

}  // namespace kvsim
