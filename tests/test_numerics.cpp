// The numerics checker (SPEC 8): scenario keys, a full run on the paged
// policy with prefix hits and swap, sampled mode, and fault injection (a
// corrupted block-table entry, a prefix block whose content differs, a lost
// swap copy) that must fail naming the request and step, in `full` and in
// `sampled`.
#include <gtest/gtest.h>

#include <numeric>
#include <thread>
#include <tuple>

#include "base/diagnostics.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/numerics/numerics_checker.hpp"
#include "sim/numerics/numerics_observer.hpp"
#include "sim/numerics/sampled_numerics_checker.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/metric_parts.hpp"
#include "workloads/rng.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using numerics::CheckerParams;
using numerics::NumericsChecker;
using numerics::SampledNumericsChecker;

const char* kSmallScenario = R"(
name: numerics-small
seed: 3
device: ascend-910b2
model: llama-3-8b
kv_cache: {policy: paged, dtype: DTYPE, block_size: 16, memory_fraction: FRACTION, prefix_caching: true, preemption: swap, swap_space: 1GiB}
scheduler: {max_num_seqs: 16, max_batched_tokens: 1024}
workload:
  kind: synthetic
  requests: 16
  arrival: {process: poisson, rate_per_s: 400}
  input_tokens: {dist: uniform, min: 32, max: 200}
  output_tokens: {dist: uniform, min: 8, max: 128}
  shared_prefix: {groups: 2, tokens: 64, popularity: uniform}
numerics: {mode: MODE, sample_every: 8}
)";

std::string small_scenario(const std::string& mode, const std::string& dtype) {
  std::string s = kSmallScenario;
  s.replace(s.find("MODE"), 4, mode);
  s.replace(s.find("DTYPE"), 5, dtype);
  // A pool of about 135 blocks whatever the dtype (84 for fp32), so requests
  // are preempted and swapped.
  const bool fp8 = dtype.rfind("fp8", 0) == 0;
  const bool one_byte = dtype == "int8" || fp8;
  // fp8 KV needs a part with fp8 (devices/device_formats.hpp): the H100's
  // 80 GB, at the fraction that leaves the 910B2's 64 GiB pool.
  const std::string fraction = fp8               ? "0.2039"
                               : one_byte        ? "0.2374"
                               : dtype == "fp32" ? "0.2405"
                                                 : "0.2395";
  s.replace(s.find("FRACTION"), 8, fraction);
  if (fp8) s.replace(s.find("ascend-910b2"), 12, "h100-sxm5");
  return s;
}

TEST(NumericsScenario, KeysParseAndBadShadowIsAnError) {
  const ScenarioSpec s = testing::scenario_from_text(small_scenario("full", "fp16"));
  EXPECT_EQ(s.numerics.mode, "full");
  EXPECT_EQ(s.numerics.sample_every, 8);
  EXPECT_EQ(s.numerics.shadow_head_dim, 16);
  std::string bad = small_scenario("full", "fp16");
  bad.replace(bad.find("sample_every: 8"), 15, "shadow: {head_dim: 7, layer: 1}");
  try {
    testing::scenario_from_text(bad);
    FAIL() << "expected a config error";
  } catch (const config::ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("numerics.shadow.layer"), std::string::npos) << msg;  // unknown key
  }
  bad = small_scenario("full", "fp16");
  bad.replace(bad.find("sample_every: 8"), 15, "shadow: {head_dim: 7}");
  EXPECT_THROW(testing::scenario_from_text(bad), config::ConfigError);  // odd head_dim
}

class NumericsRun : public ::testing::TestWithParam<std::string> {};

TEST_P(NumericsRun, FullModeChecksEveryStepWithPrefixHitsAndSwap) {
  const ScenarioSpec s = testing::scenario_from_text(small_scenario("full", GetParam()));
  ServingEngine engine(s, nullptr, make_numerics_observer);
  const RunMetrics m = engine.run();
  EXPECT_EQ(m.requests.completed, 16);
  EXPECT_GT(m.numerics.checks, 100);
  EXPECT_LE(m.numerics.max_abs_err, 1e-4);
  EXPECT_GT(testing::pool_of(m).prefix_hit_rate, 0.0);
  EXPECT_GT(testing::pool_of(m).swapped_bytes, 0) << "the scenario should swap";
}

