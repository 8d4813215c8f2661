// Genie's on-device update modes (seed 002) against the closed forms written
// next to each policy: bytes moved per AR-1 decode step, SMART_MASK's
// attention span that does not depend on n_past, SHIFT_CONCAT's cost that
// grows with the cache while POINTER_SHIFT's stays flat until a compaction,
// rewinds, variant switches, sliding-window evictions, buffer bytes equal to
// genie_buffer_bytes(), and the sliding window over paged freeing blocks.
// The expected figures here are computed from the formulas, never from the
// policies' code.
#include <gtest/gtest.h>

#include <random>

#include "base/diagnostics.hpp"
#include "kernels/attention.hpp"
#include "kernels/kv_pool.hpp"
#include "kernels/store_kvcache.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/genie_buffer_sizing.hpp"
#include "sim/cache/genie_mode_policy.hpp"
#include "sim/cache/paged_window_policy.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/serve/engine.hpp"
#include "tests/support/genie_modes.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t L = 2, H = 2, D = 8, B = 2;  // layers, kv heads, head_dim, dtype bytes
constexpr Bytes kCol = 2 * L * H * D * B;      // one token's column over all layers, K and V

// `mode` names the update mode the shape is for (the policy is made by make()).
GenieCacheShape shape([[maybe_unused]] const std::string& mode, int64_t ctx = 256,
                      int64_t headroom = 0, int64_t window = 0) {
  GenieCacheShape s;
  s.layers = L;
  s.kv_heads = H;
  s.head_dim = D;
  s.dtype_bytes = B;
  s.ctx_size = ctx;
  s.ar_variants = {1, 32};
  s.pointer_shift_headroom = headroom;
  s.window = window;
  return s;
}

// `mode`: the update mode a sliding window wraps.
std::unique_ptr<GenieKvPolicy> make(const std::string& policy, const GenieCacheShape& s,
                                    const std::string& mode = "") {
  if (policy == "sliding_window") return testing::make_window_policy(mode, s);
  return testing::make_mode_policy(policy, s);
}

KvUpdatePlan update(GenieKvPolicy& p, int64_t n_past, int64_t variant) {
  const KvUpdatePlan plan = p.plan_update({n_past, variant});
  p.apply_update(plan);
  return plan;
}

// Prefill of `prompt` tokens in AR-32 passes (the last one padded), then
// the switch to AR-1 for decoding, as the dialog engine dispatches them.
void prefill(GenieKvPolicy& p, int64_t prompt) {
  update(p, 0, 32);
  for (int64_t done = 0; done < prompt;) {
    const int64_t n = std::min<int64_t>(32, prompt - done);
    done += n;
    update(p, done, done == prompt ? 1 : 32);
  }
}

TEST(ShiftConcat, DecodeStepMovesTheKeptColumnsPlusTheNewOne) {
  auto p = make("shift_concat", shape("shift_concat"));
  prefill(*p, 40);
  Bytes previous = 0;
  for (int64_t n_past = 40; n_past < 250; ++n_past) {
    const KvUpdatePlan plan = update(*p, n_past + 1, 1);
    EXPECT_EQ(plan.dispatch, KvDispatch::update_and_set);
    // Closed form: 2 L H D b (p + 1).
    ASSERT_EQ(plan.bytes_moved(), 2 * L * H * D * B * (n_past + 1)) << "n_past " << n_past;
    EXPECT_EQ(plan.bytes_shifted, kCol * n_past);
    EXPECT_EQ(plan.pointer_updates, 0u);
    EXPECT_GT(plan.bytes_moved(), previous);  // grows with the cache
    previous = plan.bytes_moved();
    EXPECT_EQ(p->attention_span().read, 255);  // the static AR-1 shape, C - 1
  }
}

