// Genie's NativeKV (qualla native-kv.cpp): the HMX tiled layout against an
// enumeration of its blocks, its buffers against dense attention and a naive
// history, its policy's closed forms against the kernel's bytes, its
// budget, and bad tiles as exit 2 naming the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <numeric>
#include <random>

#include "kernels/attention.hpp"
#include "kernels/genie_kv_buffer.hpp"
#include "kernels/native_kv_layout.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/genie_mode_policy.hpp"
#include "sim/numerics/genie_numerics.hpp"
#include "tests/support/genie_modes.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using kernels::GenieKvBuffer;
using kernels::GenieUpdateMode;
using kernels::KvDtype;

std::vector<float> random_vec(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// The layout written as qualla's comment states it, by enumeration: walk
// [DOUT/t][DIN/32][t/32][8][32][4] in order and hand out consecutive offsets.
std::vector<int64_t> enumerated_layout(int64_t din, int64_t dout, int64_t n_tile) {
  const int64_t t = std::min(dout, n_tile);
  std::vector<int64_t> at(static_cast<size_t>(din * dout), -1);  // [din][dout] -> offset
  int64_t next = 0;
  for (int64_t tile = 0; tile < dout / t; ++tile)
    for (int64_t i0 = 0; i0 < din / 32; ++i0)
      for (int64_t o0 = 0; o0 < t / 32; ++o0)
        for (int64_t i1 = 0; i1 < 8; ++i1)
          for (int64_t o1 = 0; o1 < 32; ++o1)
            for (int64_t i2 = 0; i2 < 4; ++i2) {
              const int64_t i = i0 * 32 + i1 * 4 + i2, o = tile * t + o0 * 32 + o1;
              at[static_cast<size_t>(i * dout + o)] = next++;
            }
  return at;
}

TEST(NativeKvLayout, OffsetsEqualTheEnumeratedBlocksAndCoverTheMatrixOnce) {
  // Keys [head_dim, ctx] with K_TILE 256, values [ctx, head_dim] with V_TILE
  // 64, and a tile wider than the matrix (t = DOUT).
  struct Shape {
    int64_t din, dout, tile;
  };
  for (const Shape s : {Shape{64, 512, 256}, Shape{128, 256, 256}, Shape{512, 128, 64},
                        Shape{96, 64, 64}, Shape{32, 128, 256}}) {
    const std::vector<int64_t> ref = enumerated_layout(s.din, s.dout, s.tile);
    std::vector<int64_t> seen(ref.size(), 0);
    for (int64_t i = 0; i < s.din; ++i)
      for (int64_t o = 0; o < s.dout; ++o) {
        const int64_t off = kernels::hmx_offset(s.din, s.dout, s.tile, i, o);
        ASSERT_EQ(off, ref[static_cast<size_t>(i * s.dout + o)])
            << s.din << "x" << s.dout << " tile " << s.tile << " at (" << i << ", " << o << ")";
        ++seen[static_cast<size_t>(off)];
      }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int64_t n) { return n == 1; }));
    // A 32 x 32 block is one run of KV_BLOCK_SIZE = 1024 elements.
    std::vector<int64_t> block;
    for (int64_t i = 32; i < 64 && i < s.din; ++i)
      for (int64_t o = 0; o < 32; ++o)
        block.push_back(kernels::hmx_offset(s.din, s.dout, s.tile, i, o));
    if (!block.empty()) {
      std::sort(block.begin(), block.end());
      EXPECT_EQ(block.back() - block.front() + 1, 1024);
    }
  }
}

TEST(NativeKvLayout, BudgetRoundsTheVariantUpToTheBlock) {
  EXPECT_EQ(kernels::native_kv_budget(4096, 1), 4064);
  EXPECT_EQ(kernels::native_kv_budget(4096, 32), 4064);
  EXPECT_EQ(kernels::native_kv_budget(4096, 33), 4032);
  EXPECT_EQ(kernels::native_kv_budget(4096, 128), 3968);
  EXPECT_EQ(kernels::native_kv_budget(4096, 4096), 4096);  // the BERT variant
  std::string key;
  EXPECT_EQ(kernels::native_kv_layout_error(4096, 128, {256, 64}, &key), "");
  EXPECT_NE(kernels::native_kv_layout_error(4096, 128, {96, 64}, &key), "");
  EXPECT_EQ(key, "k_tile");
  EXPECT_NE(kernels::native_kv_layout_error(4096, 128, {256, 96}, &key), "");
  EXPECT_EQ(key, "v_tile");
  EXPECT_NE(kernels::native_kv_layout_error(4090, 128, {256, 64}, &key), "");
  EXPECT_EQ(key, "ctx_size");
  EXPECT_THROW(GenieKvBuffer(4090, 1, 64, KvDtype::int8, GenieUpdateMode::native_kv, 1),
               std::invalid_argument);
}

