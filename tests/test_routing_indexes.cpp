// Prefix indexes (sim/cluster/prefix_index.hpp) and the routers that use
// them, on hand-built states: the exact index reads the caches; the event
// index sees what KV events told it `lag` ago, so a stale one sends a
// request to an instance that has since evicted the prefix; the
// approximate index never claims more than the prompts it routed share;
// kv_cost follows Dynamo's formula and samples reproducibly; weighted sums
// its scorers; session_affinity keeps a sub-agent with its root session;
// and the bad `index:` and weights are errors naming their key.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "base/diagnostics.hpp"
#include "scenario_helpers.hpp"
#include "sim/cluster/prefix_index.hpp"
#include "sim/cluster/routing_registry.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::scenario_from_text;

const char* kBase = R"(
name: index-test
seed: 7
device: ascend-910b2
model: llama-3.2-1b
kv_cache: {policy: paged, block_size: 16}
scheduler: {max_batched_tokens: 4096}
workload:
  kind: synthetic
  requests: 60
  arrival: {process: poisson, rate_per_s: 40}
  input_tokens: {dist: uniform, min: 64, max: 512}
  output_tokens: {dist: uniform, min: 4, max: 48}
  shared_prefix: {groups: 3, tokens: 128, popularity: uniform}
)";

std::vector<int32_t> prompt_of(int32_t seed, int64_t n) {
  std::vector<int32_t> p;
  for (int64_t i = 0; i < n; ++i) p.push_back(static_cast<int32_t>(seed * 1000 + i));
  return p;
}

std::vector<int32_t> extended(std::vector<int32_t> p, int64_t more) {
  for (int64_t t = 0; t < more; ++t) p.push_back(static_cast<int32_t>(900000 + t));
  return p;
}

Request request_of(std::vector<int32_t> prompt, uint64_t id = 0) {
  Request r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.output = std::vector<int32_t>{1, 2};
  return r;
}

// A KV event listener that stamps events with the test's clock and hands
// them to an index as the cluster's EventTap does.
struct Tap final : KvEventListener {
  void on_block_stored(const BlockHash& h) override {
    index->on_event(member, KvEventKind::stored, h, *now);
  }
  void on_block_removed(const BlockHash& h) override {
    index->on_event(member, KvEventKind::removed, h, *now);
  }
  PrefixIndex* index = nullptr;
  size_t member = 0;
  const TimeNs* now = nullptr;
};

// Three paged caches of 64 blocks of 16 tokens.
struct Caches {
  Caches() {
    const ScenarioSpec s = scenario_from_text(kBase);
    PoolSizing sizing = s.pool_sizing();
    sizing.num_blocks = 64;
    for (auto& c : caches) c = s.policy().block_pool()->make(s, sizing);
  }
  // `prompt` computed and released on cache i: its blocks stay cached, free.
  void warm(size_t i, const std::vector<int32_t>& prompt) {
    KvCachePolicy& c = *caches[i];
    const TokenView t{prompt.data(), static_cast<int64_t>(prompt.size()), nullptr, 0};
    PrefixHit hit = c.lookup_prefix(t);
    const int64_t need = t.size() - hit.cached_tokens;
    const AdmitPlan plan = c.plan_admit(std::move(hit), need);
    ASSERT_TRUE(plan.fits);
    const SeqSlot slot = c.apply_admit(plan);
    c.commit(slot, t, t.size());
    c.release(slot);
  }
  void listen(PrefixIndex& index, const TimeNs* now) {
    index.attach(3, 16);
    for (size_t i = 0; i < 3; ++i) {
      taps[i].index = &index;
      taps[i].member = i;
      taps[i].now = now;
      ASSERT_TRUE(caches[i]->set_kv_event_listener(&taps[i]));
    }
  }
  std::vector<InstanceView> views(int64_t load = 500) const {
    std::vector<InstanceView> v(3);
    for (size_t i = 0; i < 3; ++i) {
      v[i] = {1, load, caches[i].get()};
      v[i].block_size = 16;
    }
    return v;
  }
  std::unique_ptr<KvCachePolicy> caches[3];
  Tap taps[3];
};

PrefixIndexConfig index_config(const std::string& kind,
                               std::map<std::string, config::ParamValue> set = {}) {
  PrefixIndexConfig c = prefix_index_defaults(kind);
  for (auto& [k, v] : set) c.params.set(k, v, true);
  return c;
}

std::vector<int64_t> device_overlaps(PrefixIndex& index, const Request& r,
                                     const std::vector<InstanceView>& v) {
  std::vector<PrefixOverlap> out;
  index.overlaps(r, v, out);
  std::vector<int64_t> d;
  for (const PrefixOverlap& o : out) d.push_back(o.device);
  return d;
}

TEST(PrefixIndexes, RegistryListsEveryKind) {
  EXPECT_EQ(prefix_index_names(), (std::vector<std::string>{"approximate", "events", "exact"}));
  EXPECT_THROW(make_prefix_index(PrefixIndexConfig{"nope", {}}), std::invalid_argument);
}

TEST(PrefixIndexes, ExactReadsEachCacheNow) {
  Caches c;
  const auto shared = prompt_of(1, 160);  // 10 blocks
  c.warm(1, shared);
  c.warm(2, std::vector<int32_t>(shared.begin(), shared.begin() + 64));
  auto exact = make_prefix_index(index_config("exact"));
  EXPECT_EQ(device_overlaps(*exact, request_of(extended(shared, 40)), c.views()),
            (std::vector<int64_t>{0, 160, 64}));
}

// At lag 0 the events say what the caches hold (device only): the same
// overlaps as the exact index, whatever was stored and evicted.
TEST(PrefixIndexes, EventsAtLagZeroAgreeWithTheCaches) {
  Caches c;
  TimeNs now = 0;
  auto events = make_prefix_index(index_config("events"));
  c.listen(*events, &now);
  auto exact = make_prefix_index(index_config("exact"));
  std::mt19937 rng(11);
  for (int round = 0; round < 40; ++round) {
    now += 1'000'000;
    const size_t i = rng() % 3;
    c.warm(i, prompt_of(static_cast<int32_t>(rng() % 6), 16 + rng() % 400));
    events->advance_to(now);
    for (int32_t s = 0; s < 6; ++s) {
      const Request r = request_of(extended(prompt_of(s, 400), 3));
      EXPECT_EQ(device_overlaps(*events, r, c.views()), device_overlaps(*exact, r, c.views()))
          << "round " << round << " prompt " << s;
    }
  }
}