TEST(PointerShift, DecodeStepCopiesOneColumnUntilACompaction) {
  // ctx 64, headroom 32: rows of 96 columns, AR-1 cache dim 63, so the view
  // can slide while offset + 63 + 1 <= 96, i.e. a compaction when offset > 32.
  constexpr int64_t ctx = 64, h = 32;
  auto p = make("pointer_shift", shape("pointer_shift", ctx, h));
  prefill(*p, 8);
  int64_t offset = p->view_offset();
  int compactions = 0;
  for (int64_t n_past = 8; n_past < ctx - 1; ++n_past) {
    const KvUpdatePlan plan = update(*p, n_past + 1, 1);
    const bool compacts = offset > h;
    EXPECT_EQ(plan.compaction, compacts) << "n_past " << n_past;
    // Closed form: 2 L H D b, plus 2 L H D b p when the compaction moves the valid columns.
    ASSERT_EQ(plan.bytes_moved(), 2 * L * H * D * B * (1 + (compacts ? n_past : 0)))
        << "n_past " << n_past;
    EXPECT_EQ(plan.pointer_updates, 1u);
    offset = (compacts ? 0 : offset) + 1;
    EXPECT_EQ(p->view_offset(), offset);
    compactions += compacts;
  }
  EXPECT_EQ(compactions, 1);
  EXPECT_EQ(p->accounting().compactions, 1u);
}

TEST(PointerShift, DefaultHeadroomNeverCompactsInOneContext) {
  auto p = make("pointer_shift", shape("pointer_shift"));
  prefill(*p, 40);
  for (int64_t n_past = 40; n_past < 255; ++n_past)
    ASSERT_EQ(update(*p, n_past + 1, 1).bytes_moved(), kCol);
  EXPECT_EQ(p->accounting().compactions, 0u);
}

TEST(SmartMask, DecodeStepCopiesOneColumnAndAttentionReadsTheWholeCacheDim) {
  auto p = make("smart_mask", shape("smart_mask"));
  prefill(*p, 40);
  for (int64_t n_past = 40; n_past < 255; ++n_past) {
    ASSERT_EQ(update(*p, n_past + 1, 1).bytes_moved(), 2 * L * H * D * B);
    // Read: the AR-1 cache dim C - 1 whatever n_past; useful: n_past.
    EXPECT_EQ(p->attention_span().read, 255);
    EXPECT_EQ(p->attention_span().useful, n_past + 1);
  }
}

TEST(AllModes, PrefillVariantsRealignTheValidColumns) {
  for (const char* mode : {"shift_concat", "pointer_shift", "smart_mask"}) {
    auto p = make(mode, shape(mode));
    update(*p, 0, 32);
    const KvUpdatePlan first = update(*p, 32, 32);
    EXPECT_EQ(first.realign_bytes, 0);
    EXPECT_EQ(first.bytes_copied, 32 * kCol);
    // Last, padded pass: 8 more tokens, then AR-1 for decoding: the 32
    // cached columns move into the AR-1 layout once (switchKeyVariant).
    const KvUpdatePlan last = update(*p, 40, 1);
    EXPECT_EQ(last.variant_before, 32);
    EXPECT_EQ(last.variant_after, 1);
    EXPECT_EQ(last.realign_bytes, 32 * kCol) << mode;
    EXPECT_EQ(last.bytes_copied, 8 * kCol) << mode;
    // Same n_past, other variant: set_variant, realignment only.
    const KvUpdatePlan set = update(*p, 40, 32);
    EXPECT_EQ(set.dispatch, KvDispatch::set_variant);
    EXPECT_EQ(set.bytes_moved(), 40 * kCol) << mode;
    EXPECT_EQ(p->accounting().variant_switches, 3u) << mode;  // 1 -> 32, 32 -> 1, 1 -> 32
    EXPECT_EQ(p->capacity_tokens(32), 224);
    EXPECT_EQ(p->capacity_tokens(1), 255);
  }
}