// fp8 rows (one scale per token and head, as int8's parameters) go through
// the same store, swap and attention path, their error reported like int8's.
INSTANTIATE_TEST_SUITE_P(Dtypes, NumericsRun,
                         ::testing::Values("fp16", "bf16", "int8", "fp32", "fp8_e4m3", "fp8_e5m2"));

// fp8 with one scale per layer's K and V (kv_scale: per_tensor): the shadow
// pool and the reference store every row with the tensor's calibrated scale,
// through the same store, swap and attention path. A per-tensor scale on a
// dtype without one is an error at the key.
TEST(NumericsScenario, Fp8PerTensorScaleRunsTheFullCheck) {
  // One run (e4m3); e5m2 takes the same path with its own scale.
  for (const char* dtype : {"fp8_e4m3"}) {
    std::string text = small_scenario("full", dtype);
    text.replace(text.find("block_size: 16"), 14, "block_size: 16, kv_scale: per_tensor");
    const ScenarioSpec s = testing::scenario_from_text(text);
    EXPECT_EQ(s.kv.kv_scale, "per_tensor");
    const CheckerParams p = numerics::checker_params(s, s.pool_sizing());
    EXPECT_GT(p.fp8_tensor_scale, 0.0f) << dtype;
    ServingEngine engine(s, nullptr, make_numerics_observer);
    const RunMetrics m = engine.run();
    EXPECT_EQ(m.requests.completed, 16) << dtype;
    EXPECT_GT(m.numerics.checks, 100) << dtype;
    EXPECT_LE(m.numerics.max_abs_err, 1e-4) << dtype;
    EXPECT_GT(testing::pool_of(m).swapped_bytes, 0) << dtype;
  }
  std::string bad = small_scenario("off", "int8");
  bad.replace(bad.find("block_size: 16"), 14, "block_size: 16, kv_scale: per_tensor");
  try {
    testing::scenario_from_text(bad);
    FAIL() << "per_tensor accepted on int8";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_cache.kv_scale"), std::string::npos) << e.what();
  }
}

// vLLM's engine argument kv_cache_dtype, at the top level as in vLLM's flat
// argument list, sets kv_cache.dtype; `fp8` is e4m3 there. Both given is an
// error at the alias.
TEST(NumericsScenario, VllmKvCacheDtypeIsAnAliasOfKvCacheDtype) {
  std::string text = small_scenario("off", "fp16");
  text.replace(text.find("dtype: fp16, "), 13, "");
  text.replace(text.find("ascend-910b2"), 12, "h100-sxm5");  // a part with fp8
  text += "kv_cache_dtype: fp8\n";
  const ScenarioSpec s = testing::scenario_from_text(text);
  EXPECT_EQ(s.kv.dtype, "fp8");
  EXPECT_EQ(s.pool_input().kv_dtype_bytes, 1);
  try {
    testing::scenario_from_text(small_scenario("off", "fp16") + "kv_cache_dtype: fp8\n");
    FAIL() << "two dtypes accepted";
  } catch (const config::ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("kv_cache_dtype"), std::string::npos) << msg;
  }
}

TEST(NumericsRun, SampledModeChecksFewerStepsAndOffChecksNone) {
  auto run = [](const char* mode) {
    const ScenarioSpec scenario = testing::scenario_from_text(small_scenario(mode, "fp16"));
    return ServingEngine(scenario, nullptr, make_numerics_observer).run();
  };
  const RunMetrics full = run("full");
  const RunMetrics sampled = run("sampled");
  const RunMetrics off = run("off");
  EXPECT_GT(sampled.numerics.checks, 0);
  EXPECT_LT(sampled.numerics.checks * 4, full.numerics.checks);
  EXPECT_EQ(off.numerics.checks, 0);
  // The checker observes; it never changes the run.
  EXPECT_EQ(full.latency_ms.ttft.p50, off.latency_ms.ttft.p50);
  EXPECT_EQ(sampled.latency_ms.ttft.p50, off.latency_ms.ttft.p50);
}

