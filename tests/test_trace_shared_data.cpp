// Trace readers on the real traces of ../shared/data/traces (skipped, with a
// message, when the folder is absent): request counts and mean lengths equal
// the published figures, Mooncake hash ids cover their input, requests share
// exactly the blocks their leading hash ids share, and the prefix hit rate of
// the conversation trace with an unbounded cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unordered_map>
#include <vector>

#include "sim/cache/paged_policy.hpp"
#include "tests/support/test_paths.hpp"
#include "tests/trace_helpers.hpp"
#include "workloads/trace_file_reader.hpp"
#include "workloads/trace_workload.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

std::string trace_path(const std::string& name) {
  return std::string(KVSIM_SHARED_DATA_DIR) + "/traces/" + name;
}

#define REQUIRE_TRACE(name)                                                                  \
  if (!std::filesystem::exists(trace_path(name)))                                            \
  GTEST_SKIP() << "shared data absent: " << trace_path(name)                                 \
               << " (the traces of ../shared/data/README.md are referenced in place, never " \
                  "copied)"

TraceWorkloadSpec spec_for(const std::string& format, const std::string& name) {
  TraceWorkloadSpec spec;
  spec.format = format;
  spec.path = trace_path(name);
  spec.key_path = "workload.trace";
  return spec;
}

struct TraceStats {
  int64_t requests = 0;
  double mean_input = 0;
  double mean_output = 0;
  int64_t hash_id_mismatches = 0;  // requests without ceil(input / 512) ids
};

TraceStats stats_of(const TraceWorkloadSpec& spec) {
  TraceFileReader reader(spec);
  ReplayedRecord r;
  TraceStats s;
  double in = 0, out = 0;
  while (reader.next(r)) {
    ++s.requests;
    in += static_cast<double>(r.record.input_tokens);
    out += static_cast<double>(r.record.output_tokens);
    const int64_t blocks = (r.record.input_tokens + 511) / 512;
    if (spec.format == "mooncake" && static_cast<int64_t>(r.record.hash_ids.size()) != blocks)
      ++s.hash_id_mismatches;
  }
  EXPECT_EQ(reader.skipped_records(), 0);
  s.mean_input = in / static_cast<double>(s.requests);
  s.mean_output = out / static_cast<double>(s.requests);
  return s;
}

// Mooncake FAST'25 Table 2 (as ../shared/data/README.md quotes it).
TEST(SharedTraces, MooncakeConversationMatchesThePublishedFigures) {
  REQUIRE_TRACE("mooncake_conversation.jsonl");
  const TraceStats s = stats_of(spec_for("mooncake", "mooncake_conversation.jsonl"));
  EXPECT_EQ(s.requests, 12031);
  EXPECT_EQ(std::lround(s.mean_input), 12035);
  EXPECT_EQ(std::lround(s.mean_output), 343);
  EXPECT_EQ(s.hash_id_mismatches, 0);
}

TEST(SharedTraces, MooncakeSyntheticMatchesThePublishedFigures) {
  REQUIRE_TRACE("mooncake_synthetic.jsonl");
  const TraceStats s = stats_of(spec_for("mooncake", "mooncake_synthetic.jsonl"));
  EXPECT_EQ(s.requests, 3993);
  EXPECT_EQ(std::lround(s.mean_input), 15325);
  EXPECT_EQ(std::lround(s.mean_output), 149);
  EXPECT_EQ(s.hash_id_mismatches, 0);
}

// The data README gives the row counts; the means were computed
// independently (Python csv module over the same files).
TEST(SharedTraces, AzureTracesMatchTheirRowCountsAndMeans) {
  REQUIRE_TRACE("azure_llm_2023_code.csv");
  REQUIRE_TRACE("azure_llm_2023_conv.csv");
  const TraceStats code = stats_of(spec_for("azure", "azure_llm_2023_code.csv"));
  EXPECT_EQ(code.requests, 8819);
  EXPECT_NEAR(code.mean_input, 2047.848, 1e-3);
  EXPECT_NEAR(code.mean_output, 27.883, 1e-3);
  const TraceStats conv = stats_of(spec_for("azure", "azure_llm_2023_conv.csv"));
  EXPECT_EQ(conv.requests, 19366);
  EXPECT_NEAR(conv.mean_input, 1154.697, 1e-3);
  EXPECT_NEAR(conv.mean_output, 211.126, 1e-3);
}

