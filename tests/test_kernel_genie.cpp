// Genie's buffer update modes (seed 002): SHIFT_CONCAT, POINTER_SHIFT and
// SMART_MASK give the same attention as each other and as dense attention
// over the same history; variant realignment keeps the content; int8 pads
// with the quantisation offset.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/attention.hpp"
#include "kernels/genie_kv_buffer.hpp"

namespace kvsim::kernels {
namespace {

std::vector<float> random_vec(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

struct Case {
  const char* name;
  KvDtype dtype;
  float tolerance;  // against dense attention over round-tripped fp32 values
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class GenieModes : public ::testing::TestWithParam<Case> {};

TEST_P(GenieModes, AllModesEqualDenseAfterPrefillAndDecodes_ctx64_h2_d8) {
  const Case c = GetParam();
  std::mt19937 rng(9);
  const int64_t n_ctx = 64, heads = 2, d = 8, q_heads = 4;
  const Int8Params q8{2.0f / 255.0f, -128};  // covers [-1, 1]
  std::vector<GenieKvBuffer> bufs;
  for (auto mode :
       {GenieUpdateMode::shift_concat, GenieUpdateMode::pointer_shift, GenieUpdateMode::smart_mask})
    bufs.emplace_back(n_ctx, heads, d, c.dtype, mode, 16, q8);  // AR-16 for the prefill
  std::vector<float> hist_k, hist_v;
  auto add = [&](int64_t n) {
    const auto k = random_vec(rng, static_cast<size_t>(n * heads * d));
    const auto v = random_vec(rng, k.size());
    for (auto& b : bufs) b.append(k.data(), v.data(), n);
    hist_k.insert(hist_k.end(), k.begin(), k.end());
    hist_v.insert(hist_v.end(), v.begin(), v.end());
  };
  auto check = [&](const char* when) {
    const int64_t n = static_cast<int64_t>(hist_k.size()) / (heads * d);
    const auto q = random_vec(rng, q_heads * d);
    std::vector<float> ref(q.size()), out(q.size());
    dense_attention_reference(q.data(), 1, hist_k.data(), hist_v.data(), n, q_heads, heads, d, 0.3f,
                              ref.data());
    for (const auto& b : bufs) {
      b.attend(q.data(), q_heads, 0.3f, out.data());
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], c.tolerance) << when;
    }
  };
  add(16);
  check("after the AR-16 prefill");
  for (auto& b : bufs) b.switch_variant(1);  // AR-16 -> AR-1 for decoding
  EXPECT_EQ(bufs[0].cache_dim(), 63);
  check("after realignment to AR-1");
  for (int i = 0; i < 40; ++i) add(1);
  check("after 40 decodes");
  // What each costs: shift_concat moves the whole window every step;
  // pointer_shift and smart_mask copy only the new entries (pointer_shift
  // re-packs only when a sliding window runs it out of slack, issue 4).
  EXPECT_GT(bufs[0].bytes_moved(), 4 * bufs[1].bytes_moved());
  EXPECT_EQ(bufs[1].bytes_moved(), bufs[2].bytes_moved());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GenieModes,
                         ::testing::Values(Case{"fp32", KvDtype::fp32, 1e-5f},
                                           Case{"fp16", KvDtype::fp16, 2e-3f},
                                           Case{"int8", KvDtype::int8, 2e-2f}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(GenieBuffer, KeyIsTransposedAndLeftPadded) {
  GenieKvBuffer b(8, 1, 2, KvDtype::fp32, GenieUpdateMode::shift_concat, 4);  // cache_dim 4
  const float k[4] = {1, 2, 3, 4}, v[4] = {5, 6, 7, 8};
  b.append(k, v, 2);
  EXPECT_FALSE(b.column_valid(1));
  EXPECT_TRUE(b.column_valid(2));
  EXPECT_EQ(b.key(0, 0, 2), 1);  // token 0, dim 0
  EXPECT_EQ(b.key(0, 1, 3), 4);  // token 1, dim 1
  EXPECT_EQ(b.value(0, 3, 0), 7);
  EXPECT_EQ(b.key(0, 0, 0), 0);  // pad
  EXPECT_THROW(b.append(k, v, 3), std::length_error);
}

TEST(GenieBuffer, Int8PadsWithTheOffset) {
  const Int8Params p{0.01f, -100};
  GenieKvBuffer b(8, 1, 2, KvDtype::int8, GenieUpdateMode::pointer_shift, 1, p);
  EXPECT_EQ(b.pad_byte(), 100);
  EXPECT_EQ(b.key(0, 0, 0), 0.0f);
}

}  // namespace
}  // namespace kvsim::kernels
