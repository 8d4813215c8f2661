// Paged attention kernels against the naive dense reference: varlen prefill
// (with and without prefix-cache keys), decode, every storage type, GQA;
// store_kvcache by slot mapping; the ATB view against the Ksana view.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "kernels/attention.hpp"
#include "kernels/store_kvcache.hpp"

namespace kvsim::kernels {
namespace {

struct Shape {
  const char* name;
  int64_t q_heads, kv_heads, head_dim, block_tokens;
  std::vector<int32_t> q_lens, k_lens;  // per sequence
  KvDtype dtype;
  float tolerance;  // against the reference on round-tripped K/V: summation order only
};

// Names the case in test output instead of dumping its bytes.
void PrintTo(const Shape& s, std::ostream* os) {
  *os << s.name;
}

std::vector<float> random_vec(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Fills a pool with each sequence's K/V through shuffled block tables and
// checks paged attention against the dense reference per sequence.
void run_case(const Shape& s, bool decode) {
  std::mt19937 rng(1234);
  const size_t nseq = s.k_lens.size();
  int64_t blocks_needed = 0;
  for (int32_t k : s.k_lens) blocks_needed += (k + s.block_tokens - 1) / s.block_tokens;
  KvPool pool(blocks_needed + 3, 2, s.block_tokens, s.kv_heads, s.head_dim, s.dtype);
  std::vector<int32_t> ids(static_cast<size_t>(pool.num_blocks()));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);  // non-contiguous, out-of-order tables
  std::vector<std::vector<int32_t>> tables(nseq);
  size_t next = 0;
  const int64_t krow = s.kv_heads * s.head_dim, qrow = s.q_heads * s.head_dim;
  std::vector<std::vector<float>> ks(nseq), vs(nseq);
  const int64_t layer = 1;
  for (size_t i = 0; i < nseq; ++i) {
    const int64_t k = s.k_lens[i];
    for (int64_t b = 0; b < (k + s.block_tokens - 1) / s.block_tokens; ++b)
      tables[i].push_back(ids[next++]);
    ks[i] = random_vec(rng, static_cast<size_t>(k * krow));
    vs[i] = random_vec(rng, static_cast<size_t>(k * krow));
    store_kvcache(pool, layer, ks[i].data(), vs[i].data(),
                  slot_mapping_for(tables[i], s.block_tokens, 0, k));
    // The reference sees what storage keeps.
    for (int64_t r = 0; r < k * s.kv_heads; ++r) {
      round_trip_row(s.dtype, ks[i].data() + r * s.head_dim, s.head_dim,
                     ks[i].data() + r * s.head_dim);
      round_trip_row(s.dtype, vs[i].data() + r * s.head_dim, s.head_dim,
                     vs[i].data() + r * s.head_dim);
    }
  }
  std::vector<int32_t> cu{0};
  for (size_t i = 0; i < nseq; ++i) cu.push_back(cu.back() + (decode ? 1 : s.q_lens[i]));
  const auto q = random_vec(rng, static_cast<size_t>(cu.back() * qrow));
  std::vector<float> out(q.size());
  std::vector<std::span<const int32_t>> spans(tables.begin(), tables.end());
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  if (decode) {
    paged_decode_attention(pool, layer, q.data(), s.k_lens, spans, s.q_heads, scale, out.data());
  } else {
    paged_varlen_attention(pool, layer, q.data(), cu, s.k_lens, spans, s.q_heads, scale,
                           out.data());
  }
  for (size_t i = 0; i < nseq; ++i) {
    const int64_t nq = cu[i + 1] - cu[i];
    std::vector<float> ref(static_cast<size_t>(nq * qrow));
    dense_attention_reference(q.data() + cu[i] * qrow, nq, ks[i].data(), vs[i].data(), s.k_lens[i],
                              s.q_heads, s.kv_heads, s.head_dim, scale, ref.data());
    float err = 0;
    for (size_t j = 0; j < ref.size(); ++j)
      err = std::max(err, std::fabs(ref[j] - out[static_cast<size_t>(cu[i] * qrow) + j]));
    EXPECT_LE(err, s.tolerance) << s.name << " sequence " << i;
  }
}

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {
      {"hq4_hkv4_d16_bt1_fp32", 4, 4, 16, 1, {5, 1}, {5, 9}, KvDtype::fp32, 2e-6f},
      {"hq8_hkv2_d32_bt16_fp32_prefix_hit",
       8,
       2,
       32,
       16,
       {7, 40, 1},
       {70, 40, 33},
       KvDtype::fp32,
       2e-6f},
      {"hq8_hkv4_d64_bt16_fp16", 8, 4, 64, 16, {17, 3}, {17, 130}, KvDtype::fp16, 2e-6f},
      {"hq6_hkv2_d24_bt8_bf16", 6, 2, 24, 8, {9, 70}, {31, 100}, KvDtype::bf16, 2e-6f},
      {"hq4_hkv1_d16_bt32_int8", 4, 1, 16, 32, {33, 2}, {90, 2}, KvDtype::int8, 2e-6f},
      {"hq32_hkv8_d128_bt128_fp16", 32, 8, 128, 128, {70}, {300}, KvDtype::fp16, 2e-6f},
  };
  return all;
}

class PagedAttention : public ::testing::TestWithParam<Shape> {};

TEST_P(PagedAttention, VarlenPrefillEqualsDense) {
  run_case(GetParam(), false);
}
TEST_P(PagedAttention, DecodeEqualsDense) {
  run_case(GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(Shapes, PagedAttention, ::testing::ValuesIn(shapes()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(DenseReference, OneKeyReturnsItsValueAndEqualScoresAverage) {
  const float q[2] = {1, 0}, k[4] = {0, 0, 0, 0}, v[4] = {1, 2, 3, 4};
  float out[2];
  dense_attention_reference(q, 1, k, v, 1, 1, 1, 2, 1.0f, out);  // sees key 0 only
  EXPECT_FLOAT_EQ(out[0], 1);
  EXPECT_FLOAT_EQ(out[1], 2);
  dense_attention_reference(q, 1, k, v, 2, 1, 1, 2, 1.0f, out);  // both keys, equal scores
  EXPECT_FLOAT_EQ(out[0], 2);
  EXPECT_FLOAT_EQ(out[1], 3);
}

TEST(StoreKvcache, SkipsSlotMinusOneAndWritesTheMappedSlot) {
  KvPool pool(2, 1, 4, 1, 2, KvDtype::fp32);
  const float k[6] = {1, 2, 3, 4, 5, 6}, v[6] = {7, 8, 9, 10, 11, 12};
  const int64_t slots[3] = {5, -1, 2};  // block 1 row 1; skipped; block 0 row 2
  store_kvcache(pool, 0, k, v, slots);
  float r[2];
  pool.read_row(1, KvPart::key, 0, 1, 0, r);
  EXPECT_EQ(r[0], 1);
  pool.read_row(0, KvPart::value, 0, 2, 0, r);
  EXPECT_EQ(r[1], 12);
  int written = 0;  // rows holding anything: token 0 (K and V) and token 2 (K and V)
  for (int64_t b = 0; b < 2; ++b)
    for (KvPart part : {KvPart::key, KvPart::value})
      for (int64_t t = 0; t < 4; ++t) {
        pool.read_row(b, part, 0, t, 0, r);
        written += r[0] != 0 || r[1] != 0;
      }
  EXPECT_EQ(written, 4);
}

TEST(KvPoolViews, AtbViewReadsTheSameBytesAsKsanaForRandomBlocks) {
  std::mt19937 rng(7);
  for (KvDtype t : {KvDtype::fp16, KvDtype::int8, KvDtype::fp32}) {
    KvPool pool(12, 3, 16, 2, 8, t);
    for (int64_t i = 0; i < pool.bytes(); ++i) pool.data()[i] = static_cast<uint8_t>(rng());
    std::uniform_int_distribution<int64_t> block(0, 11), layer(0, 2), tok(0, 15), head(0, 1);
    const int64_t row_bytes = pool.head_dim() * kv_dtype_bytes(t);
    for (int n = 0; n < 500; ++n) {
      const int64_t b = block(rng), l = layer(rng), tk = tok(rng), h = head(rng);
      const KvPart part = n % 2 ? KvPart::key : KvPart::value;
      const uint8_t* ksana = pool.row(b, part, l, tk, h);
      const uint8_t* atb = pool.atb_row(part, atb_block_id(pool.geometry(), b, l), tk, h);
      ASSERT_EQ(ksana, atb) << "block " << b << " layer " << l;
      ASSERT_TRUE(std::equal(ksana, ksana + row_bytes, atb));
    }
  }
}

TEST(Int8Storage, PerRowScaleOffsetBoundsTheErrorAndPadIsZero) {
  std::mt19937 rng(3);
  const auto row = random_vec(rng, 64);
  const Int8Params p = int8_params_for(row.data(), 64);
  EXPECT_LE(p.offset, 0);
  EXPECT_EQ(dequantize_int8(p.pad_value(), p), 0.0f);  // seed 002: pad = -offset means 0.0
  std::vector<float> back(64);
  round_trip_row(KvDtype::int8, row.data(), 64, back.data());
  for (size_t i = 0; i < 64; ++i) EXPECT_LE(std::fabs(back[i] - row[i]), p.scale * 0.5f + 1e-6f);
}

TEST(PagedAttention, ShortBlockTableIsRejected) {
  KvPool pool(2, 1, 4, 1, 4, KvDtype::fp32);
  const std::vector<int32_t> table{0};
  const std::span<const int32_t> spans[1] = {table};
  const int32_t lens[1] = {5};
  std::vector<float> q(4), out(4);
  EXPECT_THROW(paged_decode_attention(pool, 0, q.data(), lens, spans, 1, 1.0f, out.data()),
               std::invalid_argument);
}

}  // namespace
}  // namespace kvsim::kernels
