// Genie's buffer update modes (seed 002): SHIFT_CONCAT, POINTER_SHIFT and
// SMART_MASK give the same attention as each other and as dense attention
// over the same history; variant realignment keeps the content; int8 pads
// with the quantisation offset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

#include "kernels/attention.hpp"
#include "kernels/genie_kv_buffer.hpp"

namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE {
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
  // re-packs only when a sliding window runs it out of slack).
  EXPECT_GT(bufs[0].bytes_moved(), 4 * bufs[1].bytes_moved());
  EXPECT_EQ(bufs[1].bytes_moved(), bufs[2].bytes_moved());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GenieModes,
                         ::testing::Values(Case{"fp32", KvDtype::fp32, 1e-5f},
                                           Case{"fp16", KvDtype::fp16, 2e-3f},
                                           Case{"int8", KvDtype::int8, 2e-2f}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// A naive history (a deque of entries, oldest first) against the buffer
// after random appends, rewinds, evictions, variant switches and clears:
// the valid columns read back in age order are exactly the history, and
// attention equals dense attention over it.
class GenieOps : public ::testing::TestWithParam<GenieUpdateMode> {};

TEST_P(GenieOps, RewindEvictSwitchClearMatchANaiveHistory_ctx48_h2_d4) {
  const int64_t n_ctx = 48, heads = 2, d = 4, q_heads = 4;
  const int64_t variants[] = {1, 4, 16};
  std::mt19937 rng(17);
  GenieKvBuffer b(n_ctx, heads, d, KvDtype::fp32, GetParam(), 16, {}, 16);
  std::deque<std::vector<float>> hist_k, hist_v;  // one entry: [heads, d]
  auto verify = [&](int step) {
    ASSERT_EQ(b.n_valid(), static_cast<int64_t>(hist_k.size())) << step;
    std::vector<int64_t> cols;
    for (int64_t col = 0; col < b.cache_dim(); ++col)
      if (b.column_valid(col)) cols.push_back(col);
    ASSERT_EQ(cols.size(), hist_k.size()) << step;
    // Age order: left to right, except smart_mask's ring that starts at ring_start.
    std::rotate(cols.begin(),
                std::find_if(cols.begin(), cols.end(),
                             [&](int64_t c) { return c >= b.ring_start(); }) == cols.end()
                    ? cols.begin()
                    : std::find_if(cols.begin(), cols.end(),
                                   [&](int64_t c) { return c >= b.ring_start(); }),
                cols.end());
    for (size_t i = 0; i < cols.size(); ++i)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t c = 0; c < d; ++c) {
          ASSERT_EQ(b.key(h, c, cols[i]), hist_k[i][static_cast<size_t>(h * d + c)]) << step;
          ASSERT_EQ(b.value(h, cols[i], c), hist_v[i][static_cast<size_t>(h * d + c)]) << step;
        }
    if (hist_k.empty()) return;
    std::vector<float> k, v;
    for (size_t i = 0; i < hist_k.size(); ++i) {
      k.insert(k.end(), hist_k[i].begin(), hist_k[i].end());
      v.insert(v.end(), hist_v[i].begin(), hist_v[i].end());
    }
    const auto q = random_vec(rng, q_heads * d);
    std::vector<float> ref(q.size()), out(q.size());
    dense_attention_reference(q.data(), 1, k.data(), v.data(), static_cast<int64_t>(hist_k.size()),
                              q_heads, heads, d, 0.5f, ref.data());
    b.attend(q.data(), q_heads, 0.5f, out.data());
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], 1e-5f) << step;
  };
  for (int step = 0; step < 400; ++step) {
    const int op = std::uniform_int_distribution<int>(0, 9)(rng);
    const auto held = static_cast<int64_t>(hist_k.size());
    if (op <= 4) {  // append up to the room left
      const int64_t room = b.cache_dim() - held;
      if (room == 0) continue;
      const int64_t n = std::uniform_int_distribution<int64_t>(1, std::min<int64_t>(room, 6))(rng);
      const auto k = random_vec(rng, static_cast<size_t>(n * heads * d));
      const auto v = random_vec(rng, k.size());
      b.append(k.data(), v.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        hist_k.emplace_back(k.begin() + i * heads * d, k.begin() + (i + 1) * heads * d);
        hist_v.emplace_back(v.begin() + i * heads * d, v.begin() + (i + 1) * heads * d);
      }
    } else if (op == 5 || op == 6) {  // rewind the newest
      const int64_t n = std::uniform_int_distribution<int64_t>(0, std::min<int64_t>(held, 5))(rng);
      b.rewind(n);
      for (int64_t i = 0; i < n; ++i) hist_k.pop_back(), hist_v.pop_back();
    } else if (op == 7) {  // evict the oldest
      const int64_t n = std::uniform_int_distribution<int64_t>(0, std::min<int64_t>(held, 5))(rng);
      b.evict_oldest(n);
      for (int64_t i = 0; i < n; ++i) hist_k.pop_front(), hist_v.pop_front();
    } else if (op == 8) {  // another variant, if the entries fit its cache dim
      const int64_t v = variants[std::uniform_int_distribution<int>(0, 2)(rng)];
      if (held > n_ctx - v) continue;
      b.switch_variant(v);
    } else if (std::uniform_int_distribution<int>(0, 5)(rng) == 0) {
      b.clear();
      hist_k.clear();
      hist_v.clear();
    }
    verify(step);
  }
}

