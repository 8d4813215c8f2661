// RoPE in both conventions against a naive complex rotation, re-rotation by
// a delta against rotation at the target position (seed 003's remap), and
// the chunk-isolated mask of seed 003.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>

#include "kernels/attention.hpp"
#include "kernels/chunk_mask.hpp"
#include "kernels/rope.hpp"

namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE {
namespace {

std::vector<float> random_vec(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

TEST(Rope, BothStylesEqualNaiveComplexRotation_h3_d8) {
  std::mt19937 rng(1);
  const int64_t heads = 3, d = 8, pos = 37;
  for (RopeStyle style : {RopeStyle::adjacent_pairs, RopeStyle::rotate_half}) {
    auto x = random_vec(rng, heads * d);
    auto y = x;
    apply_rope(y.data(), heads, d, pos, 10000.0f, style);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < d / 2; ++i) {
        const int64_t a = style == RopeStyle::adjacent_pairs ? 2 * i : i;
        const int64_t b = style == RopeStyle::adjacent_pairs ? 2 * i + 1 : i + d / 2;
        const double angle = pos * std::pow(10000.0, -2.0 * i / d);
        const std::complex<double> z(x[h * d + a], x[h * d + b]);
        const auto r = z * std::polar(1.0, angle);
        EXPECT_NEAR(y[h * d + a], r.real(), 1e-5);
        EXPECT_NEAR(y[h * d + b], r.imag(), 1e-5);
      }
  }
}

TEST(Rope, RerotationByDeltaEqualsRotationAtTargetPosition) {
  std::mt19937 rng(2);
  for (RopeStyle style : {RopeStyle::adjacent_pairs, RopeStyle::rotate_half}) {
    for (auto [from, to] : {std::pair<int64_t, int64_t>{5, 300}, {1000, 40}, {0, 4095}}) {
      const auto x = random_vec(rng, 2 * 64);
      auto cached = x, direct = x;
      apply_rope(cached.data(), 2, 64, from, 500000.0f, style);  // cached at the chunk's position
      rerotate_rope(cached.data(), 2, 64, to - from, 500000.0f, style);  // remapped
      apply_rope(direct.data(), 2, 64, to, 500000.0f, style);
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_NEAR(cached[i], direct[i], 2e-4) << from << "->" << to;
    }
  }
}

TEST(ChunkMask, SystemPromptCausalChunksIsolatedQuestionSeesAll) {
  // sys sys | chunk0 chunk0 | chunk1 chunk1 | question question
  const std::vector<int32_t> ids{-1, -1, 0, 0, 1, 1, -2, -2};
  const auto m = chunk_isolated_mask(ids);
  auto at = [&](int i, int j) { return m[static_cast<size_t>(i * 8 + j)]; };
  EXPECT_EQ(at(1, 0), 1);
  EXPECT_EQ(at(0, 1), 0);  // causal
  EXPECT_EQ(at(3, 0), 1);  // chunk sees the system prompt
  EXPECT_EQ(at(3, 2), 1);  // and its own chunk
  EXPECT_EQ(at(4, 3), 0);  // never another chunk
  EXPECT_EQ(at(5, 2), 0);
  EXPECT_EQ(at(5, 4), 1);
  for (int j = 0; j <= 6; ++j) EXPECT_EQ(at(6, j), 1);  // the question sees everything before it
  EXPECT_EQ(at(6, 7), 0);
}

TEST(ChunkMask, MaskedAttentionOfAChunkEqualsAttentionOverSystemPromptPlusChunk) {
  // A chunk computed alone after the system prompt (what the chunk cache
  // stores) gives the same output as inside the full sequence under the mask.
  std::mt19937 rng(4);
  const std::vector<int32_t> ids{-1, -1, -1, 0, 0, 1, 1, 1, -2};
  const int64_t n = 9, d = 8;
  const auto q = random_vec(rng, n * d), k = random_vec(rng, n * d), v = random_vec(rng, n * d);
  const auto mask = chunk_isolated_mask(ids);
  std::vector<float> full(n * d);
  dense_attention_reference(q.data(), n, k.data(), v.data(), n, 1, 1, d, 0.35f, full.data(),
                            mask.data());
  // chunk 1 alone: system prompt (0..2) + chunk 1 (5..7), causal.
  const std::vector<int> keep{0, 1, 2, 5, 6, 7};
  std::vector<float> qs, ks, vs;
  for (int i : keep) {
    qs.insert(qs.end(), q.begin() + i * d, q.begin() + (i + 1) * d);
    ks.insert(ks.end(), k.begin() + i * d, k.begin() + (i + 1) * d);
    vs.insert(vs.end(), v.begin() + i * d, v.begin() + (i + 1) * d);
  }
  std::vector<float> alone(6 * d);
  dense_attention_reference(qs.data(), 6, ks.data(), vs.data(), 6, 1, 1, d, 0.35f, alone.data());
  for (int r = 3; r < 6; ++r)
    for (int c = 0; c < d; ++c)
      EXPECT_NEAR(alone[static_cast<size_t>(r * d + c)],
                  full[static_cast<size_t>(keep[static_cast<size_t>(r)] * d + c)], 1e-6);
}

}  // namespace
}  // namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE
