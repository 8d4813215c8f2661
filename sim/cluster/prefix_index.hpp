#pragma once
// What a router knows of the prefixes each instance holds: one interface,
// one file per kind, registered by name in prefix_index_registry.cpp. A
// router that routes by prefix (prefix_aware, kv_cost, weighted) owns one,
// chosen by its `index:` map:
// - `exact` (exact_prefix_index.cpp): each instance's cache read at the
//   instant of routing, tiers included. No deployed router has this view;
//   it is the bound the others are measured against, and the default.
// - `events` (event_prefix_index.cpp): block stored / block removed events
//   from each instance's device pool (vLLM's KV events, consumed by llm-d's
//   precise prefix-cache scorer and NVIDIA Dynamo's KV router), applied
//   `lag` after they happened. A stale index may send a request to an
//   instance that has since evicted the prefix.
// - `approximate` (approximate_prefix_index.cpp): the router's own record
//   of the prompts it routed (llm-d / Gateway API Inference Extension's
//   prefix-cache scorer): chained hashes of the prompt's chunks in a
//   bounded LRU per instance, blind to what the instance evicts.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "base/units.hpp"
#include "sim/cache/block_hash.hpp"
#include "sim/cluster/routing_policy.hpp"
#include "workloads/request.hpp"

namespace kvsim {

// The leading tokens of a prompt an index says one instance holds, by where
// it holds them. The parts add up (device first, then its own tiers, then a
// tier every instance shares); each is a multiple of the index's block.
struct PrefixOverlap {
  int64_t device = 0;  // in the instance's device pool
  int64_t host = 0;    // in its own host (dram) tier
  int64_t disk = 0;    // in its own disk (ssd) tier
  int64_t shared = 0;  // in a tier every instance reaches (a cluster's global pool)
  int64_t total() const { return device + host + disk + shared; }
  // What the instance holds itself (the shared tier aside).
  int64_t own() const { return device + host + disk; }
};

enum class KvEventKind : uint8_t { stored, removed };

class PrefixIndex {
 public:
  virtual ~PrefixIndex() = default;
  virtual std::string_view kind() const = 0;
  // Before the run: the router routes among `instances` instances (the
  // positions of its InstanceViews) whose KV blocks hold `block_size`
  // tokens each.
  virtual void attach(size_t instances, int64_t block_size) {
    (void)instances;
    (void)block_size;
  }
  // True when the index learns of blocks through KV events: the cluster
  // then sends it every event of every instance it routes among.
  virtual bool wants_events() const { return false; }
  // Instance `instance`'s pool made `hash` findable or dropped it at `at`.
  // Events come in time order.
  virtual void on_event(size_t instance, KvEventKind kind, const BlockHash& hash, TimeNs at) {
    (void)instance;
    (void)kind;
    (void)hash;
    (void)at;
  }
  // The clock reached `now`: what the index knows from here on is what had
  // reached the router by then. Called before each routing.
  virtual void advance_to(TimeNs now) { (void)now; }
  // out[i]: the leading prompt tokens of `request` the index says
  // instances[i] holds (out is resized to instances.size()). With `wanted`,
  // an instance whose entry is 0 may be left at no overlap (a router that
  // has ruled it out spares the exact index its lookup).
  virtual void overlaps(const Request& request, std::span<const InstanceView> instances,
                        std::vector<PrefixOverlap>& out,
                        const std::vector<uint8_t>* wanted = nullptr) = 0;
  // The router sent `request` to instances[pick] (the last overlaps() call
  // was about this request).
  virtual void routed(const Request& request, size_t pick) {
    (void)request;
    (void)pick;
  }
};

// `index:` of a router: a kind and its parameters.
struct PrefixIndexConfig {
  std::string kind = "exact";
  config::ParamValues params;
};

constexpr std::string_view kDefaultPrefixIndex = "exact";

// Registered kinds, sorted; their infos (kind "prefix index"); the defaults
// of one kind; a new index (std::invalid_argument naming the kinds when the
// kind is unknown: the reader checks the YAML first).
std::vector<std::string> prefix_index_names();
std::vector<config::ComponentInfo> prefix_index_infos();
const config::ComponentInfo& prefix_index_info(std::string_view kind);
PrefixIndexConfig prefix_index_defaults(std::string_view kind);
std::unique_ptr<PrefixIndex> make_prefix_index(const PrefixIndexConfig& config);

// One line per kind (prefix_index_registry.cpp lists them).
config::ComponentInfo exact_prefix_index_info();
std::unique_ptr<PrefixIndex> make_exact_prefix_index(const config::ParamValues& params);
config::ComponentInfo event_prefix_index_info();
std::unique_ptr<PrefixIndex> make_event_prefix_index(const config::ParamValues& params);
config::ComponentInfo approximate_prefix_index_info();
std::unique_ptr<PrefixIndex> make_approximate_prefix_index(const config::ParamValues& params);

// The `index` parameter a router that owns an index declares.
config::ParamSpec prefix_index_param();

}  // namespace kvsim