// The same sampled run gives the same checks and error alone or beside
// another run on another thread (the checker keeps no shared state).
TEST(NumericsRun, SampledModeIsTheSameOnAnyThread) {
  const ScenarioSpec s = testing::scenario_from_text(small_scenario("sampled", "fp16"));
  const RunMetrics alone = ServingEngine(s, nullptr, make_numerics_observer).run();
  RunMetrics side[2];
  std::thread a([&] { side[0] = ServingEngine(s, nullptr, make_numerics_observer).run(); });
  std::thread b([&] { side[1] = ServingEngine(s, nullptr, make_numerics_observer).run(); });
  a.join();
  b.join();
  for (const RunMetrics& m : side) {
    EXPECT_EQ(m.numerics.checks, alone.numerics.checks);
    EXPECT_EQ(m.numerics.max_abs_err, alone.numerics.max_abs_err);
  }
  EXPECT_GT(alone.numerics.checks, 0);
  EXPECT_LE(alone.numerics.max_abs_err, 1e-4);
}

// ---- fault injection: drive the policy as the engine does ----

CheckerParams small_params() {
  CheckerParams p;
  p.num_blocks = 16;
  p.block_size = 4;
  p.dtype = kernels::KvDtype::fp16;
  return p;
}

// `sampled`: follows the requests whose id is a multiple of `every`.
CheckerParams sampled_params(int64_t every) {
  CheckerParams p = small_params();
  p.every_step = false;
  p.sample_every = every;
  p.sample_sequences = true;
  return p;
}

struct Driver {
  explicit Driver(int64_t block_size = 4) : policy(PagedParams{16, block_size, 1, true, 16}) {}
  PagedPolicy policy;
  std::vector<std::unique_ptr<Sequence>> seqs;

  Sequence* add(uint64_t id, std::vector<int32_t> prompt) {
    auto seq = std::make_unique<Sequence>();
    seq->request.id = id;
    seq->request.prompt = std::move(prompt);
    seq->request.output = std::vector<int32_t>{7, 8, 9, 10};
    seqs.push_back(std::move(seq));
    return seqs.back().get();
  }
  // Admits with a real prefix lookup, or with `forced_hit` blocks (a wrong hash).
  void admit(Sequence* s, const std::vector<BlockId>* forced_hit = nullptr) {
    PrefixHit hit = policy.lookup_prefix(s->tokens());
    if (forced_hit) {
      hit.blocks = *forced_hit;
      hit.cached_tokens = static_cast<int64_t>(forced_hit->size()) * 4;
    }
    const AdmitPlan plan = policy.plan_admit(hit, s->prompt_len() - hit.cached_tokens);
    s->slot = policy.apply_admit(plan);
    s->computed = hit.cached_tokens;
    s->state = SeqState::running;
  }
  // One engine step over `batch_seqs`: prefill what is left, or one decode.
  void step(StepObserver& checker, const std::vector<Sequence*>& batch_seqs) {
    ScheduledBatch batch;
    for (Sequence* s : batch_seqs) {
      int64_t n = s->remaining();
      if (n == 0) {  // decode: room for the token sampled last step
        ++s->generated;
        const GrowPlan g = policy.plan_grow(s->slot, 1);
        policy.apply_grow(s->slot, g, 1);
        n = 1;
      }
      batch.items.push_back({s, n});
    }
    for (auto& item : batch.items) {
      item.seq->computed += item.tokens;
      policy.commit(item.seq->slot, item.seq->tokens(), item.seq->computed);
    }
    checker.on_step_done(batch, policy, 0);
  }
};

