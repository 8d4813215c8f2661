// Described token content (workloads/token_content.hpp): the ids it stands
// for are those the workload would have generated, reading them keeps the
// description, and block hashes from run keys agree exactly where the
// content agrees. The exact modulo behind TokenStream agrees with `%`.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sim/cache/kv_cache_policy.hpp"
#include "workloads/rng.hpp"
#include "workloads/stream_ids.hpp"
#include "workloads/token_content.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

TEST(FastModulo, AgreesWithTheDivideForManyDivisorsAndNumerators) {
  std::mt19937_64 rng(7);
  const uint64_t divisors[] = {
      1, 2, 3, 7, 512, 32000, 128256, 151936, 2147483647ull, (1ull << 32) + 15, ~0ull};
  for (const uint64_t d : divisors) {
    const FastModulo mod(d);
    const uint64_t edges[] = {0, 1, d - 1, d, d + 1, ~0ull, ~0ull - 1};
    for (const uint64_t n : edges) ASSERT_EQ(mod(n), n % d) << n << " mod " << d;
    for (int i = 0; i < 20000; ++i) {
      const uint64_t n = rng();
      ASSERT_EQ(mod(n), n % d) << n << " mod " << d;
    }
  }
}

TEST(StreamIds, ManyAtOnceAreTheIdsOfTokenStreamAt) {
  // Around the smallest and largest divisors of the floating-point
  // remainder, real vocabularies, and positions that wrap past 2^64.
  std::mt19937_64 rng(11);
  const uint64_t divisors[] = {1,
                               2,
                               7,
                               8191,
                               8192,
                               8193,
                               32000,
                               50257,
                               128256,
                               151936,
                               262144,
                               2147483647ull,
                               (1ull << 32) + 15,
                               (1ull << 61) - 1,
                               1ull << 61,
                               (1ull << 61) + 1,
                               ~0ull};
  for (const uint64_t d : divisors) {
    const FastModulo vocab(d);
    for (int t = 0; t < 300; ++t) {
      const uint64_t key = rng();
      const uint64_t first = t % 3 == 0 ? ~0ull - 20 : rng() >> (rng() % 64);
      const auto count = static_cast<int64_t>(rng() % 70);
      std::vector<int32_t> ids(static_cast<size_t>(count));
      generate_stream_ids(key, vocab, first, count, ids.data());
      const TokenStream stream(key, vocab);
      for (int64_t i = 0; i < count; ++i) {
        ASSERT_EQ(ids[static_cast<size_t>(i)], stream.at(first + static_cast<uint64_t>(i)))
            << "vocabulary " << d << " key " << key << " position " << first + i;
      }
    }
  }
}

std::vector<int32_t> generated(uint64_t key, int64_t vocab, int64_t count) {
  const TokenStream s(key, vocab);
  std::vector<int32_t> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(s.at(static_cast<uint64_t>(i)));
  return out;
}

TEST(TokenContent, DescribedRunsReadAsTheGeneratedIdsAndStayDescribed) {
  TokenContent c;
  c.append_stream(11, 1000, 40);
  c.append_stream(12, 1000, 25);
  EXPECT_TRUE(c.described());
  EXPECT_EQ(c.size(), 65u);
  std::vector<int32_t> expected = generated(11, 1000, 40);
  const std::vector<int32_t> tail = generated(12, 1000, 25);
  expected.insert(expected.end(), tail.begin(), tail.end());
  for (int64_t i = 0; i < 65; ++i) EXPECT_EQ(c.at(i), expected[static_cast<size_t>(i)]);
  std::vector<int32_t> part(30);
  c.copy(20, 30, part.data());
  EXPECT_EQ(part, std::vector<int32_t>(expected.begin() + 20, expected.begin() + 50));
  EXPECT_EQ(c, expected);      // reading the ids...
  EXPECT_TRUE(c.described());  // ...keeps the description
  c.push_back(5);              // a mutation drops it
  EXPECT_FALSE(c.described());
  EXPECT_EQ(c.size(), 66u);
}

TEST(TokenContent, RunHoldingIsTheRunAtEveryPosition) {
  TokenContent c;
  c.append_stream(21, 1000, 7);
  c.append_stream(22, 1000, 5);
  c.append_stream(23, 1000, 9);
  for (int64_t i = 0; i < 21; ++i) {
    const TokenRun& a = c.run_holding(i);
    const TokenRun& b = c.run_at(i);
    EXPECT_EQ(a.key, b.key) << i;
    EXPECT_EQ(a.start, b.start) << i;
    EXPECT_EQ(a.length, b.length) << i;
  }
  TokenContent copy = c;  // the copy answers from its own runs
  EXPECT_EQ(copy.run_holding(3).key, 21u);
  c.clear();
  c.append_stream(31, 1000, 4);
  EXPECT_EQ(c.run_holding(2).key, 31u);
  EXPECT_EQ(c.run_holding(2).length, 4);
}

TEST(TokenContent, AppendingToHeldIdsGeneratesThem) {
  TokenContent c{1, 2, 3};
  c.append_stream(11, 1000, 4);
  EXPECT_FALSE(c.described());
  std::vector<int32_t> expected{1, 2, 3};
  const std::vector<int32_t> run = generated(11, 1000, 4);
  expected.insert(expected.end(), run.begin(), run.end());
  EXPECT_EQ(c, expected);
}

// The runs live in the object while they fit and move to the heap after:
// every count on either side of that edge reads the same through copies,
// moves and assignments, and a moved-from content is empty.
TEST(TokenContent, RunsReadTheSameInlineAndOnTheHeapThroughCopiesAndMoves) {
  for (int runs = 1; runs <= 9; ++runs) {
    TokenContent c;
    std::vector<int32_t> expected;
    for (int r = 0; r < runs; ++r) {
      c.append_stream(100 + static_cast<uint64_t>(r), 1000, 3 + r);
      const std::vector<int32_t> part = generated(100 + static_cast<uint64_t>(r), 1000, 3 + r);
      expected.insert(expected.end(), part.begin(), part.end());
    }
    ASSERT_EQ(c.runs().size(), static_cast<size_t>(runs));
    const auto check = [&](const TokenContent& t, const char* what) {
      ASSERT_TRUE(t.described()) << what << " " << runs;
      ASSERT_EQ(t.runs().size(), static_cast<size_t>(runs)) << what;
      ASSERT_EQ(t.size(), expected.size()) << what;
      for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(t.at(static_cast<int64_t>(i)), expected[i]) << what << " " << i;
        // run_at is an element of runs() (callers walk on from it).
        const TokenRun& r = t.run_at(static_cast<int64_t>(i));
        const auto index = &r - t.runs().data();
        ASSERT_TRUE(index >= 0 && index < runs) << what << " " << i;
        ASSERT_TRUE(r.start <= static_cast<int64_t>(i) &&
                    static_cast<int64_t>(i) < r.start + r.length)
            << what << " " << i;
      }
      std::vector<int32_t> ids(expected.size());
      t.copy(0, static_cast<int64_t>(ids.size()), ids.data());
      ASSERT_EQ(ids, expected) << what;
    };
    check(c, "original");
    TokenContent copied(c);
    check(copied, "copy");
    TokenContent assigned;
    assigned.append_stream(7, 1000, 2);
    assigned = c;
    check(assigned, "copy-assigned");
    TokenContent moved(std::move(copied));
    check(moved, "moved");
    EXPECT_FALSE(copied.described());  // NOLINT(bugprone-use-after-move): it says empty
    EXPECT_EQ(copied.size(), 0u);
    TokenContent move_assigned;
    move_assigned = std::move(assigned);
    check(move_assigned, "move-assigned");
    check(c, "original after copies");
    // Room reserved ahead (a trace prompt's runs) changes nothing read.
    TokenContent reserved;
    reserved.reserve_runs(static_cast<size_t>(runs));
    for (int r = 0; r < runs; ++r)
      reserved.append_stream(100 + static_cast<uint64_t>(r), 1000, 3 + r);
    check(reserved, "reserved");
    for (size_t i = 0; i < expected.size(); ++i) {
      const TokenRun& a = reserved.run_holding(static_cast<int64_t>(i));
      const TokenRun& b = c.run_holding(static_cast<int64_t>(i));
      ASSERT_EQ(a.key, b.key) << i;
      ASSERT_EQ(a.start, b.start) << i;
    }
  }
}

