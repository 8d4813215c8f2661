// Paged attention kernels against the naive dense reference: varlen prefill
// (with and without prefix-cache keys), decode, every storage type, GQA;
// store_kvcache by slot mapping; the ATB view against the Ksana view; the
// incremental reference against the dense one; RoPE's cached angles and the
// vectorised fp16 rows against their scalar forms, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "kernels/attention.hpp"
#include "kernels/attention_incremental.hpp"
#include "kernels/fast_exp.hpp"
#include "kernels/rope.hpp"
#include "kernels/store_kvcache.hpp"

namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE {
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

enum class Kernel { varlen, decode, decode_fast_exp };

// Fills a pool with each sequence's K/V through shuffled block tables and
// checks paged attention against the dense reference per sequence.
void run_case(const Shape& s, Kernel kernel) {
  const bool decode = kernel != Kernel::varlen;
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
  if (kernel == Kernel::decode) {
    paged_decode_attention(pool, layer, q.data(), s.k_lens, spans, s.q_heads, scale, out.data());
  } else if (kernel == Kernel::decode_fast_exp) {
    paged_decode_attention_fast_exp(pool, layer, q.data(), s.k_lens, spans, s.q_heads, scale,
                                    out.data());
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
  run_case(GetParam(), Kernel::varlen);
}
TEST_P(PagedAttention, DecodeEqualsDense) {
  run_case(GetParam(), Kernel::decode);
}
// The checker's variant: the same tolerances with the vectorised exp.
TEST_P(PagedAttention, DecodeWithFastExpEqualsDense) {
  run_case(GetParam(), Kernel::decode_fast_exp);
}

INSTANTIATE_TEST_SUITE_P(Shapes, PagedAttention, ::testing::ValuesIn(shapes()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

#if defined(__x86_64__)
// The vectorised exp is within a few ulp of the C library's over a
// softmax's range of arguments, and floors below -87.
TEST(FastExp, IsWithinAFewUlpOfExpf) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP();
  std::vector<float> x;
  for (float a = -90.0f; a <= 10.0f; a += 0.0137f) x.push_back(a);
  x.push_back(0.0f);
  std::vector<float> got = x;
  exp_in_place_avx2(got.data(), static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(std::max(x[i], -87.0f)));
    EXPECT_NEAR(got[i] / want, 1.0, 4e-7) << "exp(" << x[i] << ")";
  }
  EXPECT_EQ(got.back(), 1.0f);
}
#endif

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

// The incremental reference, fed keys in uneven runs, equals the dense
// reference for one query after the context at every length (GQA 4:2).
TEST(IncrementalAttention, EqualsTheDenseReferenceAtEveryLength) {
  std::mt19937 rng(77);
  const int64_t qh = 4, kvh = 2, d = 16, n = 300;
  const float scale = 0.25f;
  const std::vector<float> q = random_vec(rng, static_cast<size_t>(qh * d));
  std::vector<float> k = random_vec(rng, static_cast<size_t>(n * kvh * d));
  const std::vector<float> v = random_vec(rng, static_cast<size_t>(n * kvh * d));
  for (int64_t i = 0; i < n * kvh * d; i += 37) k[static_cast<size_t>(i)] *= 8.0f;  // max jumps
  IncrementalAttention inc;
  inc.reset(q.data(), qh, kvh, d, scale);
  std::vector<float> got(static_cast<size_t>(qh * d)), want(got.size());
  inc.output(got.data());
  EXPECT_EQ(got[0], 0.0f);  // no keys yet
  int64_t len = 0;
  for (int64_t run : {1, 2, 5, 16, 1, 40, 100, 135}) {
    inc.append(k.data() + len * kvh * d, v.data() + len * kvh * d, run);
    len += run;
    ASSERT_EQ(inc.keys(), len);
    inc.output(got.data());
    dense_attention_reference(q.data(), 1, k.data(), v.data(), len, qh, kvh, d, scale, want.data());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "length " << len;
  }
  inc.reset(q.data(), qh, kvh, d, scale);  // reused: forgets every key
  EXPECT_EQ(inc.keys(), 0);
}

// The same for the other head sizes and group ratios the vectorised folds
// take (32: in registers; 8: the general loop; a group of 3 folds its
// values one head at a time).
TEST(IncrementalAttention, EqualsTheDenseReferenceForOtherHeadSizesAndGroups) {
  std::mt19937 rng(78);
  struct Case {
    int64_t qh, kvh, d;
  };
  for (const Case& c : {Case{4, 2, 32}, Case{6, 2, 16}, Case{2, 2, 8}, Case{3, 1, 32}}) {
    const int64_t qh = c.qh, kvh = c.kvh, d = c.d;
    const int64_t n = 70;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const std::vector<float> q = random_vec(rng, static_cast<size_t>(qh * d));
    const std::vector<float> k = random_vec(rng, static_cast<size_t>(n * kvh * d));
    const std::vector<float> v = random_vec(rng, static_cast<size_t>(n * kvh * d));
    IncrementalAttention inc;
    inc.reset(q.data(), qh, kvh, d, scale);
    std::vector<float> got(static_cast<size_t>(qh * d)), want(got.size());
    int64_t len = 0;
    for (int64_t run : {3, 1, 4, 62}) {
      inc.append(k.data() + len * kvh * d, v.data() + len * kvh * d, run);
      len += run;
      inc.output(got.data());
      dense_attention_reference(q.data(), 1, k.data(), v.data(), len, qh, kvh, d, scale,
                                want.data());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-6) << qh << ":" << kvh << " d " << d << " length " << len;
    }
  }
}

// The decode kernel specialised to the sampled checker's shape (four query
// heads per KV head, head size 16, an even number of KV heads) gives the
// general kernel's outputs bit for bit: contexts ending anywhere in a block
// (odd and even tails, fewer than four rows past a multiple of four), blocks
// of odd and even size, two and four KV heads.
TEST(PagedAttention, DecodeForTheCheckersShapeEqualsTheGeneralKernelBitForBit) {
  if (!fast_fp16_decode_available()) GTEST_SKIP();
  std::mt19937 rng(81);
  for (int64_t kvh : {2, 4}) {
    for (int64_t bt : {16, 37, 128}) {
      const int64_t qh = 4 * kvh, d = 16, blocks = 12;
      KvPool pool(blocks, 2, bt, kvh, d, KvDtype::fp16);
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t l = 0; l < 2; ++l)
          for (KvPart part : {KvPart::key, KvPart::value}) {
            std::vector<float> rows = random_vec(rng, static_cast<size_t>(bt * kvh * d));
            for (size_t i = 0; i < rows.size(); i += 23) rows[i] *= 6.0f;  // max jumps
            pool.write_rows(b, part, l, 0, bt, rows.data());
          }
      std::vector<int32_t> table(blocks);
      for (int64_t i = 0; i < blocks; ++i) table[static_cast<size_t>(i)] = (5 * i + 3) % blocks;
      const std::span<const int32_t> spans[1] = {table};
      const std::vector<float> q = random_vec(rng, static_cast<size_t>(qh * d));
      std::vector<float> got(q.size()), want(q.size());
      for (int32_t len : {1, 2, 3, 5, 8, 17, 40, 127, 128, 129, 130, 131, 300, 444}) {
        if (len > blocks * bt) continue;
        const int32_t lens[1] = {len};
        paged_decode_attention_fast_exp(pool, 1, q.data(), lens, spans, qh, 0.25f, got.data());
        paged_decode_attention_fast_exp_general(pool, 1, q.data(), lens, spans, qh, 0.25f,
                                                want.data());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
            << kvh << " KV heads, blocks of " << bt << ", length " << len;
      }
    }
  }
}