TEST(SharedTraces, PromptsHaveTheRecordedLengths) {
  REQUIRE_TRACE("mooncake_conversation.jsonl");
  TraceWorkloadSpec spec = spec_for("mooncake", "mooncake_conversation.jsonl");
  spec.max_requests = 300;
  TraceFileReader reader(spec);
  WorkloadSpec workload{"trace", spec, std::nullopt};
  auto source = make_request_source(workload, 42, 128256);
  ReplayedRecord r;
  while (reader.next(r)) {
    ASSERT_TRUE(source->next_arrival());
    const Request q = source->take();
    EXPECT_EQ(static_cast<int64_t>(q.prompt.size()), r.record.input_tokens);
    EXPECT_EQ(static_cast<int64_t>(q.output.size()), r.record.output_tokens);
    EXPECT_EQ(q.arrival, r.record.time);  // ms timestamps from 0, time_scale 1
  }
  EXPECT_FALSE(source->next_arrival());
}

struct Pair {
  TraceRecord a, b;
  int64_t k = 0;  // leading hash ids in common
};

// Pairs of conversation requests with k leading ids in common and both
// longer than k blocks (so the shared part is exactly k * 512 tokens), one
// pair per distinct k.
std::vector<Pair> pairs_by_shared_ids() {
  TraceWorkloadSpec spec = spec_for("mooncake", "mooncake_conversation.jsonl");
  spec.max_requests = 600;
  TraceFileReader reader(spec);
  std::vector<TraceRecord> records;
  ReplayedRecord r;
  while (reader.next(r)) records.push_back(r.record);
  std::unordered_map<int64_t, Pair> by_k;
  for (size_t i = 0; i < records.size(); ++i) {
    for (size_t j = i + 1; j < records.size(); ++j) {
      const auto& x = records[i].hash_ids;
      const auto& y = records[j].hash_ids;
      const auto k = static_cast<int64_t>(
          std::mismatch(x.begin(), x.end(), y.begin(), y.end()).first - x.begin());
      if (static_cast<int64_t>(std::min(x.size(), y.size())) <= k) continue;
      if (!by_k.count(k)) by_k[k] = {records[i], records[j], k};
    }
  }
  std::vector<Pair> pairs;
  for (auto& [k, p] : by_k) pairs.push_back(p);
  std::sort(pairs.begin(), pairs.end(), [](const Pair& p, const Pair& q) { return p.k < q.k; });
  return pairs;
}

TEST(SharedTraces, LeadingHashIdsShareExactlyTheirBlocksForAnyBlockSize) {
  REQUIRE_TRACE("mooncake_conversation.jsonl");
  std::vector<Pair> pairs = pairs_by_shared_ids();
  ASSERT_GE(pairs.size(), 4u);  // several distinct k >= 1 (every conversation starts with id 0)
  EXPECT_GE(pairs.back().k, 2);
  // k = 0: the same request with ids nobody else uses.
  Pair none{pairs[0].a, pairs[0].b, 0};
  for (int64_t& id : none.b.hash_ids) id += 1'000'000'000;
  pairs.insert(pairs.begin(), none);
  constexpr int64_t kVocab = 128256;  // Llama 3
  for (const int64_t block_size : {16, 64, 128, 512, 96, 200, 1000}) {
    for (const Pair& p : pairs) {
      TokenContent a, b;
      append_mooncake_prompt(a, p.a.hash_ids, p.a.input_tokens, 42, 0, FastModulo(kVocab));
      append_mooncake_prompt(b, p.b.hash_ids, p.b.input_tokens, 42, 0, FastModulo(kVocab));
      PagedParams params;
      params.block_size = block_size;
      params.num_blocks = (p.a.input_tokens + p.b.input_tokens) / block_size + 4;
      params.block_bytes = 1;
      PagedPolicy cache(params);
      // Admit A, compute its whole prompt, then look B up.
      const TokenView va{a.data(), static_cast<int64_t>(a.size()), nullptr, 0};
      const AdmitPlan plan = cache.plan_admit(cache.lookup_prefix(va), va.size());
      ASSERT_TRUE(plan.fits);
      const SeqSlot slot = cache.apply_admit(plan);
      cache.commit(slot, va, va.size());
      const TokenView vb{b.data(), static_cast<int64_t>(b.size()), nullptr, 0};
      const PrefixHit hit = cache.lookup_prefix(vb);
      const int64_t expected_blocks = p.k * 512 / block_size;  // floor
      EXPECT_EQ(static_cast<int64_t>(hit.blocks.size()), expected_blocks)
          << "k=" << p.k << " block_size=" << block_size;
      EXPECT_EQ(hit.cached_tokens, expected_blocks * block_size);
      for (int64_t i = 0; i < expected_blocks && i < static_cast<int64_t>(hit.blocks.size()); ++i)
        EXPECT_EQ(hit.blocks[static_cast<size_t>(i)],
                  cache.block_table(slot)[static_cast<size_t>(i)]);
      cache.release(slot);
    }
  }
}