std::vector<int32_t> iota_tokens(int32_t first, int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(NumericsFaults, CorrectPrefixHitPassesAndMatchesRecompute) {
  Driver d;
  NumericsChecker checker(small_params());
  Sequence* a = d.add(1, iota_tokens(100, 10));
  d.admit(a);
  d.step(checker, {a});
  Sequence* b = d.add(2, iota_tokens(100, 10));  // same content: hits a's two full blocks
  d.admit(b);
  EXPECT_EQ(b->computed, 8);
  d.step(checker, {a, b});
  d.step(checker, {a, b});
  EXPECT_EQ(checker.checks(), 5u);
  EXPECT_LE(checker.max_abs_err(), 1e-5);
}

TEST(NumericsFaults, PrefixBlockWithDifferentContentFailsNamingRequestAndStep) {
  Driver d;
  NumericsChecker checker(small_params());
  Sequence* a = d.add(1, iota_tokens(100, 10));
  d.admit(a);
  d.step(checker, {a});
  Sequence* b = d.add(2, iota_tokens(300, 10));  // different content...
  const std::vector<BlockId> wrong{d.policy.block_table(a->slot)[0]};
  d.admit(b, &wrong);  // ...served a's first block as if its hash matched
  try {
    d.step(checker, {a, b});
    FAIL() << "the stale prefix block went unnoticed";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("request 2 at step 2"), std::string::npos) << msg;
  }
}

// A checker that reads a corrupted block table for one request from one step on.
class CorruptingChecker : public NumericsChecker {
 public:
  CorruptingChecker(uint64_t request, uint64_t from_step)
      : NumericsChecker(small_params()), request_(request), from_step_(from_step) {}

 protected:
  std::vector<int32_t> block_table_of(const Sequence& seq,
                                      const KvCachePolicy& policy) const override {
    auto t = NumericsChecker::block_table_of(seq, policy);
    ++calls_;
    if (seq.request.id == request_ && calls_ >= from_step_)
      t[0] = (t[0] + 5) % 16;  // one entry off
    return t;
  }

 private:
  uint64_t request_, from_step_;
  mutable uint64_t calls_ = 0;
};

TEST(NumericsFaults, SampledFollowsARequestThroughBlocksAnotherRequestWrote) {
  Driver d;
  SampledNumericsChecker checker(sampled_params(2));  // follows request 2, not 1
  Sequence* a = d.add(1, iota_tokens(100, 10));
  d.admit(a);
  d.step(checker, {a});
  EXPECT_EQ(checker.checks(), 0u);
  Sequence* b = d.add(2, iota_tokens(100, 10));  // hits the two blocks request 1 filled
  d.admit(b);
  EXPECT_EQ(b->computed, 8);
  d.step(checker, {a, b});  // its first step: checked (it reads the hits)
  d.step(checker, {a, b});  // 11 tokens: inside its third block, not checked
  d.step(checker, {a, b});  // 12: the third block fills, checked
  EXPECT_EQ(checker.checks(), 2u);
  EXPECT_LE(checker.max_abs_err(), 1e-5);
}

TEST(NumericsFaults, SampledCatchesAStalePrefixBlockAnUnfollowedRequestWrote) {
  Driver d;
  SampledNumericsChecker checker(sampled_params(2));
  Sequence* a = d.add(1, iota_tokens(100, 10));
  d.admit(a);
  d.step(checker, {a});
  Sequence* b = d.add(2, iota_tokens(300, 10));
  const std::vector<BlockId> wrong{d.policy.block_table(a->slot)[0]};
  d.admit(b, &wrong);
  try {
    d.step(checker, {a, b});
    FAIL() << "the stale prefix block went unnoticed";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("request 2 at step 2"), std::string::npos) << msg;
  }
}

// A checker whose swap-in copy of one block of one request never arrives:
// the third, the partly filled one (the two full ones are revived by hash,
// their content never left the device).
template <class Checker>
class LosingChecker : public Checker {
 public:
  LosingChecker(const CheckerParams& params, uint64_t request)
      : Checker(params), request_(request) {}