TEST(RopeTable, RotatesToTheSameBitsAsApplyRope) {
  std::mt19937 rng(5);
  for (RopeStyle style : {RopeStyle::rotate_half, RopeStyle::adjacent_pairs}) {
    RopeTable table(16, 500000.0f, style);
    for (int64_t pos : {0, 1, 7, 1000, 3, 8191, 40000}) {
      const std::vector<float> x = random_vec(rng, 32);
      std::vector<float> a = x, b = x;
      apply_rope(a.data(), 2, 16, pos, 500000.0f, style);
      table.apply(b.data(), 2, pos);
      EXPECT_EQ(a, b) << "position " << pos;
    }
  }
}

// Bit for bit, signed zeros included, on the vector path (head sizes whose
// rotated runs are multiples of 8) and the scalar one, for both styles.
TEST(RopeTable, RotatesToTheSameBitsForEveryHeadSize) {
  std::mt19937 rng(6);
  for (int64_t d : {2, 8, 16, 24, 32, 64, 128}) {
    for (RopeStyle style : {RopeStyle::rotate_half, RopeStyle::adjacent_pairs}) {
      RopeTable table(d, 10000.0f, style);
      for (int64_t pos : {0, 5, 4095, 1, 70000}) {
        std::vector<float> x = random_vec(rng, static_cast<size_t>(3 * d));
        x[0] = -0.0f;
        x[1] = 0.0f;
        std::vector<float> a = x, b = x;
        apply_rope(a.data(), 3, d, pos, 10000.0f, style);
        table.apply(b.data(), 3, pos);
        for (size_t i = 0; i < a.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i]))
              << "d " << d << " position " << pos << " value " << i;
        // A run of three tokens of one head each, from this position on.
        std::vector<float> run = x;
        table.apply_run(run.data(), 3, 1, pos);
        for (int64_t t = 0; t < 3; ++t) {
          std::vector<float> one(x.begin() + t * d, x.begin() + (t + 1) * d);
          apply_rope(one.data(), 1, d, pos + t, 10000.0f, style);
          for (int64_t i = 0; i < d; ++i)
            ASSERT_EQ(std::bit_cast<uint32_t>(one[static_cast<size_t>(i)]),
                      std::bit_cast<uint32_t>(run[static_cast<size_t>(t * d + i)]))
                << "d " << d << " position " << pos + t << " value " << i;
        }
      }
    }
  }
}