TEST(StreamKeys, AreTheChainedMixOfSeedStreamAndFields) {
  // The keys every workload's draws and token streams come from, written
  // out field by field: a change here moves every scenario's content.
  auto chained = [](uint64_t seed, RandomStream stream, uint64_t a, uint64_t b) {
    return mix64(mix64(mix64(mix64(seed) ^ static_cast<uint64_t>(stream)) ^ a) ^ b);
  };
  for (const uint64_t seed : {0ull, 1ull, 42ull, ~0ull}) {
    for (const RandomStream stream : {RandomStream::prefix_tokens, RandomStream::output_tokens}) {
      const StreamKeys keys(seed, stream);
      for (uint64_t a = 0; a < 50; ++a) {
        EXPECT_EQ(keys(a), chained(seed, stream, a, 0));
        EXPECT_EQ(stream_key(seed, stream, a), chained(seed, stream, a, 0));
        EXPECT_EQ(keys(a * 977, a + 1), chained(seed, stream, a * 977, a + 1));
      }
    }
  }
}

TEST(TokenView, BlockHashFromRunKeysMatchesExactlyWhereContentMatches) {
  // Two prompts sharing their first run (a trace's common hash id) and a
  // third with the same ids held: block hashes agree inside the shared run
  // for the two described prompts, never across a run boundary.
  TokenContent a, b, empty;
  a.append_stream(100, 32000, 64);
  a.append_stream(200, 32000, 64);
  b.append_stream(100, 32000, 64);
  b.append_stream(300, 32000, 64);
  const TokenView va = TokenView::of(a, empty, 0);
  const TokenView vb = TokenView::of(b, empty, 0);
  std::vector<int32_t> scratch(48);
  BlockHash pa{}, pb{};
  for (int64_t blk = 0; blk < 4; ++blk) {  // blocks of 32: two inside each run
    pa = va.block_hash(pa, blk * 32, 32, scratch.data());
    pb = vb.block_hash(pb, blk * 32, 32, scratch.data());
    EXPECT_EQ(pa == pb, blk < 2) << "block " << blk;
  }
  // Blocks of 48 straddle the runs' boundary at 64: hashed from the ids,
  // and equal to a hash of the same ids held.
  const TokenView held{a.data(), static_cast<int64_t>(a.size()), nullptr, 0};
  const BlockHash first = va.block_hash({}, 0, 48, scratch.data());
  EXPECT_EQ(va.block_hash(first, 48, 48, scratch.data()),
            held.block_hash(first, 48, 48, scratch.data()));
}

TEST(TokenView, IdsAreReadInPlaceWhereHeldAndCopiedOtherwise) {
  const std::vector<int32_t> prompt{1, 2, 3, 4, 5}, output{6, 7, 8};
  const TokenView view{prompt.data(), 5, output.data(), 3};
  std::vector<int32_t> scratch(8, -1);
  EXPECT_EQ(view.ids(1, 3, scratch.data()), prompt.data() + 1);  // inside the prompt
  EXPECT_EQ(view.ids(6, 2, scratch.data()), output.data() + 1);  // inside the output
  EXPECT_EQ(scratch, std::vector<int32_t>(8, -1));               // neither copied
  const int32_t* straddling = view.ids(3, 4, scratch.data());    // across the two
  EXPECT_EQ(straddling, scratch.data());
  EXPECT_EQ(std::vector<int32_t>(straddling, straddling + 4), (std::vector<int32_t>{4, 5, 6, 7}));
  // A described prompt holds no ids to point at: copied.
  TokenContent described, empty;
  described.append_stream(100, 32000, 16);
  const TokenView dview = TokenView::of(described, empty, 0);
  std::vector<int32_t> want(4);
  dview.copy(2, 4, want.data());
  const int32_t* got = dview.ids(2, 4, scratch.data());
  EXPECT_EQ(got, scratch.data());
  EXPECT_EQ(std::vector<int32_t>(got, got + 4), want);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