 protected:
  bool swap_copy_arrives(const Sequence& seq, size_t index) const override {
    return !(seq.request.id == request_ && index == 2);
  }

 private:
  uint64_t request_;
};

// Prefills request 4 (two full blocks and one token), swaps it out and back
// in, then decodes: the decode reads the swapped-in blocks.
void swap_round_trip(Driver& d, StepObserver& checker) {
  Sequence* a = d.add(4, iota_tokens(60, 9));
  d.admit(a);
  d.step(checker, {a});
  ScheduledBatch out;
  out.preempted.push_back(a);
  a->host = d.policy.apply_swap_out(a->slot, d.policy.plan_swap_out(a->slot));
  a->slot = kNoSeq;
  a->state = SeqState::swapped;
  checker.on_step_done(out, d.policy, 0);
  // Another request takes the freed blocks, so what they held is overwritten.
  Sequence* other = d.add(5, iota_tokens(900, 12));
  d.admit(other);
  d.step(checker, {other});
  const SwapPlan in = d.policy.plan_swap_in(a->host);
  a->slot = d.policy.apply_swap_in(a->host, in);
  a->state = SeqState::running;
  ScheduledBatch back;
  back.swapped_in.push_back(a);
  ++a->generated;
  d.policy.apply_grow(a->slot, d.policy.plan_grow(a->slot, 1), 1);
  back.items.push_back({a, 1});
  a->computed += 1;
  checker.on_step_done(back, d.policy, 0);
}

TEST(NumericsFaults, SwapRoundTripPassesFullAndSampled) {
  {
    Driver d;
    NumericsChecker checker(small_params());
    swap_round_trip(d, checker);
    EXPECT_GT(checker.checks(), 0u);
    EXPECT_LE(checker.max_abs_err(), 1e-5);
  }
  Driver d;
  SampledNumericsChecker checker(sampled_params(4));
  swap_round_trip(d, checker);
  EXPECT_GT(checker.checks(), 0u);
  EXPECT_LE(checker.max_abs_err(), 1e-5);
}

template <class Checker>
void expect_lost_copy_caught(const CheckerParams& p) {
  Driver d;
  LosingChecker<Checker> checker(p, 4);
  try {
    swap_round_trip(d, checker);
    FAIL() << "a lost swap copy went unnoticed";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("request 4"), std::string::npos) << msg;
  }
}

TEST(NumericsFaults, LostSwapCopyFailsFullAndSampled) {
  expect_lost_copy_caught<NumericsChecker>(small_params());
  expect_lost_copy_caught<SampledNumericsChecker>(sampled_params(4));
}

TEST(NumericsFaults, CorruptedBlockTableEntryFailsNamingRequestAndStep) {
  Driver d;
  CorruptingChecker checker(/*request=*/7, /*from_step=*/3);
  Sequence* a = d.add(7, iota_tokens(50, 9));
  d.admit(a);
  d.step(checker, {a});  // prefill, table right
  d.step(checker, {a});  // decode, table right
  try {
    d.step(checker, {a});
    FAIL() << "a corrupted block table went unnoticed";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("request 7 at step 3"), std::string::npos) << msg;
  }
}

// Sampled: reads a corrupted table for one request from its `from`-th table
// read on, entry `entry` one block off.
class CorruptingSampledChecker : public SampledNumericsChecker {
 public:
  CorruptingSampledChecker(const CheckerParams& params, uint64_t request, uint64_t from,
                           size_t entry)
      : SampledNumericsChecker(params), request_(request), from_(from), entry_(entry) {}

 protected:
  std::span<const int32_t> block_table_of(const Sequence& seq, const KvCachePolicy& policy,
                                          std::vector<int32_t>& scratch) const override {
    const std::span<const int32_t> t = SampledNumericsChecker::block_table_of(seq, policy, scratch);
    if (seq.request.id != request_ || ++calls_ < from_ || t.size() <= entry_) return t;
    scratch.assign(t.begin(), t.end());
    scratch[entry_] = (scratch[entry_] + 5) % 16;
    return scratch;
  }

