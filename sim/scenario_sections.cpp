#include "sim/scenario_sections.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/cache/policy_registry.hpp"
#include "sim/metrics.hpp"

namespace kvsim {
using config::MapReader;
using config::Node;

void read_kv_cache_section(MapReader& top, ScenarioSpec& s) {
  MapReader r(top.child("kv_cache"));
  const std::vector<std::string> policies = cache_policy_names();
  config::ComponentInfo shared = kv_cache_section_info();
  const Node policy = r.child("policy");
  bool known = !policy.defined();  // absent: the declared default
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
        known = true;
      }
    }
  }
  // `policy` is read above (a planned policy has its own message).
  std::erase_if(shared.params, [](const config::ParamSpec& p) { return p.key == "policy"; });
  s.cache.assign(config::read_params(r, shared));
  if (known) {
    s.cache.assign(read_cache_policy_params(r, s.cache.policy));
  } else {
    // Which keys belong is unknown without a policy: only its error counts.
    for (const auto& info : cache_policy_infos())
      for (const auto& p : info.params) r.declare(p.key);
  }
  r.finish();
}

config::ComponentInfo serving_engine_info() {
  using namespace config;
  return {"engine",
          "serving",
          "continuous batching of many requests on a server device (vLLM's scheduler, seed 001); "
          "its keys are the `scheduler:` section",
          {int_param("max_num_seqs", 256, 1, 1 << 20, "sequences", "sequences running at once"),
           int_param("max_batched_tokens", 8192, 1, 1 << 24, "tokens", "tokens per engine step"),
           bool_param("chunked_prefill", true, "split a long prompt over several steps"),
           int_param("max_model_len", 0, 0, 1LL << 32, "tokens",
                     "longest sequence (0: the model's max_position_embeddings)")}};
}

void read_scheduler_section(MapReader& top, ScenarioSpec& s) {
  MapReader r(top.child("scheduler"));
  const config::ParamValues v = config::read_params(r, serving_engine_info());
  s.scheduler.max_num_seqs = v.integer("max_num_seqs");
  s.scheduler.max_batched_tokens = v.integer("max_batched_tokens");
  s.scheduler.chunked_prefill = v.boolean("chunked_prefill");
  s.scheduler.max_model_len = v.integer("max_model_len");
  r.finish();
}

void serving_engine_checks(const ScenarioSpec& s, config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const ModelSpec& m = s.model;
  if (s.scheduler.max_model_len > m.max_position_embeddings) {
    ctx.diagnostics.error(at("scheduler.max_model_len"), "scheduler.max_model_len",
                          fmt::format("{} is beyond the model's max_position_embeddings {}",
                                      s.scheduler.max_model_len, m.max_position_embeddings),
                          fmt::format("0..{}", m.max_position_embeddings));
  }
  if (s.scheduler.max_batched_tokens < s.scheduler.max_num_seqs && s.scheduler.chunked_prefill) {
    // vLLM requires it so that every running sequence can decode in one step.
    ctx.diagnostics.error(at("scheduler.max_batched_tokens"), "scheduler.max_batched_tokens",
                          fmt::format("{} is below max_num_seqs {}", s.scheduler.max_batched_tokens,
                                      s.scheduler.max_num_seqs),
                          "max_batched_tokens >= max_num_seqs");
  }
  if (s.workload) {
    const WorkloadBounds wb = workload_bounds(*s.workload);
    if (!s.scheduler.chunked_prefill && wb.max_prompt_tokens > s.scheduler.max_batched_tokens) {
      ctx.diagnostics.error(
          at("scheduler.max_batched_tokens"), "scheduler.max_batched_tokens",
          fmt::format("without chunked prefill a {}-token prompt (the workload's longest) "
                      "needs max_batched_tokens >= {}",
                      wb.max_prompt_tokens, wb.max_prompt_tokens),
          "raise max_batched_tokens or set chunked_prefill: true");
    }
  }
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
    // No value meets min above max: the expectation could only ever fail.
    if (e.min && e.max && *e.min > *e.max)
      b.node().error(fmt::format("min {} is above max {}: no value can meet both", *e.min, *e.max),
                     "min <= max");
    s.expect.push_back(e);
  }
}

}  // namespace kvsim
