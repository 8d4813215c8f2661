// Validation of the `workload:` map: every bad input is a diagnostic with
// file:line:col and the full key path, all of a file's problems together.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "workloads/workload.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

struct Parsed {
  std::shared_ptr<const WorkloadSpec> spec;
  std::vector<config::Diagnostic> errors;

  // The diagnostic at `key_path`, failing the test when there is none.
  config::Diagnostic at(const std::string& key_path) const {
    for (const auto& d : errors)
      if (d.key_path == key_path) return d;
    std::string all;
    for (const auto& d : errors) all += "\n  " + d.format();
    ADD_FAILURE() << "no diagnostic at " << key_path << "; got:" << all;
    return {};
  }
};

// The YAML text holds a whole scenario; line 1 is the line after R"(.
Parsed parse(const std::string& scenario) {
  config::LoadContext ctx;
  const YAML::Node root = YAML::Load(scenario);
  Parsed p;
  p.spec = parse_workload(config::Node(root["workload"], "workload", "scenario.yaml", &ctx));
  p.errors = ctx.diagnostics.all();
  return p;
}

TEST(WorkloadConfig, BriefExamplesParse) {
  const auto synthetic = parse(R"(workload:
  kind: synthetic
  requests: 1000
  arrival: {process: poisson, rate_per_s: 4}
  input_tokens: {dist: lognormal, mean: 1024, sigma: 0.6, min: 16, max: 8192}
  output_tokens: {dist: uniform, min: 64, max: 512}
  shared_prefix: {groups: 8, tokens: 512, popularity: uniform}
)");
  EXPECT_TRUE(synthetic.errors.empty());
  ASSERT_TRUE(synthetic.spec);
  const auto& s = std::get<SyntheticWorkloadSpec>(synthetic.spec->body);
  EXPECT_EQ(s.requests, 1000);
  EXPECT_DOUBLE_EQ(s.arrival->rate_per_s(), 4.0);
  EXPECT_EQ(s.shared_prefix->groups, 8);
  EXPECT_EQ(s.input_tokens->name(), "lognormal");

  const auto chat = parse(R"(workload:
  kind: chat
  sessions: 200
  arrival: {process: gamma, rate_per_s: 0.5, cv: 2.0}
  turns: {dist: uniform, min: 2, max: 6}
  system_prompt_tokens: 256
  user_tokens: {dist: lognormal, mean: 200, sigma: 0.5, min: 8, max: 2048}
  output_tokens: {dist: lognormal, mean: 150, sigma: 0.5, min: 8, max: 1024}
  think_time: {dist: exponential, mean: 10s}
  max_context_tokens: 32768
)");
  EXPECT_TRUE(chat.errors.empty());
  ASSERT_TRUE(chat.spec);
  const auto& c = std::get<ChatWorkloadSpec>(chat.spec->body);
  EXPECT_EQ(c.system_prompt_tokens, 256);
  EXPECT_EQ(c.max_context_tokens, 32768);
  EXPECT_DOUBLE_EQ(c.think_time->distribution().mean(), 10.0 * kNsPerS);
}

TEST(WorkloadConfig, UnknownDistributionSuggestsTheClosest) {
  const auto p = parse(R"(workload:
  kind: synthetic
  requests: 10
  arrival: {process: poisson, rate_per_s: 4}
  input_tokens: {dist: lognorml, mean: 1024, sigma: 0.6, max: 8192}
  output_tokens: 16
)");
  EXPECT_FALSE(p.spec);
  const auto d = p.at("workload.input_tokens.dist");
  EXPECT_EQ(d.where.file, "scenario.yaml");
  EXPECT_EQ(d.where.line, 5);
  EXPECT_NE(d.problem.find("did you mean 'lognormal'"), std::string::npos) << d.format();
  EXPECT_NE(d.allowed.find("zipf"), std::string::npos);  // lists what exists
}