 private:
  uint64_t request_, from_;
  size_t entry_;
  mutable uint64_t calls_ = 0;
};

// A followed request's table goes wrong after two good steps: caught at its
// next check (the step that fills a block), naming the request and step.
TEST(NumericsFaults, SampledCatchesACorruptedBlockTableEntry) {
  Driver d;
  CorruptingSampledChecker checker(sampled_params(2), /*request=*/8, /*from=*/3, /*entry=*/0);
  Sequence* a = d.add(8, iota_tokens(50, 9));
  d.admit(a);
  d.step(checker, {a});  // prefill, checked, table right
  d.step(checker, {a});  // decode to 10 tokens, table right
  try {
    d.step(checker, {a});  // 11: the table goes wrong (no check due)
    d.step(checker, {a});  // 12: the third block fills, checked
    FAIL() << "a corrupted block table went unnoticed";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("request 8 at step 4"), std::string::npos) << msg;
  }
}

// The fault sits where only a shared prefix reaches it: an unfollowed
// request writes its second block through a wrong table entry, so the block
// the policy registers for that content never receives it. The followed
// request that hits that prefix reads the block and fails, although nobody
// followed the writer.
TEST(NumericsFaults, SampledCatchesABadBlockOfAnUnfollowedWritersSharedPrefix) {
  Driver d;
  CorruptingSampledChecker checker(sampled_params(2), /*request=*/1, /*from=*/1, /*entry=*/1);
  Sequence* a = d.add(1, iota_tokens(100, 10));
  d.admit(a);
  d.step(checker, {a});  // fills blocks 0 and 1 (block 1 to the wrong place)
  Sequence* b = d.add(2, iota_tokens(100, 10));  // a real prefix hit on both
  d.admit(b);
  ASSERT_EQ(b->computed, 8);
  try {
    d.step(checker, {a, b});
    FAIL() << "a bad block behind a shared prefix went unnoticed";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("request 2 at step 2"), std::string::npos) << msg;
  }
}

// Without the fault the same sharing passes, and a correct prefix written by
// an unfollowed request is rebuilt in the shadow from its record.
TEST(NumericsFaults, SampledPassesACorrectPrefixOfAnUnfollowedWriter) {
  Driver d;
  SampledNumericsChecker checker(sampled_params(2));
  Sequence* a = d.add(1, iota_tokens(100, 10));
  d.admit(a);
  d.step(checker, {a});
  Sequence* b = d.add(2, iota_tokens(100, 10));
  d.admit(b);
  d.step(checker, {a, b});
  EXPECT_EQ(checker.checks(), 1u);
  EXPECT_LE(checker.max_abs_err(), 1e-5);
}

// A block the kernel confirmed for one followed request is not read again
// by the next that holds the same content there, but one served in place
// of different content still is, and fails.
TEST(NumericsFaults, SampledSkipsConfirmedBlocksButCatchesThemServedForOtherContent) {
  Driver d;
  SampledNumericsChecker checker(sampled_params(2));
  Sequence* a = d.add(2, iota_tokens(100, 10));
  d.admit(a);
  d.step(checker, {a});  // checked: its two full blocks and the partial one
  EXPECT_EQ(checker.checked_tokens(), 10u);
  Sequence* b = d.add(4, iota_tokens(100, 10));  // the same content: hits both
  d.admit(b);
  ASSERT_EQ(b->computed, 8);
  d.step(checker, {b});  // reads only its own partial block
  EXPECT_EQ(checker.checks(), 2u);
  EXPECT_EQ(checker.checked_tokens(), 12u);
  EXPECT_LE(checker.max_abs_err(), 1e-5);
  Sequence* c = d.add(6, iota_tokens(300, 10));
  const std::vector<BlockId> wrong{d.policy.block_table(a->slot)[0]};
  d.admit(c, &wrong);  // a's confirmed first block, served as if its hash matched
  try {
    d.step(checker, {c});
    FAIL() << "a confirmed block served for other content went unnoticed";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("request 6 at step 3"), std::string::npos) << msg;
  }
}