TEST(AllModes, RewindDropsTheNewestAtEachModesPrice) {
  for (const char* mode : {"shift_concat", "pointer_shift", "smart_mask"}) {
    auto p = make(mode, shape(mode));
    prefill(*p, 40);
    for (int64_t n = 41; n <= 60; ++n) update(*p, n, 1);
    const int64_t before_offset = p->view_offset();
    const KvUpdatePlan plan = update(*p, 55, 1);  // 5 rejected draft tokens
    EXPECT_EQ(plan.dispatch, KvDispatch::rewind);
    EXPECT_EQ(plan.n_update, -5);
    EXPECT_EQ(p->n_past(), 55);
    EXPECT_EQ(p->saved_bytes(), 55 * kCol);
    const std::string m = mode;
    if (m == "shift_concat") {
      // memmove the kept 55 right by 5, memset 5 pad columns (seed 002, n_update < 0).
      EXPECT_EQ(plan.bytes_shifted, 55 * kCol);
      EXPECT_EQ(plan.pad_bytes, 5 * kCol);
    } else if (m == "pointer_shift") {
      EXPECT_EQ(plan.bytes_moved(), 0);
      EXPECT_EQ(p->view_offset(), before_offset - 5);
    } else {
      EXPECT_EQ(plan.bytes_moved(), 0);
    }
    EXPECT_EQ(p->accounting().rewinds, 1u);
    // n_past 0 clears.
    EXPECT_EQ(update(*p, 0, 1).dispatch, KvDispatch::clear_cache);
    EXPECT_EQ(p->n_past(), 0);
  }
}

TEST(AllModes, RequestsBeyondTheCacheDimOrUnshippedVariantsThrow) {
  for (const char* mode : {"shift_concat", "pointer_shift", "smart_mask"}) {
    auto p = make(mode, shape(mode));
    EXPECT_THROW(p->plan_update({300, 1}), std::invalid_argument);
    EXPECT_THROW(p->plan_update({10, 7}), std::invalid_argument);  // no AR-7
    prefill(*p, 250);
    EXPECT_THROW(p->plan_update({250, 32}), std::invalid_argument);  // 250 > 224
    EXPECT_NO_THROW(p->plan_update({255, 1}));
    EXPECT_THROW(p->plan_update({256, 1}), std::invalid_argument);
  }
}

TEST(SlidingWindow, EvictsTheOldestAndKeepsTheWindow) {
  constexpr int64_t W = 16;
  for (const char* mode : {"shift_concat", "pointer_shift", "smart_mask"}) {
    auto p = make("sliding_window", shape(mode, 64, 0, W), mode);
    prefill(*p, 40);  // an AR-32 pass longer than half the window
    EXPECT_EQ(p->n_past(), 40);
    EXPECT_EQ(p->tokens_held(), W);
    EXPECT_EQ(p->accounting().window_evicted_tokens, 40 - W);
    for (int64_t n = 41; n <= 200; ++n) {
      const KvUpdatePlan plan = update(*p, n, 1);
      ASSERT_EQ(plan.evicted_tokens, 1) << mode;
      const std::string m = mode;
      if (m == "shift_concat") {
        // pad the oldest, shift W - 1, copy 1: 2 L H D b (W + 1).
        ASSERT_EQ(plan.bytes_moved(), 2 * L * H * D * B * (W + 1));
      } else if (m == "smart_mask") {
        ASSERT_EQ(plan.bytes_moved(), 2 * L * H * D * B);  // the ring wraps in place
      } else {
        ASSERT_EQ(plan.bytes_moved(), 2 * L * H * D * B * (1 + (plan.compaction ? W - 1 : 0)));
      }
    }
    EXPECT_EQ(p->tokens_held(), W);
    EXPECT_EQ(p->capacity_tokens(1), W);
    EXPECT_EQ(p->accounting().window_evicted_tokens, 200 - W);
    // A rewind drops the newest of what is held.
    const KvUpdatePlan back = update(*p, 197, 1);
    EXPECT_EQ(back.dispatch, KvDispatch::rewind);
    EXPECT_EQ(p->tokens_held(), W - 3);
    EXPECT_EQ(p->n_past(), 197);
  }
  auto pointer = make("sliding_window", shape("pointer_shift", 64, 0, W), "pointer_shift");
  prefill(*pointer, 40);
  for (int64_t n = 41; n <= 200; ++n) update(*pointer, n, 1);
  EXPECT_GT(pointer->accounting().compactions, 0u);  // the view ran out of headroom
}