// Instance 1 held the prefix and evicted it at t = 3 s; with a lag of 1 s
// the router still believes it holds it at 3.5 s and sends the request
// there (prefix_aware over the event index), where the exact index already
// says nothing is left. Once the removals arrive, the request goes to the
// least loaded instance.
TEST(PrefixIndexes, AStaleEventIndexSendsARequestWhereThePrefixWasEvicted) {
  Caches c;
  TimeNs now = 0;
  auto router = make_routing_policy("prefix_aware", routing_policy_defaults("prefix_aware"),
                                    index_config("events", {{"lag", int64_t{1'000'000'000}}}), 1);
  PrefixIndex& events = *router->prefix_index();
  c.listen(events, &now);
  const auto prefix = prompt_of(1, 320);  // 20 blocks
  c.warm(1, prefix);
  now = 3'000'000'000;
  // 64 blocks of other content on instance 1: every block of the prefix reused.
  for (int32_t s = 2; s < 6; ++s) c.warm(1, prompt_of(s, 256));
  const Request r = request_of(extended(prefix, 40));
  // Loads within prefix_aware's bound (1.5 x the mean, the request's 362
  // tokens included) for every instance; instance 0 the least loaded.
  auto v = c.views(1000);
  v[0].outstanding_tokens = 900;
  EXPECT_EQ(c.caches[1]->lookup_prefix(TokenView::of(r.prompt, r.output, 0)).cached_tokens, 0);
  now = 3'500'000'000;
  events.advance_to(now);
  EXPECT_EQ(device_overlaps(events, r, v)[1], 320);  // stale: stored at 0 s, removed at 3 s
  EXPECT_EQ(router->pick(r, v), 1u);                 // sent where the prefix is gone
  events.advance_to(4'000'000'000);
  EXPECT_EQ(device_overlaps(events, r, v)[1], 0);
  EXPECT_EQ(router->pick(r, v), 0u);
  // Before the lag had passed the first store was not known either.
  auto late = make_prefix_index(index_config("events", {{"lag", int64_t{1'000'000'000}}}));
  Caches d;
  now = 0;
  d.listen(*late, &now);
  d.warm(2, prefix);
  late->advance_to(999'999'999);
  EXPECT_EQ(device_overlaps(*late, r, d.views())[2], 0);
  late->advance_to(1'000'000'000);
  EXPECT_EQ(device_overlaps(*late, r, d.views())[2], 320);
}

// The approximate index against the truth it approximates: for each
// instance, the longest prefix (in whole chunks) the prompt shares with a
// prompt routed there. With room for everything it reports exactly that;
// with a small LRU it forgets, but never reports more.
TEST(PrefixIndexes, ApproximateNeverReportsMoreThanThePromptsItRoutedShare) {
  for (const int64_t capacity : {int64_t{1} << 30, int64_t{12}}) {
    auto index = make_prefix_index(
        index_config("approximate", {{"block_size", int64_t{8}}, {"capacity", capacity}}));
    std::vector<std::vector<std::vector<int32_t>>> routed(3);
    std::vector<InstanceView> v(3);
    std::mt19937 rng(5);
    for (int k = 0; k < 300; ++k) {
      // Prompts from a few bases, cut at random lengths, some with a new tail.
      std::vector<int32_t> p = prompt_of(static_cast<int32_t>(rng() % 4), 8 + rng() % 120);
      if (rng() % 2) p = extended(p, rng() % 20);
      const Request r = request_of(p, static_cast<uint64_t>(k));
      const std::vector<int64_t> got = device_overlaps(*index, r, v);
      for (size_t i = 0; i < 3; ++i) {
        int64_t truth = 0;
        for (const auto& q : routed[i]) {
          const auto n = static_cast<int64_t>(std::min(p.size(), q.size()));
          int64_t lcp = 0;
          while (lcp < n && p[static_cast<size_t>(lcp)] == q[static_cast<size_t>(lcp)]) ++lcp;
          truth = std::max(truth, lcp / 8 * 8);
        }
        EXPECT_LE(got[i], truth) << "capacity " << capacity << " request " << k;
        if (capacity > 1000) {
          EXPECT_EQ(got[i], truth) << "request " << k;
        }
      }
      const size_t pick = rng() % 3;
      index->routed(r, pick);
      routed[pick].push_back(p);
    }
  }
}

// Dynamo's cost on a hand-built state: prompt 320 tokens = 20 blocks.
//   instance 0: overlap 0,  active 0:  w x 20 + 0  + 20
//   instance 1: overlap 16, active 30: w x 4  + 30 + 20
//   instance 2: overlap 8,  active 5:  w x 12 + 5  + 20
// w = 1: 40, 54, 37 -> 2;  w = 0.5: 30, 52, 31 -> 0;  w = 4: 100, 66, 73 -> 1.
TEST(Routers, KvCostPicksTheLeastOverlapWeightedPrefillPlusDecodeBlocks) {
  const auto prompt = prompt_of(4, 320);
  const Request r = request_of(prompt);
  std::vector<BlockHash> hashes;
  std::vector<int32_t> scratch(16);
  TokenView::of(r.prompt, r.output, 0).extend_block_hashes(hashes, 20, 16, scratch.data());
  auto pick_with = [&](double w) {
    config::ParamValues p = routing_policy_defaults("kv_cost");
    p.set("overlap_score_weight", w, true);
    auto router = make_routing_policy("kv_cost", p, index_config("events"), 1);
    PrefixIndex& ix = *router->prefix_index();
    ix.attach(3, 16);
    for (int b = 0; b < 16; ++b) ix.on_event(1, KvEventKind::stored, hashes[b], 0);
    for (int b = 0; b < 8; ++b) ix.on_event(2, KvEventKind::stored, hashes[b], 0);
    ix.advance_to(0);
    std::vector<InstanceView> v(3);
    for (auto& x : v) x.block_size = 16;
    v[1].outstanding_blocks = 30;
    v[2].outstanding_blocks = 5;
    return router->pick(r, v);
  };
  EXPECT_EQ(pick_with(1.0), 2u);
  EXPECT_EQ(pick_with(0.5), 0u);
  EXPECT_EQ(pick_with(4.0), 1u);
}

TEST(Routers, KvCostTemperatureSamplesReproduciblyPerSeed) {
  config::ParamValues p = routing_policy_defaults("kv_cost");
  p.set("temperature", 0.5, true);
  auto draws = [&](uint64_t seed) {
    auto router = make_routing_policy("kv_cost", p, index_config("exact"), seed);
    std::vector<InstanceView> v(4);
    for (size_t i = 0; i < 4; ++i) {
      v[i].block_size = 16;
      v[i].outstanding_blocks = static_cast<int64_t>(10 * i);
    }
    std::vector<size_t> picks;
    for (int k = 0; k < 400; ++k) picks.push_back(router->pick(request_of(prompt_of(k, 64)), v));
    return picks;
  };
  const auto a = draws(3);
  EXPECT_EQ(a, draws(3));
  EXPECT_NE(a, draws(4));
  std::vector<int> count(4);
  for (size_t i : a) ++count[i];
  // exp(-x / 0.5) over costs rescaled to 0, 1/3, 2/3, 1: weights 1, .51, .26, .14.
  EXPECT_GT(count[0], count[1]);
  EXPECT_GT(count[1], count[2]);
  EXPECT_GT(count[3], 0);
  // Temperature 0: always the cheapest.
  auto cold =
      make_routing_policy("kv_cost", routing_policy_defaults("kv_cost"), index_config("exact"), 3);
  std::vector<InstanceView> v(4);
  for (size_t i = 0; i < 4; ++i) {
    v[i].block_size = 16;
    v[i].outstanding_blocks = static_cast<int64_t>(40 - 10 * i);
  }
  EXPECT_EQ(cold->pick(request_of(prompt_of(1, 64)), v), 3u);
}

// Scorers in [0, 1], weighted: prefix share, queue depth, KV utilisation.
TEST(Routers, WeightedSumsItsScorers) {
  const auto prompt = prompt_of(6, 160);
  const Request r = request_of(prompt);
  std::vector<BlockHash> hashes;
  std::vector<int32_t> scratch(16);
  TokenView::of(r.prompt, r.output, 0).extend_block_hashes(hashes, 10, 16, scratch.data());
  auto pick_with = [&](double prefix, double queue, double kv) {
    config::ParamValues p = routing_policy_defaults("weighted");
    p.set("prefix_weight", prefix, true);
    p.set("queue_weight", queue, true);
    p.set("kv_utilization_weight", kv, true);
    auto router = make_routing_policy("weighted", p, index_config("events"), 1);
    PrefixIndex& ix = *router->prefix_index();
    ix.attach(3, 16);
    for (int b = 0; b < 9; ++b) ix.on_event(0, KvEventKind::stored, hashes[b], 0);
    ix.advance_to(0);
    std::vector<InstanceView> v(3);
    for (auto& x : v) x.block_size = 16;
    v[0].outstanding_requests = 8;  // holds 144 of 160 tokens, busiest queue
    v[0].kv_utilization = 0.9;
    v[1].outstanding_requests = 0;  // idle queue, fullest pool
    v[1].kv_utilization = 0.95;
    v[2].outstanding_requests = 4;  // emptiest pool
    v[2].kv_utilization = 0.1;
    return router->pick(r, v);
  };
  EXPECT_EQ(pick_with(1, 0, 0), 0u);
  EXPECT_EQ(pick_with(0, 1, 0), 1u);
  EXPECT_EQ(pick_with(0, 0, 1), 2u);
  // Defaults 3, 2, 2: 0 scores 3 x .9 + 0 + 2 x .1 = 2.9; 1: 0 + 2 + .1 = 2.1;
  // 2: 0 + 1 + 1.8 = 2.8.
  EXPECT_EQ(pick_with(3, 2, 2), 0u);
}

TEST(Routers, SessionAffinitySendsASubAgentWhereItsRootSessionGoes) {
  auto sa = make_routing_policy("session_affinity", routing_policy_defaults("session_affinity"));
  config::ParamValues own = routing_policy_defaults("session_affinity");
  own.set("follow_parent", false, true);
  auto alone = make_routing_policy("session_affinity", own);
  std::vector<InstanceView> v(8);
  auto call = [](uint64_t session, uint64_t parent, bool continues) {
    Request r = request_of({1, 2, 3});
    r.session = session;
    r.parent_session = parent;
    r.session_continues = continues;
    return r;
  };
  const size_t root = sa->pick(call(100, 0, true), v);
  // A child (session 200 of parent 100) and a grandchild (300 of 200).
  size_t differs = 0;
  for (uint64_t child = 200; child < 216; ++child) {
    EXPECT_EQ(sa->pick(call(child, 100, true), v), root);
    EXPECT_EQ(sa->pick(call(child + 1000, child, false), v), root);  // grandchild, last call
    EXPECT_EQ(sa->pick(call(child, 100, false), v), root);           // child's last call
    differs += alone->pick(call(child, 100, true), v) != root ? 1 : 0;
  }
  EXPECT_GT(differs, 0u);  // on their own ids the sub-agents scatter
}

std::string load_error(const std::string& yaml) {
  try {
    scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

std::string with(const std::string& extra) {
  return std::string(kBase) + extra;
}

TEST(RoutingConfig, BadIndexesAndWeightsNameTheirKey) {
  const std::string kind =
      load_error(with("cluster: {router: {policy: kv_cost, index: {kind: exakt}}, groups: {a: "
                      "{count: 2}}}\n"));
  EXPECT_NE(kind.find("cluster.router.index.kind"), std::string::npos) << kind;
  EXPECT_NE(kind.find("approximate, events, exact"), std::string::npos) << kind;
  const std::string lag = load_error(
      with("cluster: {router: {policy: kv_cost, index: {kind: events, lag: -5ms}}, groups: {a: "
           "{count: 2}}}\n"));
  EXPECT_NE(lag.find("cluster.router.index.lag"), std::string::npos) << lag;
  const std::string weight = load_error(
      with("cluster: {router: {policy: weighted, queue_weight: 101}, groups: {a: {count: 2}}}\n"));
  EXPECT_NE(weight.find("cluster.router.queue_weight"), std::string::npos) << weight;
  const std::string credit = load_error(
      with("cluster: {router: {policy: kv_cost, host_cache_hit_weight: 1.5}, groups: {a: {}}}\n"));
  EXPECT_NE(credit.find("cluster.router.host_cache_hit_weight"), std::string::npos) << credit;
  const std::string foreign = load_error(
      with("cluster: {router: {policy: round_robin, index: {kind: events}}, groups: {a: {}}}\n"));
  EXPECT_NE(foreign.find("not a parameter of router 'round_robin'"), std::string::npos) << foreign;
  const std::string index_key = load_error(
      with("cluster: {router: {policy: kv_cost, index: {kind: exact, lag: 1ms}}, groups: {a: "
           "{}}}\n"));
  EXPECT_NE(index_key.find("lag"), std::string::npos) << index_key;
  EXPECT_NE(index_key.find("events"), std::string::npos) << index_key;  // whose key it is
}

// Whole runs: every router and index kind serves the workload with every
// block back in its pool; an explicit `index: {kind: exact}` is the
// default's run to the byte.
TEST(RoutingRuns, EveryRouterAndIndexServesTheWorkload) {
  const std::string groups = "  groups: {replica: {count: 3}}\n";
  auto run = [&](const std::string& router) {
    return run_scenario(scenario_from_text(with("cluster:\n  router: " + router + "\n" + groups)),
                        nullptr)
        .metrics;
  };
  const RunMetrics plain = run("{policy: prefix_aware}");
  const RunMetrics exact = run("{policy: prefix_aware, index: {kind: exact}}");
  EXPECT_EQ(plain.requests.completed, 60);
  EXPECT_EQ(plain.sim.simulated_s, exact.sim.simulated_s);
  EXPECT_EQ(testing::pool_of(plain).prefix_hit_rate, testing::pool_of(exact).prefix_hit_rate);
  for (const char* r :
       {"{policy: prefix_aware, index: {kind: events, lag: 20ms}}",
        "{policy: prefix_aware, index: {kind: approximate}}",
        "{policy: kv_cost, index: {kind: events, lag: 5ms}}",
        "{policy: kv_cost, temperature: 0.3, index: {kind: approximate}}",
        "{policy: weighted, index: {kind: events}}", "{policy: session_affinity}"}) {
    const RunMetrics m = run(r);
    EXPECT_EQ(m.requests.completed, 60) << r;
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