// A followed request that fills block after block holds shadow slots for
// its partly filled block and the block being checked, not for every block
// it filled: a confirmed block's rows are rebuilt from its record when read.
TEST(NumericsRun, SampledShadowHoldsOnlyTheBlocksBeingWrittenAndChecked) {
  Driver d;
  SampledNumericsChecker checker(sampled_params(2));
  Sequence* a = d.add(2, iota_tokens(100, 6));
  a->request.output = iota_tokens(500, 30);
  d.admit(a);
  while (a->generated + 1 < a->output_len()) d.step(checker, {a});
  EXPECT_EQ(a->computed, 35);  // eight full blocks and three tokens
  EXPECT_EQ(checker.checks(), 9u);
  EXPECT_LE(checker.shadow_slots(), 2);
  EXPECT_LE(checker.max_abs_err(), 1e-5);
  // The same content served again through its confirmed (dropped) blocks
  // passes; served for other content, a rebuilt block still fails.
  std::vector<int32_t> same = iota_tokens(100, 6);
  for (int64_t i = 0; i < a->generated; ++i) same.push_back(500 + static_cast<int32_t>(i));
  Sequence* b = d.add(4, same);
  d.admit(b);
  ASSERT_EQ(b->computed, 32);
  d.step(checker, {b});
  EXPECT_LE(checker.max_abs_err(), 1e-5);
  Sequence* c = d.add(6, iota_tokens(300, 10));
  const std::vector<BlockId> wrong{d.policy.block_table(a->slot)[1]};
  d.admit(c, &wrong);
  EXPECT_THROW(d.step(checker, {c}), std::runtime_error);
}

// Blocks of 64: a followed request's rows are made and stored 32 tokens at
// a time but folded a layer at a time, and what the kernel reads through
// the table still matches the reference, for every way of storing them.
TEST(NumericsRun, SampledChecksRowsStoredInRunsShorterThanABlock) {
  for (kernels::KvDtype dtype :
       {kernels::KvDtype::fp16, kernels::KvDtype::bf16, kernels::KvDtype::int8}) {
    CheckerParams p = sampled_params(2);
    p.block_size = 64;
    p.dtype = dtype;
    Driver d(64);
    SampledNumericsChecker checker(p);
    Sequence* a = d.add(2, iota_tokens(100, 150));  // two full blocks and 22 tokens
    d.admit(a);
    d.step(checker, {a});
    EXPECT_EQ(checker.checks(), 1u);
    EXPECT_EQ(checker.checked_tokens(), 150u);
    for (int i = 0; i < 3; ++i) d.step(checker, {a});
    EXPECT_LE(checker.max_abs_err(), 1e-5) << static_cast<int>(dtype);
  }
}

