#include "sim/scenario_sections.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/kv_layout.hpp"
#include "sim/cache/policy_registry.hpp"
#include "sim/metrics.hpp"

namespace kvsim {
using config::MapReader;
using config::Node;

void read_kv_cache_section(MapReader& top, ScenarioSpec& s) {
  MapReader r(top.child("kv_cache"));
  std::vector<std::string> policies = cache_policy_names();
  const Node policy = r.child("policy");
  if (policy.defined()) {
    const auto name = policy.as_string();
    if (name) {
      const auto planned = planned_cache_policy_names();
      if (std::find(planned.begin(), planned.end(), *name) != planned.end()) {
        std::string list;
        for (const auto& p : policies) list += (list.empty() ? "" : ", ") + p;
        policy.error(
            fmt::format("policy '{}' is specified (SPEC 6) but not implemented in this build",
                        *name),
            "available: " + list);
      } else if (policy.as_choice(policies)) {
        s.cache.policy = *name;
      }
    }
  }
  s.cache.dtype = r.choice("dtype", "fp16", {"fp16", "bf16", "int8", "fp32"});
  s.cache.block_size = r.integer("block_size", 128, 1, 1 << 16);
  s.cache.memory_fraction = r.number("memory_fraction", 0.9, 0.01, 1.0);
  s.cache.prefix_caching = r.boolean("prefix_caching", true);
  s.cache.layout = r.choice("layout", "ksana", kv_layout_names());
  s.cache.preemption = r.choice("preemption", "recompute", {"recompute", "swap"});
  s.cache.swap_space = r.bytes("swap_space", 4LL << 30, 0, 1LL << 50);
  if (r.has("activation_reserve"))
    s.cache.activation_reserve = r.bytes("activation_reserve", 0, 0, 1LL << 50);
  else
    r.ignore({"activation_reserve"});
  // On-device family (seed 002); range checks that need the model or the
  // policy are in cross_checks().
  s.cache.ctx_size = r.integer("ctx_size", 4096, 1, 1 << 22);
  if (const Node variants = r.child("ar_variants"); variants.defined()) {
    std::vector<int64_t> list;
    for (const Node& item : variants.items()) {
      if (auto n = item.as_int(1, 1 << 22)) list.push_back(*n);
    }
    if (variants.is_sequence() && list.empty())
      variants.error("is empty", "a list of AR-n sizes such as [1, 32, 128]");
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    if (!list.empty()) s.cache.ar_variants = list;
  }
  s.cache.update_mode = r.choice("update_mode", "pointer_shift",
                                 {"shift_concat", "pointer_shift", "smart_mask", "paged"});
  s.cache.window = r.integer("window", 0, 0, 1 << 22);
  s.cache.update_threads = r.integer("update_threads", 4, 1, 64);
  s.cache.pointer_shift_headroom = r.integer("pointer_shift_headroom", 0, 0, 1 << 22);
  // chunk_lru (seed 003).
  s.cache.main_pool_fraction = r.number("main_pool_fraction", 0.70, 0.0, 1.0);
  s.cache.chunk_pool_fraction = r.number("chunk_pool_fraction", 0.15, 0.0, 1.0);
  s.cache.virtual_pos_start = r.integer("virtual_pos_start", 4096, 0, 1LL << 31);
  s.cache.max_chunks = r.integer("max_chunks", 1 << 20, 1, 1LL << 31);
  s.cache.max_chunk_tokens = r.integer("max_chunk_tokens", 32768, 1, 1LL << 31);
  r.finish();
}

void read_scheduler_section(MapReader& top, ScenarioSpec& s) {
  MapReader r(top.child("scheduler"));
  s.scheduler.max_num_seqs = r.integer("max_num_seqs", 256, 1, 1 << 20);
  s.scheduler.max_batched_tokens = r.integer("max_batched_tokens", 8192, 1, 1 << 24);
  s.scheduler.chunked_prefill = r.boolean("chunked_prefill", true);
  s.scheduler.max_model_len = r.integer("max_model_len", 0, 0, 1LL << 32);
  r.finish();
}

void read_expect_section(MapReader& top, ScenarioSpec& s) {
  const Node ex = top.child("expect");
  if (!ex.defined()) return;
  if (!ex.is_map()) {
    ex.error("expected a map of metric: bounds", "expect: {latency_ms.ttft.p99: {max: 800}}");
    return;
  }
  const auto keys = metric_key_names();
  for (auto it = ex.raw().begin(); it != ex.raw().end(); ++it) {
    const std::string metric = it->first.Scalar();
    Node key_node(it->first, "expect." + metric, ex.file(), &ex.context());
    if (std::find(keys.begin(), keys.end(), metric) == keys.end()) {
      const std::string near = config::closest_match(metric, keys);
      key_node.error(near.empty()
                         ? fmt::format("unknown metric '{}'", metric)
                         : fmt::format("unknown metric '{}', did you mean '{}'?", metric, near),
                     "a numeric key of metrics.json");
      continue;
    }
    Expectation e;
    e.metric = metric;
    e.where = key_node.location();
    MapReader b(Node(it->second, "expect." + metric, ex.file(), &ex.context()));
    auto opt = [&](const char* k) -> std::optional<double> {
      if (!b.has(k)) {
        b.ignore({k});
        return std::nullopt;
      }
      return b.number(k, 0.0, -1e300, 1e300);
    };
    e.min = opt("min");
    e.max = opt("max");
    e.equals = opt("equals");
    e.approx = opt("approx");
    e.rel = b.number("rel", 0.0, 0.0, 1e9);
    e.abs = b.number("abs", 0.0, 0.0, 1e300);
    b.finish();
    if (!e.min && !e.max && !e.equals && !e.approx) {
      b.node().error("no bound given", "min, max, equals, or approx with rel/abs");
    }
    s.expect.push_back(e);
  }
}

}  // namespace kvsim