// Encoding with what is stored handed back gives the same bytes as
// encode_row and the same values as decoding them, for every dtype.
TEST(KvStorage, EncodeRowStoredIsEncodeThenDecode) {
  std::mt19937 rng(10);
  const std::vector<float> row = random_vec(rng, 37);
  for (KvDtype t : {KvDtype::fp32, KvDtype::fp16, KvDtype::bf16, KvDtype::int8, KvDtype::fp8_e4m3,
                    KvDtype::fp8_e5m2}) {
    std::vector<uint8_t> a(row.size() * 4), b(a.size());
    std::vector<float> want(row.size()), got(row.size());
    const Int8Params pa = encode_row(t, row.data(), 37, a.data());
    decode_row(t, a.data(), 37, pa, want.data());
    const Int8Params pb = encode_row_stored(t, row.data(), 37, b.data(), got.data());
    EXPECT_EQ(a, b) << static_cast<int>(t);
    EXPECT_EQ(pa.scale, pb.scale);
    for (size_t i = 0; i < row.size(); ++i)
      EXPECT_EQ(std::bit_cast<uint32_t>(want[i]), std::bit_cast<uint32_t>(got[i]))
          << static_cast<int>(t) << " value " << i;
  }
}

TEST(Fp16Storage, RowsEncodeAndDecodeLikeTheScalarConversion) {
  std::mt19937 rng(9);
  std::vector<float> row = random_vec(rng, 37);  // a tail past the last 8
  row[0] = 65504.0f * 2;                         // overflows to inf
  row[1] = 1e-6f;                                // subnormal in fp16
  row[2] = -0.0f;
  row[3] = 1.0f + 1.0f / 2048;  // a tie: to even
  std::vector<uint16_t> bits(row.size());
  encode_row(KvDtype::fp16, row.data(), static_cast<int64_t>(row.size()), bits.data());
  std::vector<float> back(row.size());
  decode_row(KvDtype::fp16, bits.data(), static_cast<int64_t>(row.size()), Int8Params{},
             back.data());
  for (size_t i = 0; i < row.size(); ++i) {
    EXPECT_EQ(bits[i], float_to_half_bits(row[i])) << i;
    EXPECT_EQ(std::bit_cast<uint32_t>(back[i]),
              std::bit_cast<uint32_t>(half_bits_to_float(bits[i])))
        << i;
  }
}

}  // namespace
}  // namespace kvsim::kernels::KVSIM_TEST_FILE_SCOPE