TEST(WorkloadConfig, MinAboveMaxIsReportedAtMax) {
  const auto p = parse(R"(workload:
  kind: synthetic
  requests: 10
  arrival: {process: poisson, rate_per_s: 4}
  input_tokens: 100
  output_tokens:
    dist: uniform
    min: 512
    max: 64
)");
  EXPECT_FALSE(p.spec);
  const auto d = p.at("workload.output_tokens.max");
  EXPECT_EQ(d.where.line, 9);
  EXPECT_EQ(d.where.col, 10);
  EXPECT_NE(d.problem.find("less than min"), std::string::npos) << d.format();
}

TEST(WorkloadConfig, RatesMustBePositive) {
  const auto negative = parse(R"(workload:
  kind: synthetic
  requests: 10
  arrival: {process: poisson, rate_per_s: -4}
  input_tokens: 100
  output_tokens: 16
)");
  EXPECT_FALSE(negative.spec);
  const auto d = negative.at("workload.arrival.rate_per_s");
  EXPECT_EQ(d.where.line, 4);
  EXPECT_NE(d.problem.find("greater than 0"), std::string::npos) << d.format();

  const auto zero_cv = parse(R"(workload:
  kind: synthetic
  requests: 10
  arrival: {process: gamma, rate_per_s: 4, cv: 0}
  input_tokens: 100
  output_tokens: 16
)");
  EXPECT_NE(zero_cv.at("workload.arrival.cv").problem.find("greater than 0"), std::string::npos);
}

TEST(WorkloadConfig, MissingRequiredKeysAreNamedAtTheirMap) {
  const auto p = parse(R"(workload:
  kind: synthetic
  arrival: {process: gamma, rate_per_s: 4}
  input_tokens: {dist: normal, mean: 100, max: 400}
  output_tokens: 16
)");
  EXPECT_FALSE(p.spec);
  EXPECT_EQ(p.at("workload.requests").where.line, 2);  // the workload map starts on line 2
  EXPECT_NE(p.at("workload.requests").problem.find("required"), std::string::npos);
  EXPECT_EQ(p.at("workload.arrival.cv").where.line, 3);
  EXPECT_EQ(p.at("workload.input_tokens.std").where.line, 4);
  EXPECT_EQ(p.errors.size(), 3u);  // every problem of the file at once
}

TEST(WorkloadConfig, UnknownKeysAndNamesSuggestTheClosest) {
  const auto p = parse(R"(workload:
  kind: synthetic
  reqests: 10
  arrival: {process: poison, rate_per_s: 4}
  input_tokens: {dist: uniform, min: 1, max: 8, maxx: 9}
  output_tokens: 16
)");
  EXPECT_NE(p.at("workload.reqests").problem.find("did you mean 'requests'"), std::string::npos);
  EXPECT_EQ(p.at("workload.reqests").where.line, 3);
  EXPECT_NE(p.at("workload.arrival.process").problem.find("did you mean 'poisson'"),
            std::string::npos);
  EXPECT_NE(p.at("workload.input_tokens.maxx").problem.find("did you mean 'max'"),
            std::string::npos);
  const auto kind = parse("workload: {kind: chatt}\n");
  EXPECT_NE(kind.at("workload.kind").problem.find("did you mean 'chat'"), std::string::npos);
  // Keys of the other kind are unknown keys, not silently ignored.
  const auto mixed = parse(R"(workload:
  kind: synthetic
  requests: 10
  sessions: 5
  arrival: {process: poisson, rate_per_s: 4}
  input_tokens: 100
  output_tokens: 16
)");
  EXPECT_EQ(mixed.at("workload.sessions").where.line, 4);
}

TEST(WorkloadConfig, DistributionSpecificRules) {
  const auto p = parse(R"(workload:
  kind: synthetic
  requests: 10
  arrival: {process: constant, rate_per_s: 1}
  input_tokens: {dist: lognormal, mean: 1024, sigma: -0.6}
  output_tokens: {dist: zipf, s: 1.1, max: 100}
  shared_prefix: {groups: 4, tokens: 16, zipf_s: 1.2}
)");
  EXPECT_FALSE(p.spec);
  EXPECT_NE(p.at("workload.input_tokens.sigma").problem.find("out of range"), std::string::npos);
  EXPECT_NE(p.at("workload.input_tokens.max").problem.find("unbounded"), std::string::npos);
  EXPECT_NE(p.at("workload.output_tokens.min").problem.find("required"), std::string::npos);
  EXPECT_NE(p.at("workload.shared_prefix.zipf_s").problem.find("popularity: zipf"),
            std::string::npos);
}

TEST(WorkloadConfig, FloorsAreNeverSilentlyRaised) {
  const auto p = parse(R"(workload:
  kind: synthetic
  requests: 10
  arrival: {process: constant, rate_per_s: 1}
  input_tokens: {dist: uniform, min: 0, max: 8}
  output_tokens: {dist: empirical, values: [4, 0, 9]}
)");
  EXPECT_NE(p.at("workload.input_tokens.min").problem.find("at least 1 token"), std::string::npos);
  const auto d = p.at("workload.output_tokens.values[1]");
  EXPECT_EQ(d.where.line, 6);
  EXPECT_NE(d.problem.find("at least 1 token"), std::string::npos) << d.format();
  // With a shared prefix the unique part may be empty; an explicit min clamps.
  const auto ok = parse(R"(workload:
  kind: synthetic
  requests: 10
  arrival: {process: constant, rate_per_s: 1}
  input_tokens: {dist: uniform, min: 0, max: 8}
  output_tokens: {dist: empirical, values: [4, 0, 9], min: 1}
  shared_prefix: {tokens: 16}
)");
  EXPECT_TRUE(ok.errors.empty()) << ok.errors.front().format();
}

TEST(WorkloadConfig, EmpiricalNeedsExactlyOneSource) {
  const auto p = parse(R"(workload:
  kind: synthetic
  requests: 10
  arrival: {process: constant, rate_per_s: 1}
  input_tokens: {dist: empirical, values: [1, 2], path: x.csv}
  output_tokens: {dist: empirical, path: does_not_exist.csv}
)");
  EXPECT_NE(p.at("workload.input_tokens").problem.find("exactly one"), std::string::npos);
  EXPECT_NE(p.at("workload.output_tokens.path").problem.find("cannot read"), std::string::npos);
}

TEST(WorkloadConfig, ChatDurationsAndContext) {
  const auto p = parse(R"(workload:
  kind: chat
  sessions: 5
  arrival: {process: poisson, rate_per_s: 1}
  turns: {dist: uniform, min: 2, max: 6}
  system_prompt_tokens: 1000
  user_tokens: {dist: uniform, min: 100, max: 200}
  output_tokens: 64
  think_time: {dist: exponential, mean: 10}
  max_context_tokens: 1000
)");
  EXPECT_FALSE(p.spec);
  const auto think = p.at("workload.think_time.mean");
  EXPECT_EQ(think.where.line, 9);
  EXPECT_NE(think.allowed.find("duration"), std::string::npos) << think.format();
  // max_context_tokens is cross-checked only once the rest is valid.
  const auto context = parse(R"(workload:
  kind: chat
  sessions: 5
  arrival: {process: poisson, rate_per_s: 1}
  turns: 3
  system_prompt_tokens: 1000
  user_tokens: {dist: uniform, min: 100, max: 200}
  output_tokens: 64
  think_time: 10s
  max_context_tokens: 1000
)");
  const auto d = context.at("workload.max_context_tokens");
  EXPECT_EQ(d.where.line, 10);
  EXPECT_NE(d.problem.find("1164"), std::string::npos) << d.format();
}

TEST(WorkloadConfig, ErrorsThrowTogetherAsConfigError) {
  config::LoadContext ctx;
  const YAML::Node root = YAML::Load("workload: {kind: synthetic, requests: 0}\n");
  EXPECT_FALSE(parse_workload(config::Node(root["workload"], "workload", "s.yaml", &ctx)));
  EXPECT_GE(ctx.diagnostics.size(), 4u);  // requests, arrival, input_tokens, output_tokens
  EXPECT_THROW(ctx.diagnostics.throw_if_any(), config::ConfigError);
  const auto missing = parse("name: x\n");
  EXPECT_FALSE(missing.spec);
  EXPECT_EQ(missing.errors.size(), 1u);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
