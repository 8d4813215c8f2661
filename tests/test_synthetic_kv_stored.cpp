// The sampled checker's fused row path (synthetic_kv_rows_stored: rows
// made, rotated, encoded and decoded without scratch rows) against the
// passes it replaces, synthetic_kv_rows then encode_row_stored, bit for
// bit: random token ids (negative ones too), runs of 1 to 129 tokens (under,
// at and past the path's own runs of 32), several head counts, both RoPE
// styles, positions from 0 and far into the table. ctest runs this suite
// again with KVSIM_NO_AVX512=1, where the fused path is taken on a machine
// with AVX-512 as well.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu_features.hpp"
#include "kernels/kv_dtype.hpp"
#include "sim/numerics/synthetic_kv.hpp"

namespace kvsim::numerics::KVSIM_TEST_FILE_SCOPE {
namespace {

// Whether this machine and environment take the fused fp16 path (the AVX2
// paths with F16C): elsewhere the function must decline and write nothing.
bool fused_path_expected() {
#if defined(__x86_64__)
  return !kernels::cpu_has_avx512() && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma") && kernels::cpu_has_f16c();
#else
  return false;
#endif
}

struct Stored {
  std::vector<uint16_t> k_half, v_half;
  std::vector<float> k, v;
  explicit Stored(size_t n) : k_half(n, 0xAAAA), v_half(n, 0xAAAA), k(n, -7.0f), v(n, -7.0f) {}
};

void expect_same_bits(const Stored& got, const Stored& want, const char* what) {
  ASSERT_EQ(got.k.size(), want.k.size());
  EXPECT_EQ(got.k_half, want.k_half) << what;
  EXPECT_EQ(got.v_half, want.v_half) << what;
  EXPECT_EQ(std::memcmp(got.k.data(), want.k.data(), got.k.size() * sizeof(float)), 0) << what;
  EXPECT_EQ(std::memcmp(got.v.data(), want.v.data(), got.v.size() * sizeof(float)), 0) << what;
}

TEST(SyntheticKvStored, FusedFp16RowsAreTheSeparatePassesBits) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> id(INT32_MIN, INT32_MAX);
  int fused = 0;
  for (kernels::RopeStyle style :
       {kernels::RopeStyle::rotate_half, kernels::RopeStyle::adjacent_pairs}) {
    for (int64_t heads : {1, 2, 3, 4}) {
      for (int64_t n : {1, 2, 7, 8, 31, 32, 33, 128, 129}) {
        for (int64_t first : {int64_t{0}, int64_t{5}, int64_t{1000}, int64_t{70000}}) {
          SyntheticShape sh;
          sh.kv_heads = heads;
          sh.head_dim = 16;
          sh.rope_style = style;
          sh.values_per_hash = 2;
          const int64_t layer = n % 3;
          std::vector<int32_t> tokens(static_cast<size_t>(n));
          for (auto& t : tokens) t = id(rng);
          const auto size = static_cast<size_t>(n * heads * sh.head_dim);
          // The separate passes, on their own table.
          kernels::RopeTable rope_a(sh.head_dim, sh.rope_theta, style);
          std::vector<float> k(size), v(size);
          synthetic_kv_rows(sh, tokens.data(), n, first, layer, k.data(), v.data(), &rope_a);
          Stored want(size);
          kernels::encode_row_stored(kernels::KvDtype::fp16, k.data(), static_cast<int64_t>(size),
                                     want.k_half.data(), want.k.data());
          kernels::encode_row_stored(kernels::KvDtype::fp16, v.data(), static_cast<int64_t>(size),
                                     want.v_half.data(), want.v.data());
          // The fused pass, on a fresh table (it grows it itself).
          kernels::RopeTable rope_b(sh.head_dim, sh.rope_theta, style);
          Stored got(size);
          const Stored untouched(size);
          const bool took = synthetic_kv_rows_stored(sh, tokens.data(), n, first, layer, rope_b,
                                                     kernels::KvDtype::fp16, got.k_half.data(),
                                                     got.v_half.data(), got.k.data(), got.v.data());
          EXPECT_EQ(took, fused_path_expected());
          if (!took) {
            expect_same_bits(got, untouched, "declined, yet wrote");
            continue;
          }
          ++fused;
          expect_same_bits(got, want, "fused");
        }
      }
    }
  }
  EXPECT_EQ(fused, fused_path_expected() ? 2 * 4 * 9 * 4 : 0);
}

// Shapes and dtypes without a fused path are declined, untouched: heads of
// another width, one value per hash, other dtypes, negative positions.
TEST(SyntheticKvStored, OtherShapesAndDtypesAreDeclined) {
  const std::vector<int32_t> tokens{3, 1, 4, 1, 5};
  const int64_t n = 5;
  struct Case {
    int64_t head_dim;
    int values_per_hash;
    kernels::KvDtype dtype;
    int64_t first;
  };
  for (const Case c :
       {Case{8, 2, kernels::KvDtype::fp16, 0}, Case{32, 2, kernels::KvDtype::fp16, 0},
        Case{16, 1, kernels::KvDtype::fp16, 0}, Case{16, 2, kernels::KvDtype::bf16, 0},
        Case{16, 2, kernels::KvDtype::int8, 0}, Case{16, 2, kernels::KvDtype::fp32, 0},
        Case{16, 2, kernels::KvDtype::fp16, -3}}) {
    SyntheticShape sh;
    sh.head_dim = c.head_dim;
    sh.values_per_hash = c.values_per_hash;
    kernels::RopeTable rope(sh.head_dim, sh.rope_theta, sh.rope_style);
    const auto size = static_cast<size_t>(n * sh.kv_heads * sh.head_dim);
    Stored got(size);
    const Stored untouched(size);
    EXPECT_FALSE(synthetic_kv_rows_stored(sh, tokens.data(), n, c.first, 0, rope, c.dtype,
                                          got.k_half.data(), got.v_half.data(), got.k.data(),
                                          got.v.data()));
    expect_same_bits(got, untouched, "declined, yet wrote");
  }
}

}  // namespace
}  // namespace kvsim::numerics::KVSIM_TEST_FILE_SCOPE