TEST(BufferBytes, EqualGenieBufferBytes) {
  ModelSpec m;  // Llama-3.2-3B's KV shape
  m.name = "llama-3.2-3b";
  m.num_hidden_layers = 28;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  for (const char* policy : {"shift_concat", "pointer_shift", "smart_mask", "sliding_window"}) {
    for (int64_t headroom : {0, 512}) {
      for (const char* dtype : {"fp16", "int8"}) {
        config::ParamValues v;
        v.set("ctx_size", int64_t{4096}, true);
        v.set("ar_variants", std::vector<int64_t>{1, 64, 128}, true);
        v.set("pointer_shift_headroom", headroom, true);
        v.set("update_mode", std::string("pointer_shift"), true);
        v.set("window", int64_t{1024}, true);
        const auto spec = make_policy_spec(policy, v);
        ASSERT_NE(spec->device_buffers(), nullptr) << policy;
        const auto p = spec->device_buffers()->make(m, kv_dtype_bytes(dtype));
        // pointer_shift (and a window over it) keeps rows of ctx_size + headroom.
        const bool pointer =
            std::string(policy) == "sliding_window" || std::string(policy) == "pointer_shift";
        const int64_t columns = pointer ? pointer_shift_row_columns(4096, headroom) : 4096;
        EXPECT_EQ(p->accounting().buffer_bytes,
                  genie_buffer_bytes(m, columns, 4096, {1, 64, 128}, kv_dtype_bytes(dtype)).total())
            << policy << " " << headroom << " " << dtype;
        EXPECT_EQ(spec->device_buffers()->buffer_bytes(m, kv_dtype_bytes(dtype)),
                  p->accounting().buffer_bytes)
            << policy;
      }
    }
  }
}

TEST(Registry, OnDevicePoliciesComeFromTheirFactory) {
  ModelSpec m;
  m.num_hidden_layers = 2;
  m.num_key_value_heads = 2;
  m.head_dim = 8;
  config::ParamValues v;
  v.set("ctx_size", int64_t{128}, true);
  v.set("window", int64_t{32}, true);
  int on_device = 0;
  for (const std::string& name : cache_policy_names()) {
    const auto spec = make_policy_spec(name, v);
    if (spec->device_buffers() == nullptr) continue;
    ++on_device;
    const auto p = spec->device_buffers()->make(m, 2);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->name(), name);
  }
  EXPECT_EQ(on_device, 6);  // four Genie modes, sliding_window over one, llama_cells
  v.set("update_mode", std::string("paged"), true);
  const auto over_paged = make_policy_spec("sliding_window", v);
  EXPECT_EQ(over_paged->device_buffers(), nullptr);
  ASSERT_NE(over_paged->block_pool(), nullptr);
  PoolSizing sizing;
  sizing.num_blocks = 8;
  sizing.block_bytes = 1024;
  const auto paged = over_paged->block_pool()->make(InstanceSpec{}, sizing);
  ASSERT_NE(paged, nullptr);
  EXPECT_EQ(paged->name(), "sliding_window");
}

TEST(PagedWindow, FreesBlocksThatLeaveTheWindow) {
  PagedWindowParams prm;
  prm.num_blocks = 32;
  prm.block_size = 4;
  prm.block_bytes = 64;
  prm.window = 10;
  PagedWindowPolicy p(prm);
  std::vector<int32_t> tokens(64, 7);
  const TokenView view{tokens.data(), 64, nullptr, 0};
  const SeqSlot s = p.apply_admit(p.plan_admit(PrefixHit{}, 12));
  p.commit(s, view, 12);
  EXPECT_EQ(p.live_blocks(s), 3);  // the next token (position 12) needs positions 3..12
  for (int64_t n = 12; n < 60; ++n) {
    p.apply_grow(s, p.plan_grow(s, 1), 1);
    p.commit(s, view, n + 1);
    // Blocks wholly before position n + 2 - window are free.
    const int64_t freed = std::max<int64_t>(0, n + 2 - prm.window) / prm.block_size;
    ASSERT_EQ(p.block_table(s).size() - static_cast<size_t>(p.live_blocks(s)),
              static_cast<size_t>(freed))
        << n;
    ASSERT_LE(p.live_blocks(s), (prm.window + prm.block_size - 1) / prm.block_size + 1);
    EXPECT_EQ(p.free_blocks(), prm.num_blocks - p.live_blocks(s));
  }
  EXPECT_EQ(p.block_table(s).front(), kNoBlock);
  EXPECT_EQ(p.attention_context(100), 9);
  EXPECT_EQ(p.attention_context(5), 5);
  EXPECT_EQ(p.accounting().window_evicted_tokens,
            static_cast<int64_t>(p.block_table(s).size() - p.live_blocks(s)) * prm.block_size);
  p.release(s);
  EXPECT_NO_THROW(p.check_drained());
}

TEST(PagedWindow, RetainedBlocksHoldTheWindowWhileFreedOnesAreReused) {
  // Two sequences decode side by side in a pool too small for both without
  // the window (2 x 12 blocks needed, 12 there): freed blocks are reused by
  // the other sequence, and the window each next token attends to must still
  // read, through the block table, exactly its own history (windowed dense).
  constexpr int64_t kBlocks = 12, kBlock = 4, kWindow = 10, kHeads = 2, kDim = 8;
  PagedWindowParams prm{kBlocks, kBlock, 1024, kWindow, 0};
  PagedWindowPolicy policy(prm);
  kernels::KvPool pool(kBlocks, 1, kBlock, kHeads, kDim, kernels::KvDtype::fp32);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  struct Seq {
    SeqSlot slot = kNoSeq;
    std::vector<float> k, v;  // history [tokens, heads, dim]
  };
  std::vector<Seq> seqs(2);
  std::vector<int32_t> tokens(64, 1);
  const TokenView view{tokens.data(), 64, nullptr, 0};
  const int64_t row = kHeads * kDim;
  auto write = [&](Seq& s, int64_t first, int64_t n) {
    std::vector<float> k(static_cast<size_t>(n * row)), v(k.size());
    for (auto& x : k) x = u(rng);
    for (auto& x : v) x = u(rng);
    const auto slots = kernels::slot_mapping_for(policy.block_table(s.slot), kBlock, first, n);
    kernels::store_kvcache(pool, 0, k.data(), v.data(), slots);
    s.k.insert(s.k.end(), k.begin(), k.end());
    s.v.insert(s.v.end(), v.begin(), v.end());
  };
  auto check = [&](const Seq& s, int step) {
    const int64_t total = static_cast<int64_t>(s.k.size()) / row;
    const int64_t first = std::max<int64_t>(0, total + 1 - kWindow);  // the next token's window
    const auto& table = policy.block_table(s.slot);
    std::vector<float> k, v, kr(static_cast<size_t>(kDim));
    for (int64_t p = first; p < total; ++p) {
      const int32_t block = table[static_cast<size_t>(p / kBlock)];
      ASSERT_NE(block, kNoBlock) << "position " << p << " of the window was freed, step " << step;
      for (int64_t h = 0; h < kHeads; ++h) {
        pool.read_row(block, KvPart::key, 0, p % kBlock, h, kr.data());
        k.insert(k.end(), kr.begin(), kr.end());
        pool.read_row(block, KvPart::value, 0, p % kBlock, h, kr.data());
        v.insert(v.end(), kr.begin(), kr.end());
      }
    }
    std::vector<float> q(static_cast<size_t>(2 * row));
    for (auto& x : q) x = u(rng);
    std::vector<float> paged(q.size()), dense(q.size());
    const int64_t n = total - first;
    kernels::dense_attention_reference(q.data(), 1, k.data(), v.data(), n, 2 * kHeads, kHeads, kDim,
                                       0.3f, paged.data());
    kernels::dense_attention_reference(q.data(), 1, s.k.data() + first * row,
                                       s.v.data() + first * row, n, 2 * kHeads, kHeads, kDim, 0.3f,
                                       dense.data());
    for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(paged[i], dense[i]) << "step " << step;
  };
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int64_t prompt = 5 + static_cast<int64_t>(i);
    seqs[i].slot = policy.apply_admit(policy.plan_admit(PrefixHit{}, prompt));
    write(seqs[i], 0, prompt);
    policy.commit(seqs[i].slot, view, prompt);
  }
  for (int step = 0; step < 40; ++step) {
    for (Seq& s : seqs) {
      const int64_t total = static_cast<int64_t>(s.k.size()) / row;
      const GrowPlan grow = policy.plan_grow(s.slot, 1);
      ASSERT_TRUE(grow.fits) << "step " << step;
      policy.apply_grow(s.slot, grow, 1);
      write(s, total, 1);
      policy.commit(s.slot, view, total + 1);
      check(s, step);
    }
  }
  EXPECT_GT(policy.accounting().evictions + policy.accounting().window_evicted_tokens, 0u);
  for (Seq& s : seqs) policy.release(s.slot);
  EXPECT_NO_THROW(policy.check_drained());
}

