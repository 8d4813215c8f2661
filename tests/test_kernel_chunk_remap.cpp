// Seed 003's remap on real buffers: chunk keys computed at the virtual
// position and re-rotated into the main pool equal keys computed at the real
// position within fp16 tolerance; the question's paged attention over the
// remapped pool equals the dense reference under the chunk-isolated mask;
// and on stories260K the logit difference between chunk reuse and a full
// causal recompute is computed (non-zero with chunks, zero without).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "kernels/attention.hpp"
#include "kernels/chunk_mask.hpp"
#include "kernels/chunk_remap.hpp"
#include "kernels/kv_layout.hpp"
#include "kernels/llama2_chunk_reuse.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/chunk_lru_policy.hpp"
#include "sim/cache/chunk_prompt.hpp"
#include "sim/policies/chunk_lru_spec.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using kernels::KvDtype;
using kernels::KvPool;
using kernels::RopeStyle;

constexpr int64_t kLayers = 2, kHeads = 2, kDim = 16, kBlock = 4, kVirtual = 4096;
constexpr float kTheta = 10000.0f;

std::vector<float> random_vec(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

std::vector<int32_t> content(int32_t start, int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + i;
  return v;
}

// A request "sys ## A ## B ## q" admitted by a real ChunkLruPolicy; the
// kernels then fill its chunk-pool blocks and remap them into its block
// table, as the serving path does in bookkeeping.
struct RemapFixture {
  explicit RemapFixture(KvDtype dtype)
      : policy(make_params()),
        chunk_pool(64, kLayers, kBlock, kHeads, kDim, dtype),
        main_pool(64, kLayers, kBlock, kHeads, kDim, dtype) {
    segments = {content(1, 5), content(100, 7), content(200, 6), content(900, 3)};
    for (size_t i = 0; i < segments.size(); ++i) {
      if (i > 0) prompt.insert(prompt.end(), kChunkSeparator.begin(), kChunkSeparator.end());
      prompt.insert(prompt.end(), segments[i].begin(), segments[i].end());
    }
    const TokenView view{prompt.data(), static_cast<int64_t>(prompt.size()), nullptr, 0};
    PrefixHit hit = policy.lookup_prefix(view);
    cached = hit.cached_tokens;
    units = hit.segment_tokens;
    hashes = hit.hashes;
    const AdmitPlan plan = policy.plan_admit(std::move(hit), view.size() - cached);
    slot = policy.apply_admit(plan);
    std::mt19937 rng(11);
    // Raw (un-rotated) keys and values of every prompt token, per layer.
    raw_k = random_vec(rng, prompt.size() * kLayers * kHeads * kDim);
    raw_v = random_vec(rng, prompt.size() * kLayers * kHeads * kDim);
  }
  static ChunkLruParams make_params() {
    ChunkLruParams p = declared_chunk_lru_params();
    p.main = {64, kBlock, kBlock * 1000, false, 0};
    p.chunk_blocks = 64;
    p.virtual_pos_start = kVirtual;
    return p;
  }
  float* k_at(int64_t token, int64_t layer) {
    return raw_k.data() + ((token * kLayers + layer) * kHeads) * kDim;
  }
  float* v_at(int64_t token, int64_t layer) {
    return raw_v.data() + ((token * kLayers + layer) * kHeads) * kDim;
  }
  // Unit u computed alone: its keys rotated at kVirtual + t, stored in its
  // chunk-pool blocks; then remapped to its real position.
  void compute_and_remap_all() {
    int64_t position = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      const auto& blocks = policy.chunk_pool().blocks_of(hashes[u]);
      for (int64_t t = 0; t < units[u]; ++t) {
        for (int64_t l = 0; l < kLayers; ++l) {
          std::vector<float> k(k_at(position + t, l), k_at(position + t, l) + kHeads * kDim);
          kernels::apply_rope(k.data(), kHeads, kDim, kVirtual + t, kTheta, RopeStyle::rotate_half);
          for (int64_t h = 0; h < kHeads; ++h) {
            chunk_pool.write_row(blocks[static_cast<size_t>(t / kBlock)], KvPart::key, l,
                                 t % kBlock, h, k.data() + h * kDim);
            chunk_pool.write_row(blocks[static_cast<size_t>(t / kBlock)], KvPart::value, l,
                                 t % kBlock, h, v_at(position + t, l) + h * kDim);
          }
        }
      }
      kernels::remap_chunk(chunk_pool, main_pool,
                           {blocks, 0, kVirtual, policy.block_table(slot), position, units[u],
                            kTheta, RopeStyle::rotate_half});
      position += units[u];
    }
  }

  ChunkLruPolicy policy;
  KvPool chunk_pool, main_pool;
  std::vector<std::vector<int32_t>> segments;
  std::vector<int32_t> prompt;
  int64_t cached = 0;
  std::vector<int64_t> units;
  std::vector<BlockHash> hashes;
  SeqSlot slot = kNoSeq;
  std::vector<float> raw_k, raw_v;
};