// Prefix hit rate with a cache that never evicts, by the engine's
// definition: tokens served from the cache / prompt tokens looked up, the last
// prompt token always recomputed (vLLM), requests admitted in arrival order.
// Reference: the same figure from the hash ids alone (no tokens, no hashes).
double hit_rate_from_hash_ids(int64_t block_size) {
  TraceFileReader reader(spec_for("mooncake", "mooncake_conversation.jsonl"));
  std::unordered_map<int64_t, int64_t> covered;  // hash id -> tokens of it seen
  int64_t hit = 0, queried = 0;
  ReplayedRecord r;
  while (reader.next(r)) {
    const auto& ids = r.record.hash_ids;
    const int64_t len = r.record.input_tokens;
    int64_t shared = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto it = covered.find(ids[i]);
      if (it == covered.end()) break;
      const int64_t here = std::min<int64_t>(512, len - 512 * static_cast<int64_t>(i));
      const int64_t m = std::min(it->second, here);
      shared += m;
      if (m < 512) break;
    }
    hit += block_size * std::min(shared / block_size, (len - 1) / block_size);
    queried += len;
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t here = std::min<int64_t>(512, len - 512 * static_cast<int64_t>(i));
      int64_t& c = covered[ids[i]];
      c = std::max(c, here);
    }
  }
  return static_cast<double>(hit) / static_cast<double>(queried);
}

TEST(SharedTraces, MooncakeConversationUnboundedPrefixHitRate) {
  REQUIRE_TRACE("mooncake_conversation.jsonl");
  constexpr int64_t kBlockSize = 128;  // the replay scenario's
  WorkloadSpec workload{"trace", spec_for("mooncake", "mooncake_conversation.jsonl"), std::nullopt};
  auto source = make_request_source(workload, 42, 128256);
  PagedParams params;
  params.block_size = kBlockSize;
  params.num_blocks = 1'200'000;  // > every block the trace ever allocates: never evicts
  params.block_bytes = 1;
  PagedPolicy cache(params);
  while (source->next_arrival()) {
    const Request q = source->take();
    const TokenView v{q.prompt.data(), static_cast<int64_t>(q.prompt.size()), nullptr, 0};
    PrefixHit hit = cache.lookup_prefix(v);
    const int64_t cached = hit.cached_tokens;
    const AdmitPlan plan = cache.plan_admit(std::move(hit), v.size() - cached);
    ASSERT_TRUE(plan.fits);
    const SeqSlot slot = cache.apply_admit(plan);
    cache.commit(slot, v, v.size());
    cache.release(slot);
  }
  const CacheAccounting acc = cache.accounting();
  EXPECT_EQ(acc.evictions, 0u);
  const double rate =
      static_cast<double>(acc.prefix_hit_tokens) / static_cast<double>(acc.prefix_query_tokens);
  EXPECT_DOUBLE_EQ(rate, hit_rate_from_hash_ids(kBlockSize));
  std::printf(
      "mooncake conversation, unbounded cache, block_size %d: prefix hit rate %.4f "
      "(%lld of %lld prompt tokens)\n",
      static_cast<int>(kBlockSize), rate, static_cast<long long>(acc.prefix_hit_tokens),
      static_cast<long long>(acc.prefix_query_tokens));
  for (const int64_t bs : {16, 512})
    std::printf("  from hash ids, block_size %d: %.4f\n", static_cast<int>(bs),
                hit_rate_from_hash_ids(bs));
  RecordProperty("prefix_hit_rate_unbounded", std::to_string(rate));
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