struct Case {
  const char* name;
  KvDtype dtype;
  float tolerance;
};

class NativeKvDense : public ::testing::TestWithParam<Case> {};

// Prefill, switch, decode: attention through the tiled buffer equals dense
// attention over the same history, and each element sits at its tiled
// offset of the raw storage.
TEST_P(NativeKvDense, AttentionEqualsDenseAndElementsSitAtTheirTiledOffsets_ctx512_h2_d64) {
  const Case c = GetParam();
  std::mt19937 rng(5);
  const int64_t n_ctx = 512, heads = 2, d = 64, q_heads = 4;
  const kernels::Int8Params q8{2.0f / 255.0f, -128};
  GenieKvBuffer b(n_ctx, heads, d, c.dtype, GenieUpdateMode::native_kv, 32, q8, 0, {256, 64});
  EXPECT_EQ(b.cache_dim(), 480);
  std::vector<float> hist_k, hist_v;
  const auto add = [&](int64_t n) {
    auto k = random_vec(rng, static_cast<size_t>(n * heads * d));
    auto v = random_vec(rng, k.size());
    b.append(k.data(), v.data(), n);
    b.round_trip(k.data(), static_cast<int64_t>(k.size()));
    b.round_trip(v.data(), static_cast<int64_t>(v.size()));
    hist_k.insert(hist_k.end(), k.begin(), k.end());
    hist_v.insert(hist_v.end(), v.begin(), v.end());
  };
  const auto check = [&](const char* when) {
    const int64_t n = static_cast<int64_t>(hist_k.size()) / (heads * d);
    const auto q = random_vec(rng, q_heads * d);
    std::vector<float> ref(q.size()), out(q.size());
    kernels::dense_attention_reference(q.data(), 1, hist_k.data(), hist_v.data(), n, q_heads, heads,
                                       d, 0.2f, ref.data());
    b.attend(q.data(), q_heads, 0.2f, out.data());
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], c.tolerance) << when;
    // Element (h, c, i) of the history at the layout's offset.
    const int64_t bw = kernels::kv_dtype_bytes(c.dtype);
    for (int64_t i = 0; i < n; i += 7)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t e = 0; e < d; e += 5) {
          const int64_t koff = h * d * n_ctx + kernels::hmx_offset(d, n_ctx, 256, e, i);
          const int64_t voff = h * n_ctx * d + kernels::hmx_offset(n_ctx, d, 64, i, e);
          ASSERT_EQ(b.key_index(h, e, i), koff);
          ASSERT_EQ(b.value_index(h, i, e), voff);
          float kx = 0, vx = 0;
          kernels::decode_row(c.dtype, b.key_storage().data() + koff * bw, 1, q8, &kx);
          kernels::decode_row(c.dtype, b.value_storage().data() + voff * bw, 1, q8, &vx);
          ASSERT_EQ(kx, hist_k[static_cast<size_t>((i * heads + h) * d + e)]) << when;
          ASSERT_EQ(vx, hist_v[static_cast<size_t>((i * heads + h) * d + e)]) << when;
        }
  };
  add(32);
  add(32);
  check("after two AR-32 prefills");
  const uint64_t before = b.bytes_moved();
  b.switch_variant(1);
  EXPECT_EQ(b.bytes_moved(), before) << "a variant switch at one ctx_size moves nothing";
  EXPECT_EQ(b.cache_dim(), 480);  // ctx - round_up(1, 32)
  check("after the switch to AR-1");
  for (int i = 0; i < 45; ++i) add(1);
  check("after 45 decodes");
  EXPECT_EQ(b.bytes_moved(),
            static_cast<uint64_t>(2 * heads * d * 109 * kernels::kv_dtype_bytes(c.dtype)));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NativeKvDense,
                         ::testing::Values(Case{"fp32", KvDtype::fp32, 1e-5f},
                                           Case{"fp16", KvDtype::fp16, 2e-3f},
                                           Case{"int8", KvDtype::int8, 2e-3f}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// The policy's plans replayed on the kernel through random forward updates,
// rewinds, variant switches, a window's evictions and clears: the valid
// columns read back in age order are the naive history, attention equals
// dense attention, and the kernel's bytes equal the plans' (one layer).
TEST(NativeKvPolicy, PlansReplayedOnTheKernelMatchANaiveHistoryAndItsBytes_ctx128_h2_d32) {
  const int64_t heads = 2, d = 32, q_heads = 4;
  GenieCacheShape shape;
  shape.layers = 1;
  shape.kv_heads = heads;
  shape.head_dim = d;
  shape.dtype_bytes = 4;
  shape.ctx_size = 128;
  shape.ar_variants = {1, 4, 40};
  for (const bool windowed : {false, true}) {
    std::unique_ptr<GenieKvPolicy> policy =
        windowed ? make_sliding_window_policy(make_native_kv_policy(shape), 60)
                 : std::unique_ptr<GenieKvPolicy>(make_native_kv_policy(shape));
    GenieKvBuffer b(128, heads, d, KvDtype::fp32, GenieUpdateMode::native_kv, 1);
    std::mt19937 rng(windowed ? 3 : 4);
    std::deque<std::vector<float>> hist;  // [k | v] of one entry
    uint64_t planned = 0;
    int64_t position = 0;
    for (int step = 0; step < 160; ++step) {
      const int64_t variants[] = {1, 4, 40};
      const int64_t variant = variants[rng() % 3];
      int64_t n_past = position;
      const int64_t r = static_cast<int64_t>(rng() % 10);
      if (r == 0)
        n_past = 0;
      else if (r < 3 && position > 0)
        n_past = position - 1 - static_cast<int64_t>(rng() % std::min<int64_t>(position, 5));
      else
        n_past = position + 1 + static_cast<int64_t>(rng() % 6);
      if (!windowed && n_past > policy->capacity_tokens(variant)) n_past = 0;
      KvUpdatePlan plan;
      try {
        plan = policy->plan_update({n_past, variant});
      } catch (const std::invalid_argument&) {
        continue;  // does not fit this variant's budget: not dispatched
      }
      const int64_t n_new = std::max<int64_t>(0, plan.n_update);
      auto k = random_vec(rng, static_cast<size_t>(n_new * heads * d));
      auto v = random_vec(rng, k.size());
      policy->apply_update(plan);
      numerics::replay_update(plan, b, k.data(), v.data());
      planned += plan.bytes_moved();
      position = n_past;
      // The naive history: the same steps on a deque.
      if (plan.dispatch == KvDispatch::clear_cache) hist.clear();
      const int64_t never =
          plan.dispatch == KvDispatch::update_and_set ? plan.n_update - plan.appended_tokens : 0;
      for (int64_t e = 0; e < plan.evicted_tokens - never; ++e) hist.pop_front();
      for (int64_t e = 0; e < plan.rewound_tokens; ++e) hist.pop_back();
      for (int64_t i = never; i < never + plan.appended_tokens; ++i) {
        std::vector<float> entry(k.begin() + i * heads * d, k.begin() + (i + 1) * heads * d);
        entry.insert(entry.end(), v.begin() + i * heads * d, v.begin() + (i + 1) * heads * d);
        hist.push_back(entry);
      }
      ASSERT_EQ(b.n_valid(), static_cast<int64_t>(hist.size())) << step;
      ASSERT_EQ(b.bytes_moved(), planned) << "step " << step << " (windowed " << windowed << ")";
      std::vector<uint8_t> dump_k, dump_v;
      b.dump_valid(true, dump_k);
      b.dump_valid(false, dump_v);
      const auto* dk = reinterpret_cast<const float*>(dump_k.data());
      const auto* dv = reinterpret_cast<const float*>(dump_v.data());
      const int64_t n = b.n_valid();
      for (int64_t i = 0; i < n; ++i)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t e = 0; e < d; ++e) {
            ASSERT_EQ(dk[(h * d + e) * n + i], hist[static_cast<size_t>(i)][h * d + e]) << step;
            ASSERT_EQ(dv[(h * n + i) * d + e], hist[static_cast<size_t>(i)][heads * d + h * d + e])
                << step;
          }
      if (n == 0) continue;
      std::vector<float> hk, hv;
      for (const auto& entry : hist) {
        hk.insert(hk.end(), entry.begin(), entry.begin() + heads * d);
        hv.insert(hv.end(), entry.begin() + heads * d, entry.end());
      }
      const auto q = random_vec(rng, q_heads * d);
      std::vector<float> ref(q.size()), out(q.size());
      kernels::dense_attention_reference(q.data(), 1, hk.data(), hv.data(), n, q_heads, heads, d,
                                         0.3f, ref.data());
      b.attend(q.data(), q_heads, 0.3f, out.data());
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], 1e-5f) << step;
    }
    EXPECT_GT(planned, 0u);
  }
}

// The closed forms of sim/cache/native_kv_policy.cpp on Llama-3.2-1B's shape.
TEST(NativeKvPolicy, ClosedFormsOfADecodeStepASwitchARewindAndAClear) {
  GenieCacheShape shape;
  shape.layers = 16;
  shape.kv_heads = 8;
  shape.head_dim = 64;
  shape.dtype_bytes = 1;
  shape.ctx_size = 4096;
  shape.ar_variants = {1, 128};
  const Bytes col = 2 * 16 * 8 * 64;
  auto p = testing::make_mode_policy("native_kv", shape);
  auto sm = testing::make_mode_policy("smart_mask", shape);
  EXPECT_EQ(p->capacity_tokens(1), 4064);
  EXPECT_EQ(p->capacity_tokens(128), 3968);
  const auto run = [](GenieModePolicy& x, KvUpdateRequest r) {
    const KvUpdatePlan plan = x.plan_update(r);
    x.apply_update(plan);
    return plan;
  };
  KvUpdatePlan clear = run(*p, {0, 128});
  EXPECT_EQ(clear.pad_bytes, 4096 * col);  // memset of the whole buffer
  run(*sm, {0, 128});
  EXPECT_EQ(run(*p, {300, 128}).bytes_moved(), 300 * col);
  run(*sm, {300, 128});
  // AR-128 -> AR-1: nothing moves for native_kv, every entry for smart_mask.
  EXPECT_EQ(run(*p, {300, 1}).bytes_moved(), 0);
  EXPECT_EQ(run(*sm, {300, 1}).realign_bytes, 300 * col);
  for (int64_t n = 301; n < 340; ++n) {
    const KvUpdatePlan step = run(*p, {n, 1});
    EXPECT_EQ(step.bytes_moved(), col);
    EXPECT_EQ(step.bytes_copied, col);
    EXPECT_EQ(step.tensor_registrations, 0u);
  }
  // The same columns attended as every mode: the static shape.
  EXPECT_EQ(p->attention_span().read, sm->attention_span().read);
  EXPECT_EQ(p->attention_span().read, 4095);
  const KvUpdatePlan rewind = run(*p, {335, 1});
  EXPECT_EQ(rewind.pad_bytes, 4 * col);  // reduceKV zeroes the dropped entries
  EXPECT_THROW(p->plan_update({4065, 1}), std::invalid_argument);  // past the budget
}

