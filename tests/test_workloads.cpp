// Synthetic request streams of workloads/: determinism, arrivals, shared
// prefixes, streaming memory, bounds. Chat streams: test_workload_chat.cpp.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "workload_helpers.hpp"
#include "workloads/workload.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::parse_ok;

std::vector<Request> drain(RequestSource& source, size_t limit = SIZE_MAX) {
  std::vector<Request> out;
  while (out.size() < limit && source.next_arrival()) out.push_back(source.take());
  return out;
}

std::vector<double> arrival_gaps(const std::vector<Request>& requests) {
  std::vector<double> gaps;
  for (size_t i = 1; i < requests.size(); ++i)
    gaps.push_back(static_cast<double>(requests[i].arrival - requests[i - 1].arrival));
  return gaps;
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

const char* kSynthetic = R"(
kind: synthetic
requests: 300
arrival: {process: poisson, rate_per_s: 4}
input_tokens: {dist: lognormal, mean: 256, sigma: 0.6, min: 16, max: 2048}
output_tokens: {dist: uniform, min: 4, max: 64}
shared_prefix: {groups: 4, tokens: 64, popularity: uniform}
)";

TEST(Workloads, KindsListed) {
  EXPECT_EQ(workload_kinds(),
            (std::vector<std::string>{"agentic", "chat", "dialog", "fixed", "llama_bench", "rag",
                                      "synthetic", "trace"}));
}

TEST(SyntheticWorkload, SameSeedGivesIdenticalStream) {
  const auto spec = parse_ok(kSynthetic);
  auto a = drain(*make_request_source(*spec, 42, 32000));
  auto b = drain(*make_request_source(*spec, 42, 32000));
  ASSERT_EQ(a.size(), 300u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, i);
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].arrival, b[i].arrival);
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].output, b[i].output);
    EXPECT_EQ(a[i].prefix_group, b[i].prefix_group);
  }
}

TEST(SyntheticWorkload, DifferentSeedGivesDifferentStream) {
  const auto spec = parse_ok(kSynthetic);
  auto a = drain(*make_request_source(*spec, 1, 32000));
  auto b = drain(*make_request_source(*spec, 2, 32000));
  int same_arrival = 0, same_prompt = 0;
  for (size_t i = 1; i < a.size(); ++i) {
    same_arrival += a[i].arrival == b[i].arrival;
    same_prompt += a[i].prompt == b[i].prompt;
  }
  EXPECT_EQ(same_arrival, 0);
  EXPECT_EQ(same_prompt, 0);
}

TEST(SyntheticWorkload, ChangingOutputLengthsDoesNotMoveArrivalsOrPrompts) {
  const auto spec = parse_ok(kSynthetic);
  std::string other = kSynthetic;
  other.replace(other.find("{dist: uniform, min: 4, max: 64}"), 32,
                "{dist: exponential, mean: 300, max: 900}");
  const auto spec2 = parse_ok(other);
  auto a = drain(*make_request_source(*spec, 9, 32000));
  auto b = drain(*make_request_source(*spec2, 9, 32000));
  ASSERT_EQ(a.size(), b.size());
  int same_output_length = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival, b[i].arrival);
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    same_output_length += a[i].output.size() == b[i].output.size();
  }
  EXPECT_LT(same_output_length, 30);
}

TEST(SyntheticWorkload, SharedPrefixIdenticalWithinGroupDifferentAcrossGroups) {
  const auto spec = parse_ok(kSynthetic);
  auto requests = drain(*make_request_source(*spec, 5, 512));
  std::map<int32_t, std::vector<int32_t>> prefix_of_group;
  std::set<std::vector<int32_t>> tails;
  for (const auto& r : requests) {
    ASSERT_GE(r.prefix_group, 0);
    ASSERT_LT(r.prefix_group, 4);
    ASSERT_GE(r.prompt.size(), 64u + 16u);
    ASSERT_LE(r.prompt.size(), 64u + 2048u);
    ASSERT_GE(r.output.size(), 4u);
    ASSERT_LE(r.output.size(), 64u);
    for (int32_t t : r.prompt) ASSERT_TRUE(t >= 0 && t < 512);
    for (int32_t t : r.output) ASSERT_TRUE(t >= 0 && t < 512);
    const std::vector<int32_t> prefix(r.prompt.begin(), r.prompt.begin() + 64);
    auto [it, inserted] = prefix_of_group.emplace(r.prefix_group, prefix);
    if (!inserted) {
      EXPECT_EQ(it->second, prefix) << "group " << r.prefix_group;
    }
    // The unique tail: its first 16 tokens differ between any two requests.
    tails.emplace(r.prompt.begin() + 64, r.prompt.begin() + 80);
  }
  ASSERT_EQ(prefix_of_group.size(), 4u);
  std::set<std::vector<int32_t>> distinct_prefixes;
  for (const auto& [group, prefix] : prefix_of_group) distinct_prefixes.insert(prefix);
  EXPECT_EQ(distinct_prefixes.size(), 4u);
  EXPECT_EQ(tails.size(), requests.size());
}