TEST_P(GenieOps, BytesOfEachOperationFollowTheMode_ctx32_h1_d2) {
  // One head, head_dim 2, fp32: a column is 2 (K, V) x 2 dims x 4 bytes = 16 bytes.
  const GenieUpdateMode mode = GetParam();
  GenieKvBuffer b(32, 1, 2, KvDtype::fp32, mode, 1, {}, 16);  // cache dim 31, rows of 48
  std::vector<float> k(40, 0.5f), v(40, 0.25f);
  const uint64_t col = 16;
  b.append(k.data(), v.data(), 10);
  EXPECT_EQ(b.bytes_moved(), 10 * col);  // no kept entries yet: the copy only
  uint64_t before = b.bytes_moved();
  b.append(k.data(), v.data(), 1);
  const uint64_t shift = mode == GenieUpdateMode::shift_concat ? 10 * col : 0;
  EXPECT_EQ(b.bytes_moved() - before, shift + col);
  before = b.bytes_moved();
  b.rewind(3);  // 11 -> 8
  EXPECT_EQ(b.bytes_moved() - before,
            mode == GenieUpdateMode::shift_concat ? 8 * col + 3 * col : 0);
  before = b.bytes_moved();
  b.evict_oldest(2);  // 8 -> 6
  EXPECT_EQ(b.bytes_moved() - before, mode == GenieUpdateMode::shift_concat ? 2 * col : 0);
  if (mode == GenieUpdateMode::pointer_shift) {
    // Offset 11 - 3 = 8; the view of 31 columns in rows of 48 slides 9 more.
    EXPECT_EQ(b.view_offset(), 8);
    before = b.bytes_moved();
    b.append(k.data(), v.data(), 10);  // 8 + 31 + 10 > 48: compaction of the 6 valid columns
    EXPECT_EQ(b.bytes_moved() - before, 6 * col + 10 * col);
    EXPECT_EQ(b.view_offset(), 10);
  }
  before = b.bytes_moved();
  const int64_t held = b.n_valid();
  b.switch_variant(16);
  EXPECT_EQ(b.bytes_moved() - before, static_cast<uint64_t>(held) * col);
  before = b.bytes_moved();
  b.clear();
  EXPECT_EQ(b.bytes_moved() - before,
            mode == GenieUpdateMode::shift_concat ? static_cast<uint64_t>(held) * col : 0);
  EXPECT_EQ(b.n_valid(), 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, GenieOps,
                         ::testing::Values(GenieUpdateMode::shift_concat,
                                           GenieUpdateMode::pointer_shift,
                                           GenieUpdateMode::smart_mask),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case GenieUpdateMode::shift_concat:
                               return std::string("shift_concat");
                             case GenieUpdateMode::pointer_shift:
                               return std::string("pointer_shift");
                             default:
                               return std::string("smart_mask");
                           }
                         });

TEST_P(GenieOps, PassAttendsToTheCacheAndItsOwnNewEntries_ctx40_h2_d8) {
  // An AR-n pass reads the past from the cache and its own K/V from the
  // output buffer, causally: query i sees the cache plus new entries 0..i.
  const int64_t heads = 2, d = 8, q_heads = 6, n_new = 5;
  std::mt19937 rng(23);
  GenieKvBuffer b(40, heads, d, KvDtype::fp32, GetParam(), 8);
  const auto past_k = random_vec(rng, static_cast<size_t>(20 * heads * d));
  const auto past_v = random_vec(rng, past_k.size());
  b.append(past_k.data(), past_v.data(), 20);
  b.rewind(3);  // 17 valid, and (smart_mask, shift_concat) stale or padded columns around them
  const auto new_k = random_vec(rng, static_cast<size_t>(n_new * heads * d));
  const auto new_v = random_vec(rng, new_k.size());
  for (int64_t i = 0; i < n_new; ++i) {
    std::vector<float> k(past_k.begin(), past_k.begin() + 17 * heads * d);
    std::vector<float> v(past_v.begin(), past_v.begin() + 17 * heads * d);
    k.insert(k.end(), new_k.begin(), new_k.begin() + (i + 1) * heads * d);
    v.insert(v.end(), new_v.begin(), new_v.begin() + (i + 1) * heads * d);
    const auto q = random_vec(rng, q_heads * d);
    std::vector<float> ref(q.size()), out(q.size());
    dense_attention_reference(q.data(), 1, k.data(), v.data(), 18 + i, q_heads, heads, d, 0.35f,
                              ref.data());
    b.attend(q.data(), q_heads, 0.35f, out.data(), new_k.data(), new_v.data(), i + 1);
    for (size_t j = 0; j < out.size(); ++j) ASSERT_NEAR(out[j], ref[j], 1e-5f) << i;
  }
}

TEST(GenieBuffer, Int8RewindPadsWithTheOffset) {
  // shift_concat's rewind memsets the freed columns to the pad value (seed
  // 002): with INT8 KV that is the quantisation offset, which reads as 0.0.
  const Int8Params p{0.01f, -100};
  GenieKvBuffer b(8, 1, 1, KvDtype::int8, GenieUpdateMode::shift_concat, 1, p);  // cache dim 7
  const float k[3] = {0.5f, -0.3f, 0.2f}, v[3] = {0.1f, 0.2f, 0.3f};
  b.append(k, v, 3);
  EXPECT_NEAR(b.key(0, 0, 4), 0.5f, 0.01f);
  b.rewind(2);
  EXPECT_NEAR(b.key(0, 0, 6), 0.5f, 0.01f);  // the kept oldest moved right
  EXPECT_EQ(b.key(0, 0, 4), 0.0f);           // pad = offset = 0.0
  EXPECT_EQ(b.key(0, 0, 5), 0.0f);
  EXPECT_EQ(b.n_valid(), 1);
}

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
}  // namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE
