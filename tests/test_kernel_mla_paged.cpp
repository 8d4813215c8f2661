// Latent-attention decode over a paged latent cache (one latent + RoPE-key
// row per token, blocks placed by a block table as vLLM allocates them),
// against the dense, decompressed reference read through the same block
// table; and the storage error of fp16 / bf16 / fp8 latent caches against
// the unquantised latents. Each case is named by its shape and dtype
// (DESIGN practice 11).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/kv_dtype.hpp"
#include "kernels/kv_pool.hpp"
#include "kernels/mla_decode.hpp"

namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE {
namespace {

std::vector<float> random_vec(std::mt19937& rng, size_t n, float spread = 1.0f) {
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct PagedCase {
  const char* name;
  MlaDims dims;
  int64_t tokens;
  int64_t block_tokens;
  KvDtype dtype;
  float kernel_tolerance;   // absorbed vs decompressed, both over the stored rows
  float storage_tolerance;  // stored rows vs the unquantised latents, same kernel
};

class MlaPagedDecode : public ::testing::TestWithParam<PagedCase> {};

TEST_P(MlaPagedDecode, AbsorbedOverBlocksMatchesDecompressedReference) {
  const PagedCase& c = GetParam();
  const MlaDims& d = c.dims;
  std::mt19937 rng(23);
  const auto h = static_cast<size_t>(d.heads);
  const auto r = static_cast<size_t>(d.kv_lora_rank);
  const auto rope = static_cast<size_t>(d.qk_rope_head_dim);
  const auto t = static_cast<size_t>(c.tokens);
  const auto q_nope = random_vec(rng, h * static_cast<size_t>(d.qk_nope_head_dim));
  const auto q_rope = random_vec(rng, h * rope);
  const auto latent = random_vec(rng, t * r);
  const auto k_rope = random_vec(rng, t * rope);
  const float w_spread = 1.0f / std::sqrt(static_cast<float>(r));
  const auto w_uk = random_vec(rng, h * static_cast<size_t>(d.qk_nope_head_dim) * r, w_spread);
  const auto w_uv = random_vec(rng, h * static_cast<size_t>(d.v_head_dim) * r, w_spread);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.qk_nope_head_dim + d.qk_rope_head_dim));

  // A pool twice the sequence's size, its blocks handed out shuffled.
  const int64_t blocks = (c.tokens + c.block_tokens - 1) / c.block_tokens;
  KvPool pool(2 * blocks, 1, c.block_tokens, 1, d.kv_lora_rank + d.qk_rope_head_dim, c.dtype);
  std::vector<int32_t> all(static_cast<size_t>(2 * blocks));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  const std::vector<int32_t> table(all.begin(), all.begin() + blocks);
  std::vector<float> row(r + rope);
  for (size_t i = 0; i < t; ++i) {
    std::copy(latent.begin() + static_cast<std::ptrdiff_t>(i * r),
              latent.begin() + static_cast<std::ptrdiff_t>((i + 1) * r), row.begin());
    std::copy(k_rope.begin() + static_cast<std::ptrdiff_t>(i * rope),
              k_rope.begin() + static_cast<std::ptrdiff_t>((i + 1) * rope),
              row.begin() + static_cast<std::ptrdiff_t>(r));
    const auto ti = static_cast<int64_t>(i);
    pool.write_row(table[static_cast<size_t>(ti / c.block_tokens)], KvPart::key, 0,
                   ti % c.block_tokens, 0, row.data());
  }

  std::vector<float> got(h * static_cast<size_t>(d.v_head_dim)), want(got.size()),
      exact(got.size());
  mla_decode_absorbed_paged(d, q_nope.data(), q_rope.data(), pool, 0, table, c.tokens, w_uk.data(),
                            w_uv.data(), scale, got.data());
  // The reference decompresses K and V per head from the same stored rows.
  std::vector<float> stored_latent(t * r), stored_rope(t * rope);
  gather_latent_rows(pool, 0, table, c.tokens, d.kv_lora_rank, stored_latent.data(),
                     stored_rope.data());
  mla_decode_reference(d, q_nope.data(), q_rope.data(), stored_latent.data(), stored_rope.data(),
                       c.tokens, w_uk.data(), w_uv.data(), scale, want.data());
  // And from the latents before storage: what the cache dtype costs.
  mla_decode_reference(d, q_nope.data(), q_rope.data(), latent.data(), k_rope.data(), c.tokens,
                       w_uk.data(), w_uv.data(), scale, exact.data());
  double kernel_err = 0, storage_err = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    kernel_err = std::max(kernel_err, static_cast<double>(std::fabs(got[i] - want[i])));
    storage_err = std::max(storage_err, static_cast<double>(std::fabs(got[i] - exact[i])));
  }
  EXPECT_LE(kernel_err, c.kernel_tolerance) << c.name;
  EXPECT_LE(storage_err, c.storage_tolerance) << c.name;
  RecordProperty("storage_max_abs_error", std::to_string(storage_err));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MlaPagedDecode,
    ::testing::Values(PagedCase{"h4_r32_nope16_rope8_v16_t77_bt16_fp16",
                                {4, 32, 16, 8, 16},
                                77,
                                16,
                                KvDtype::fp16,
                                2e-5f,
                                2e-3f},
                      PagedCase{"h4_r32_nope16_rope8_v16_t77_bt16_bf16",
                                {4, 32, 16, 8, 16},
                                77,
                                16,
                                KvDtype::bf16,
                                2e-5f,
                                2e-2f},
                      PagedCase{"h4_r32_nope16_rope8_v16_t77_bt16_fp8e4m3",
                                {4, 32, 16, 8, 16},
                                77,
                                16,
                                KvDtype::fp8_e4m3,
                                2e-5f,
                                1e-1f},
                      PagedCase{"h4_r32_nope16_rope8_v16_t77_bt16_fp8e5m2",
                                {4, 32, 16, 8, 16},
                                77,
                                16,
                                KvDtype::fp8_e5m2,
                                2e-5f,
                                2e-1f},
                      // DeepSeek-V3's per-head dimensions, two heads, 128-token blocks.
                      PagedCase{"h2_r512_nope128_rope64_v128_t300_bt128_bf16",
                                {2, 512, 128, 64, 128},
                                300,
                                128,
                                KvDtype::bf16,
                                5e-5f,
                                2e-2f},
                      PagedCase{"h2_r512_nope128_rope64_v128_t300_bt128_fp8e4m3",
                                {2, 512, 128, 64, 128},
                                300,
                                128,
                                KvDtype::fp8_e4m3,
                                5e-5f,
                                1e-1f}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(MlaPagedDecode, RejectsATableThatDoesNotCoverTheTokens) {
  KvPool pool(4, 1, 16, 1, 40, KvDtype::fp16);
  const MlaDims d{1, 32, 8, 8, 8};
  std::vector<float> x(1024), out(8);
  EXPECT_THROW(mla_decode_absorbed_paged(d, x.data(), x.data(), pool, 0, {0}, 17, x.data(),
                                         x.data(), 1.0f, out.data()),
               std::invalid_argument);
}

// fp8 rows in the paged pool: one scale per (token, head) row kept beside the
// row as int8's parameters are, so a block swapped out and back in decodes
// the same, and the stored error stays within the format's mantissa step.
TEST(Fp8KvPool, RowsRoundTripWithTheirScaleThroughASwap) {
  for (KvDtype t : {KvDtype::fp8_e4m3, KvDtype::fp8_e5m2}) {
    KvPool pool(2, 1, 4, 2, 16, t);
    std::mt19937 rng(3);
    const auto row = random_vec(rng, 16, 3.0f);
    pool.write_row(1, KvPart::value, 0, 2, 1, row.data());
    std::vector<float> back(16), again(16);
    pool.read_row(1, KvPart::value, 0, 2, 1, back.data());
    float amax = 0;
    for (float x : row) amax = std::max(amax, std::fabs(x));
    const float step = t == KvDtype::fp8_e4m3 ? 1.0f / 16 : 1.0f / 8;
    for (size_t i = 0; i < row.size(); ++i)
      EXPECT_LE(std::fabs(back[i] - row[i]), step * std::max(std::fabs(row[i]), amax / 64))
          << kv_dtype_name(t);
    std::vector<uint8_t> bytes;
    std::vector<Int8Params> params;
    pool.copy_block_out(1, bytes, params);
    pool.copy_block_in(0, bytes, params);
    pool.read_row(0, KvPart::value, 0, 2, 1, again.data());
    EXPECT_EQ(back, again) << kv_dtype_name(t);
  }
  EXPECT_EQ(parse_kv_dtype("fp8"), KvDtype::fp8_e4m3) << "vLLM's fp8 means e4m3";
  EXPECT_EQ(kv_dtype_bytes(KvDtype::fp8_e5m2), 1);
}

}  // namespace
}  // namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE
