// `kind: rag` (seed 003): prompt structure, deterministic document content,
// Zipf popularity in random order, bad input, and the shipped comparison
// pair's identical request streams.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>

#include "scenario_helpers.hpp"
#include "sim/cache/chunk_prompt.hpp"
#include "workload_helpers.hpp"
#include "workloads/workload_kinds.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

const char* kRag = R"(
kind: rag
requests: 300
arrival: {process: poisson, rate_per_s: 4}
sys_prompt_tokens: 48
docs:
  corpus: 30
  zipf: 1.2
  per_request: {dist: uniform, min: 2, max: 4}
  chunk_tokens: {dist: uniform, min: 16, max: 64}
question_tokens: {dist: uniform, min: 4, max: 12}
output_tokens: 8
)";

constexpr int64_t kVocab = 1000;

std::vector<Request> take_all(const WorkloadSpec& spec, uint64_t seed, int64_t vocab = kVocab) {
  auto source = make_request_source(spec, seed, vocab);
  std::vector<Request> out;
  while (source->next_arrival()) out.push_back(source->take());
  return out;
}

std::vector<int32_t> segment(const Request& r, const PromptSegment& s) {
  return {r.prompt.begin() + s.begin, r.prompt.begin() + s.begin + s.length};
}

TEST(RagWorkload, PromptIsSystemPromptDocumentsAndQuestion) {
  const auto spec = testing::parse_ok(kRag);
  const auto requests = take_all(*spec, 5);
  ASSERT_EQ(requests.size(), 300u);
  std::vector<int32_t> system;
  // Every document's content is the same wherever it appears.
  std::map<int64_t, std::vector<int32_t>> doc_content;
  for (const Request& r : requests) {
    const auto segs = split_chunked_prompt(r.prompt.data(), static_cast<int64_t>(r.prompt.size()));
    const auto docs = detail::rag_documents_of(*spec, 5, r.id);
    ASSERT_EQ(segs.size(), docs.size() + 2) << "system prompt, documents, question";
    EXPECT_GE(docs.size(), 2u);
    EXPECT_LE(docs.size(), 4u);
    EXPECT_EQ(std::set<int64_t>(docs.begin(), docs.end()).size(), docs.size()) << "distinct";
    EXPECT_EQ(segs[0].length, 48);
    if (system.empty()) system = segment(r, segs[0]);
    EXPECT_EQ(segment(r, segs[0]), system);
    for (size_t i = 0; i < docs.size(); ++i) {
      const auto content = segment(r, segs[i + 1]);
      EXPECT_GE(content.size(), 16u);
      EXPECT_LE(content.size(), 64u);
      auto [it, fresh] = doc_content.emplace(docs[i], content);
      if (!fresh) {
        EXPECT_EQ(it->second, content) << "document " << docs[i];
      }
    }
    EXPECT_GE(segs.back().length, 4);
    EXPECT_LE(segs.back().length, 12);
    // The separator id appears exactly in the separators.
    const auto zeros = std::count(r.prompt.begin(), r.prompt.end(), kChunkSeparatorToken);
    EXPECT_EQ(zeros, static_cast<int64_t>(segs.size() - 1) * kChunkSeparatorLength);
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), kChunkSeparatorToken), 0);
    for (int32_t t : r.prompt) EXPECT_LT(t, kVocab);
  }
  // Different documents differ.
  EXPECT_NE(doc_content.begin()->second, std::next(doc_content.begin())->second);
}

TEST(RagWorkload, ZipfPopularityInRandomOrder) {
  const auto spec = testing::parse_ok(kRag);
  std::map<int64_t, int> count;
  std::map<int64_t, std::set<size_t>> positions;
  for (uint64_t i = 0; i < 300; ++i) {
    const auto docs = detail::rag_documents_of(*spec, 5, i);
    for (size_t k = 0; k < docs.size(); ++k) {
      ++count[docs[k]];
      positions[docs[k]].insert(k);
    }
  }
  EXPECT_GT(count[0], count[5]);
  EXPECT_GT(count[0], count[29]);
  // The most popular document shows up at every position: order is shuffled.
  EXPECT_GE(positions[0].size(), 3u);
}

TEST(RagWorkload, DeterministicPerSeed) {
  const auto spec = testing::parse_ok(kRag);
  const auto a = take_all(*spec, 9), b = take_all(*spec, 9), c = take_all(*spec, 10);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].output, b[i].output);
    EXPECT_EQ(a[i].arrival, b[i].arrival);
  }
  EXPECT_NE(a[0].prompt, c[0].prompt);
}

TEST(RagWorkload, WithoutSystemPromptTheFirstDocumentLeads) {
  const auto spec = testing::parse_ok(R"(
kind: rag
requests: 3
arrival: {process: constant, rate_per_s: 1}
docs: {corpus: 4, zipf: 1.0, per_request: 2, chunk_tokens: 5}
question_tokens: 3
output_tokens: 2
)");
  for (const Request& r : take_all(*spec, 1)) {
    EXPECT_EQ(r.prompt.size(), 5u + 2 + 5 + 2 + 3);
    EXPECT_NE(r.prompt[0], kChunkSeparatorToken);
  }
}

TEST(RagWorkload, BoundsCoverEveryPrompt) {
  const auto spec = testing::parse_ok(kRag);
  const WorkloadBounds b = workload_bounds(*spec);
  EXPECT_EQ(b.max_prompt_tokens, 48 + 2 + 4 * (64 + 2) + 12);
  EXPECT_EQ(b.max_output_tokens, 8);
  for (const Request& r : take_all(*spec, 3))
    EXPECT_LE(static_cast<int64_t>(r.prompt.size()), b.max_prompt_tokens);
}

std::string workload_errors(const std::string& yaml) {
  config::LoadContext ctx;
  auto spec = parse_workload(config::Node(YAML::Load(yaml), "workload", "test.yaml", &ctx));
  std::string all;
  for (const auto& d : ctx.diagnostics.all()) all += d.format() + "\n";
  if (spec) {
    EXPECT_TRUE(all.empty());
  }
  return all;
}

TEST(RagWorkload, BadInputIsReportedWithItsKeyPath) {
  const std::string base =
      "kind: rag\nrequests: 2\narrival: {process: poisson, rate_per_s: 1}\nquestion_tokens: "
      "4\noutput_tokens: 2\n";
  std::string e = workload_errors(base +
                                  "docs: {corpus: 3, zipf: 1.0, per_request: 5, "
                                  "chunk_tokens: 8}\n");
  EXPECT_NE(e.find("workload.docs.per_request"), std::string::npos) << e;
  EXPECT_NE(e.find("corpus has 3"), std::string::npos) << e;
  e = workload_errors(base + "docs: {corpus: 3, zipf: 0, per_request: 1, chunk_tokens: 8}\n");
  EXPECT_NE(e.find("workload.docs.zipf"), std::string::npos) << e;
  e = workload_errors(base);
  EXPECT_NE(e.find("workload.docs"), std::string::npos) << e;
  e = workload_errors(base +
                      "docs: {corpus: 3, zipf: 1, per_request: 1, chunk_tokens: 8, "
                      "chunk_tokns: 3}\n");
  EXPECT_NE(e.find("did you mean"), std::string::npos) << e;
}

// The shipped comparison pair replays one request stream: their workload
// sections are identical text and the streams are equal request by request.
TEST(RagScenarios, PrefixAndChunkScenariosShareOneRequestStream) {
  const std::string dir = testing::configs_dir() + "/scenarios/";
  const YAML::Node prefix = YAML::LoadFile(dir + "rag-910b2-prefix.yaml");
  const YAML::Node chunk = YAML::LoadFile(dir + "rag-910b2-chunk-lru.yaml");
  EXPECT_EQ(YAML::Dump(prefix["workload"]), YAML::Dump(chunk["workload"]));
  const ScenarioSpec a = load_scenario(dir + "rag-910b2-prefix.yaml");
  const ScenarioSpec b = load_scenario(dir + "rag-910b2-chunk-lru.yaml");
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(std::string(a.policy().name()), "paged");
  EXPECT_TRUE(a.policy().values().boolean("prefix_caching"));
  EXPECT_EQ(std::string(b.policy().name()), "chunk_lru");
  const auto ra = take_all(*a.workload, a.seed, a.model.vocab_size);
  const auto rb = take_all(*b.workload, b.seed, b.model.vocab_size);
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].arrival, rb[i].arrival);
    EXPECT_EQ(ra[i].prompt, rb[i].prompt);
    EXPECT_EQ(ra[i].output, rb[i].output);
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