std::string paged_scenario(const std::string& cache) {
  return R"(
device: ascend-910b2
model: llama-3.2-1b
kv_cache: )" +
         cache + R"(
workload: {kind: synthetic, requests: 8, arrival: {process: constant, rate_per_s: 2}, input_tokens: 64, output_tokens: 600}
)";
}

TEST(PagedWindow, EngineRunFreesBlocksAndReadsLessAttention) {
  auto run = [](const std::string& cache) {
    const ScenarioSpec scenario = testing::scenario_from_text(paged_scenario(cache));
    return ServingEngine(scenario, nullptr).run();
  };
  const RunMetrics full = run("{policy: paged, block_size: 16}");
  const RunMetrics windowed =
      run("{policy: sliding_window, update_mode: paged, window: 128, block_size: 16}");
  EXPECT_EQ(windowed.requests.completed, 8);
  EXPECT_EQ(windowed.policy, "sliding_window");
  EXPECT_GT(windowed.kv_cache.window_evicted_tokens, 8 * 400);
  EXPECT_EQ(full.kv_cache.window_evicted_tokens, 0);
  EXPECT_LT(windowed.kv_cache.peak_used_bytes, full.kv_cache.peak_used_bytes / 2);
  EXPECT_LE(windowed.latency_ms.tpot.mean, full.latency_ms.tpot.mean);
}

std::string config_error(const std::string& yaml) {
  try {
    testing::scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(OnDeviceChecks, BadWindowsVariantsAndHeadroomAreClearErrors) {
  const std::string base = R"(
device: ascend-910b2
model: llama-3.2-1b
workload: {kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1}, input_tokens: 8, output_tokens: 2}
)";
  std::string e = config_error(base +
                               "kv_cache: {policy: sliding_window, update_mode: smart_mask, "
                               "ctx_size: 1024, ar_variants: [1, 128], window: 1000}\n");
  EXPECT_NE(e.find("kv_cache.window: 1000 tokens do not fit the cache: ctx_size 1024 - largest "
                   "variant AR-128 = 896 (1..896)"),
            std::string::npos)
      << e;
  e = config_error(base +
                   "kv_cache: {policy: pointer_shift, ctx_size: 1024, ar_variants: [1, 2048]}\n");
  EXPECT_NE(e.find("kv_cache.ar_variants: AR-2048 is above ctx_size 1024"), std::string::npos) << e;
  e = config_error(base +
                   "kv_cache: {policy: pointer_shift, ar_variants: [1, 128], "
                   "pointer_shift_headroom: 64}\n");
  EXPECT_NE(e.find("kv_cache.pointer_shift_headroom: 64 columns cannot take one AR-128 pass"),
            std::string::npos)
      << e;
  e = config_error(base + "kv_cache: {policy: sliding_window, update_mode: paged}\n");
  EXPECT_NE(e.find("kv_cache.window: sliding_window needs the number of tokens it keeps"),
            std::string::npos)
      << e;
  // window belongs to sliding_window: under another policy it is an error naming its owner,
  // never a knob silently ignored.
  EXPECT_NE(config_error(base + "kv_cache: {policy: paged, window: 64}\n")
                .find("kv_cache.window: not a parameter of policy 'paged' (it belongs to "
                      "sliding_window)"),
            std::string::npos);
  e = config_error(base +
                   "kv_cache: {policy: sliding_window, update_mode: paged, window: 64, "
                   "prefix_caching: true}\n");
  EXPECT_NE(e.find("kv_cache.prefix_caching: prefix caching is off under a sliding window"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