TEST(ChunkRemap, RemappedKeysEqualKeysAtTheRealPositionWithinFp16) {
  RemapFixture f(KvDtype::fp16);
  f.compute_and_remap_all();
  KvPool direct(64, kLayers, kBlock, kHeads, kDim, KvDtype::fp16);
  const auto& table = f.policy.block_table(f.slot);
  double worst = 0;
  for (int64_t p = 0; p < f.cached; ++p) {
    const int64_t b = table[static_cast<size_t>(p / kBlock)];
    for (int64_t l = 0; l < kLayers; ++l) {
      std::vector<float> k(f.k_at(p, l), f.k_at(p, l) + kHeads * kDim);
      kernels::apply_rope(k.data(), kHeads, kDim, p, kTheta, RopeStyle::rotate_half);
      for (int64_t h = 0; h < kHeads; ++h) {
        direct.write_row(b, KvPart::key, l, p % kBlock, h, k.data() + h * kDim);
        std::vector<float> remapped(kDim), stored(kDim), v(kDim), v_stored(kDim);
        f.main_pool.read_row(b, KvPart::key, l, p % kBlock, h, remapped.data());
        direct.read_row(b, KvPart::key, l, p % kBlock, h, stored.data());
        direct.write_row(b, KvPart::value, l, p % kBlock, h, f.v_at(p, l) + h * kDim);
        direct.read_row(b, KvPart::value, l, p % kBlock, h, v_stored.data());
        f.main_pool.read_row(b, KvPart::value, l, p % kBlock, h, v.data());
        for (int64_t i = 0; i < kDim; ++i) {
          // Two fp16 roundings (chunk pool, main pool) around an exact
          // rotation: a few half-precision ulps at |k| <= sqrt(2).
          EXPECT_NEAR(remapped[i], stored[i], 2e-3) << "position " << p << " layer " << l;
          EXPECT_NEAR(remapped[i], k[static_cast<size_t>(h * kDim + i)], 2e-3);
          EXPECT_EQ(v[i], v_stored[i]);  // values are copied, never rotated
          worst = std::max(worst, std::abs(static_cast<double>(remapped[i]) - stored[i]));
        }
      }
    }
  }
  EXPECT_GT(worst, 0.0) << "fp16 storage should show some rounding";
  EXPECT_EQ(f.cached, 5 + 2 + 7 + 2 + 6 + 2);
}