constexpr const char* kScenario = R"(name: nkv
seed: 3
device: snapdragon-8-gen3
model: llama-3.2-1b-instruct-w4a16
kv_cache: {policy: native_kv, dtype: int8, ctx_size: 4096, ar_variants: [1, 128]}
workload:
  kind: dialog
  turns: 2
  prompt_tokens: {dist: constant, value: 100}
  reply_tokens: {dist: constant, value: 20}
  think_time: {dist: constant, value: 1s}
)";

TEST(NativeKvSpec, BadTilesAndAWideKvAreConfigErrorsNamingTheKey) {
  EXPECT_EQ(testing::scenario_from_text(kScenario).policy().name(), "native_kv");
  const auto error_of = [](std::string yaml) -> std::string {
    try {
      testing::scenario_from_text(yaml);
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  std::string s = kScenario;
  const std::string kv = "ar_variants: [1, 128]}";
  const auto with = [&](const std::string& extra) {
    std::string t = s;
    t.replace(t.find(kv), kv.size(), "ar_variants: [1, 128], " + extra + "}");
    return t;
  };
  std::string e = error_of(with("k_tile: 96"));
  EXPECT_NE(e.find("kv_cache.k_tile"), std::string::npos) << e;
  EXPECT_NE(e.find("does not divide ctx_size 4096"), std::string::npos) << e;
  e = error_of(with("v_tile: 48"));
  EXPECT_NE(e.find("kv_cache.v_tile"), std::string::npos) << e;
  std::string ctx = s;
  ctx.replace(ctx.find("ctx_size: 4096"), 14, "ctx_size: 4090");
  e = error_of(ctx);
  EXPECT_NE(e.find("kv_cache.ctx_size"), std::string::npos) << e;
  std::string fp16 = s;
  fp16.replace(fp16.find("dtype: int8"), 11, "dtype: fp16");
  e = error_of(fp16);
  EXPECT_NE(e.find("kv_cache.dtype"), std::string::npos) << e;
  EXPECT_NE(e.find("8-bit"), std::string::npos) << e;
}

TEST(NativeKvSpec, TheCommandLineExits2NamingTheTileKey) {
  const std::string cmd = std::string(KVSIM_BINARY) + " run " + KVSIM_SOURCE_DIR +
                          "/configs/scenarios/htp-genie-modes-long-dialog-8gen3.yaml"
                          " --set kv_cache.policy=native_kv --set kv_cache.k_tile=192 --quiet"
                          " --out /tmp/kvsim-native-kv-bad-tile";
  const testing::CommandResult r = testing::run_command(cmd);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("kv_cache.k_tile"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("192"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