TEST(SyntheticWorkload, ZipfPopularityFavoursTheFirstGroups) {
  const auto spec = parse_ok(R"(
kind: synthetic
requests: 5000
arrival: {process: constant, rate_per_s: 100}
input_tokens: 1
output_tokens: 1
shared_prefix: {groups: 8, tokens: 4, popularity: zipf, zipf_s: 1.0}
)");
  std::vector<int> counts(8, 0);
  for (const auto& r : drain(*make_request_source(*spec, 3, 100))) ++counts[r.prefix_group];
  for (int g = 0; g < 3; ++g) EXPECT_GT(counts[g], counts[g + 1]) << g;
  EXPECT_NEAR(static_cast<double>(counts[0]) / counts[1], 2.0, 0.25);
}

TEST(SyntheticWorkload, PoissonMeanInterArrivalWithin3Percent) {
  const auto spec = parse_ok(R"(
kind: synthetic
requests: 20001
arrival: {process: poisson, rate_per_s: 4}
input_tokens: 1
output_tokens: 1
)");
  const auto requests = drain(*make_request_source(*spec, 77, 1000));
  EXPECT_EQ(requests.front().arrival, 0);
  const auto gaps = arrival_gaps(requests);
  ASSERT_EQ(gaps.size(), 20000u);
  EXPECT_NEAR(mean_of(gaps), 0.25 * kNsPerS, 0.03 * 0.25 * kNsPerS);
  // Exponential gaps: the standard deviation equals the mean.
  double sum2 = 0;
  for (double g : gaps) sum2 += (g - mean_of(gaps)) * (g - mean_of(gaps)) / gaps.size();
  EXPECT_NEAR(std::sqrt(sum2) / mean_of(gaps), 1.0, 0.05);
}

TEST(SyntheticWorkload, GammaArrivalsHaveTheRequestedCv) {
  const auto spec = parse_ok(R"(
kind: synthetic
requests: 50001
arrival: {process: gamma, rate_per_s: 8, cv: 2.0}
input_tokens: 1
output_tokens: 1
)");
  const auto gaps = arrival_gaps(drain(*make_request_source(*spec, 13, 1000)));
  const double mean = mean_of(gaps);
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean) / gaps.size();
  EXPECT_NEAR(mean, 0.125 * kNsPerS, 0.03 * 0.125 * kNsPerS);
  EXPECT_NEAR(std::sqrt(var) / mean, 2.0, 0.1);
}

TEST(SyntheticWorkload, ConstantArrivalsAreExactlySpaced) {
  const auto spec = parse_ok(R"(
kind: synthetic
requests: 1000
arrival: {process: constant, rate_per_s: 4}
input_tokens: {dist: constant, value: 8}
output_tokens: 2
)");
  const auto requests = drain(*make_request_source(*spec, 1, 1000));
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].arrival, static_cast<TimeNs>(i) * 250 * kNsPerMs);
    EXPECT_EQ(requests[i].prompt.size(), 8u);
    EXPECT_EQ(requests[i].output.size(), 2u);
    EXPECT_EQ(requests[i].prefix_group, -1);
  }
}

TEST(SyntheticWorkload, MillionRequestsStreamInConstantMemory) {
  const auto spec = parse_ok(R"(
kind: synthetic
requests: 1000000
arrival: {process: poisson, rate_per_s: 1000}
input_tokens: 2
output_tokens: 1
)");
  auto source = make_request_source(*spec, 4, 32000);
  const auto* introspect = dynamic_cast<const WorkloadSource*>(source.get());
  ASSERT_NE(introspect, nullptr);
  TimeNs last = -1;
  uint64_t count = 0;
  while (source->next_arrival()) {
    const Request r = source->take();  // only one request alive at a time
    ASSERT_GE(r.arrival, last);
    last = r.arrival;
    ++count;
    if (count % 100000 == 0) {
      ASSERT_EQ(introspect->held_entries(), 0u);
    }
  }
  EXPECT_EQ(count, 1000000u);
  EXPECT_EQ(introspect->taken(), 1000000u);
  EXPECT_TRUE(source->exhausted());
  EXPECT_THROW(source->take(), std::logic_error);
}

TEST(SyntheticWorkload, BoundsCoverPrefixAndClamps) {
  const auto spec = parse_ok(R"(
kind: synthetic
requests: 10
arrival: {process: poisson, rate_per_s: 4}
input_tokens: {dist: lognormal, mean: 1024, sigma: 0.6, min: 16, max: 8192}
output_tokens: {dist: uniform, min: 64, max: 512}
shared_prefix: {groups: 8, tokens: 512}
)");
  const auto bounds = workload_bounds(*spec);
  EXPECT_EQ(bounds.max_prompt_tokens, 512 + 8192);
  EXPECT_EQ(bounds.max_output_tokens, 512);
}

TEST(Workloads, VocabularyMustBePositive) {
  const auto spec = parse_ok(kSynthetic);
  EXPECT_THROW(make_request_source(*spec, 1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