TEST(ChunkRemap, QuestionAttentionOverTheRemappedPoolEqualsDenseUnderTheChunkMask) {
  RemapFixture f(KvDtype::fp32);
  f.compute_and_remap_all();
  const auto n = static_cast<int64_t>(f.prompt.size());
  const int64_t nq = n - f.cached;
  const auto& table = f.policy.block_table(f.slot);
  std::mt19937 rng(5);
  const int64_t q_heads = 4;  // grouped-query: 2 query heads per KV head
  const auto q = random_vec(rng, static_cast<size_t>(nq * q_heads * kDim));
  // Chunk ids per position: system prompt -1, chunk c, question -2 (each
  // separator belongs to the segment before it, as in the policy's units).
  std::vector<int32_t> ids;
  for (size_t u = 0; u < f.units.size(); ++u)
    ids.insert(ids.end(), static_cast<size_t>(f.units[u]),
               u == 0 ? kernels::kSystemPromptChunk : static_cast<int32_t>(u - 1));
  ids.insert(ids.end(), static_cast<size_t>(nq), kernels::kQuestionChunk);
  const auto mask = kernels::chunk_isolated_mask(ids);
  for (int64_t l = 0; l < kLayers; ++l) {
    // The question's own K/V at its real positions.
    for (int64_t p = f.cached; p < n; ++p) {
      std::vector<float> k(f.k_at(p, l), f.k_at(p, l) + kHeads * kDim);
      kernels::apply_rope(k.data(), kHeads, kDim, p, kTheta, RopeStyle::rotate_half);
      for (int64_t h = 0; h < kHeads; ++h) {
        const int64_t b = table[static_cast<size_t>(p / kBlock)];
        f.main_pool.write_row(b, KvPart::key, l, p % kBlock, h, k.data() + h * kDim);
        f.main_pool.write_row(b, KvPart::value, l, p % kBlock, h, f.v_at(p, l) + h * kDim);
      }
    }
    std::vector<float> paged(static_cast<size_t>(nq * q_heads * kDim));
    const int32_t cu[2] = {0, static_cast<int32_t>(nq)};
    const int32_t seqlen[1] = {static_cast<int32_t>(n)};
    const std::span<const int32_t> tables[1] = {table};
    kernels::paged_varlen_attention(f.main_pool, l, q.data(), cu, seqlen, tables, q_heads, 0.25f,
                                    paged.data());
    // Dense reference: every key rotated at its real position.
    std::vector<float> dk, dv;
    for (int64_t p = 0; p < n; ++p) {
      std::vector<float> k(f.k_at(p, l), f.k_at(p, l) + kHeads * kDim);
      kernels::apply_rope(k.data(), kHeads, kDim, p, kTheta, RopeStyle::rotate_half);
      dk.insert(dk.end(), k.begin(), k.end());
      dv.insert(dv.end(), f.v_at(p, l), f.v_at(p, l) + kHeads * kDim);
    }
    std::vector<uint8_t> rows(mask.begin() + f.cached * n, mask.end());  // the question's rows
    std::vector<float> dense(paged.size());
    kernels::dense_attention_reference(q.data(), nq, dk.data(), dv.data(), n, q_heads, kHeads, kDim,
                                       0.25f, dense.data(), rows.data());
    for (size_t i = 0; i < dense.size(); ++i) EXPECT_NEAR(paged[i], dense[i], 1e-5) << l;
  }
  f.policy.release(f.slot);
  f.policy.check_drained();
}

const std::filesystem::path kStories =
    std::filesystem::path(KVSIM_SHARED_DATA_DIR) / "models" / "stories260K";

bool have_stories() {
  std::error_code ec;
  return std::filesystem::is_regular_file(kStories / "stories260K.bin", ec) &&
         std::filesystem::is_regular_file(kStories / "tok512.bin", ec);
}

TEST(ChunkReuseStories260K, LogitDifferenceIsReportedAndZeroWithoutChunks) {
  if (!have_stories()) GTEST_SKIP() << "shared data absent: " << kStories.string();
  const auto w = kernels::load_llama2_checkpoint((kStories / "stories260K.bin").string());
  const kernels::Llama2Tokenizer tok((kStories / "tok512.bin").string(), w.config.vocab_size);
  const std::string text = "Lily had a red ball##Tom liked to play in the park##What did Lily do?";
  kernels::ChunkReuseOptions isolated;
  isolated.attention = kernels::ChunkAttention::isolated;
  const auto multi = kernels::chunk_reuse_logits_for_text(w, tok, text, isolated);
  EXPECT_EQ(multi.units, 2);
  EXPECT_TRUE(std::isfinite(multi.max_abs_diff));
  EXPECT_GT(multi.max_abs_diff, 1e-3) << "isolated chunks change the model's output";
  EXPECT_GT(multi.mean_abs_diff, 0.0);
  EXPECT_LE(multi.mean_abs_diff, multi.max_abs_diff);
  // Under the seed's mask the one chunk sees the system prompt just before
  // it, as a full prefill shows it: only the rotations' rounding is left.
  const auto seed_mask = kernels::chunk_reuse_logits_for_text(w, tok, text, {});
  EXPECT_LT(seed_mask.max_abs_diff, 1e-3);
  EXPECT_LT(seed_mask.max_abs_diff, multi.max_abs_diff / 10);
  const auto single = kernels::chunk_reuse_logits_for_text(w, tok, "Lily had a red ball", {});
  EXPECT_EQ(single.units, 0);
  EXPECT_EQ(single.max_abs_diff, 0.0);
  EXPECT_EQ(single.full_logits, single.reuse_logits);
  // The CLI prints the figure.
  const auto r =
      testing::run_command(std::string(KVSIM_BINARY) +
                           " generate --policy chunk_lru --steps 40 --prompt "
                           "'Lily had a red ball##Tom liked to play##What did Lily do?'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("chunk reuse vs full prefill"), std::string::npos) << r.output;
  for (const char* option :
       {"isolated", "system_prompt + recompute 0.15", "system_prompt + recompute 1.00"})
    EXPECT_NE(r.output.find(option), std::string::npos) << option << "\n" << r.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