// The batched rows are the per-token rows, bit for bit, for every way of
// drawing values, with and without the cached RoPE angles.
TEST(NumericsSynthetic, BatchedRowsAreThePerTokenRows) {
  const std::vector<int32_t> tokens{7, 0, -3, 123456, 42, 42, 9};
  for (int per_hash : {1, 2, 4}) {
    for (auto [d, heads, style] :
         {std::tuple{int64_t{16}, int64_t{3}, kernels::RopeStyle::rotate_half},
          std::tuple{int64_t{10}, int64_t{3}, kernels::RopeStyle::rotate_half},
          std::tuple{int64_t{16}, int64_t{2}, kernels::RopeStyle::rotate_half},
          std::tuple{int64_t{16}, int64_t{4}, kernels::RopeStyle::adjacent_pairs}}) {
      numerics::SyntheticShape sh;
      sh.kv_heads = heads;
      sh.head_dim = d;
      sh.rope_style = style;
      sh.values_per_hash = per_hash;
      kernels::RopeTable rope(d, sh.rope_theta, sh.rope_style);
      const int64_t row = sh.kv_heads * d, n = static_cast<int64_t>(tokens.size());
      std::vector<float> k(static_cast<size_t>(n * row)), v(k.size());
      numerics::synthetic_kv_rows(sh, tokens.data(), n, 100, 1, k.data(), v.data(), &rope);
      std::vector<float> k1(k.size()), v1(k.size());
      numerics::synthetic_kv_rows(sh, tokens.data(), n, 100, 1, k1.data(), v1.data());
      for (int64_t t = 0; t < n; ++t) {
        std::vector<float> want(static_cast<size_t>(row));
        numerics::synthetic_rows(sh, numerics::Tensor::key, tokens[static_cast<size_t>(t)], 100 + t,
                                 1, want.data());
        for (int64_t i = 0; i < row; ++i) {
          EXPECT_EQ(k[static_cast<size_t>(t * row + i)], want[static_cast<size_t>(i)]);
          EXPECT_EQ(k1[static_cast<size_t>(t * row + i)], want[static_cast<size_t>(i)]);
        }
        numerics::synthetic_rows(sh, numerics::Tensor::value, tokens[static_cast<size_t>(t)],
                                 100 + t, 1, want.data());
        for (int64_t i = 0; i < row; ++i) {
          EXPECT_EQ(v[static_cast<size_t>(t * row + i)], want[static_cast<size_t>(i)]);
          EXPECT_EQ(v1[static_cast<size_t>(t * row + i)], want[static_cast<size_t>(i)]);
        }
      }
    }
  }
}

// Two values per hash: value 2i and 2i + 1 of a row are the low and high 16
// bits of lowbias32 of lane i's input, scaled to [-1, 1), written out here
// from the formula (values carry no RoPE), so the vectorised path is held
// to it and not to itself.
TEST(NumericsSynthetic, PairedValuesFollowTheirFormula) {
  auto lowbias32 = [](uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
  };
  for (int64_t d : {16, 32, 10}) {
    numerics::SyntheticShape sh;
    sh.kv_heads = 2;
    sh.head_dim = d;
    sh.values_per_hash = 2;
    std::vector<float> row(static_cast<size_t>(sh.kv_heads * d));
    for (int32_t token : {0, 7, -3, 123456}) {
      for (int64_t layer : {0, 1}) {
        numerics::synthetic_rows(sh, numerics::Tensor::value, token, 5, layer, row.data());
        for (int64_t h = 0; h < sh.kv_heads; ++h) {
          const uint64_t seed =
              mix64((static_cast<uint64_t>(static_cast<uint32_t>(token)) << 20) ^
                    (static_cast<uint64_t>(layer) << 12) ^ (static_cast<uint64_t>(h) << 4) ^ 3);
          const auto lo = static_cast<uint32_t>(seed), hi = static_cast<uint32_t>(seed >> 32);
          for (int64_t c = 0; c < d; ++c) {
            const uint32_t r = lowbias32((lo + static_cast<uint32_t>(c / 2) * 0x9E3779B9U) ^ hi);
            const uint32_t bits = c % 2 == 0 ? r & 0xFFFF : r >> 16;
            const float want = static_cast<float>(bits) / 32768.0f - 1.0f;
            EXPECT_EQ(row[static_cast<size_t>(h * d + c)], want)
                << token << " " << layer << " " << c;
          }
        }
      }
    }
  }
}

// A chat session is sampled whole, by its id; other requests by theirs.
TEST(NumericsRun, SampledFollowsChatSessionsWhole) {
  SampledNumericsChecker checker(sampled_params(4));
  Sequence turn;
  turn.request.session = 8;
  for (uint64_t id : {1, 2, 3}) {
    turn.request.id = id;
    EXPECT_TRUE(checker.follows(turn)) << id;
  }
  turn.request.session = 3;
  turn.request.id = 4;
  EXPECT_FALSE(checker.follows(turn));
  Sequence single;
  single.request.id = 4;
  EXPECT_TRUE(checker.follows(single));
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
