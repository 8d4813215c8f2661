// Workload kinds, arrival processes and distributions read only the keys
// they declare (workloads/workload_params.hpp): a key of a sibling is an
// error naming its owner, exit 2; the catalog lists them; `--set KEY=null`
// removes a key so that a policy can be compared with one that does not own
// it (the workflow configs/scenarios/sliding-window-paged.yaml describes).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "base/reader.hpp"
#include "report_test_helpers.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/scenario/component_catalog.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/test_paths.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;

// A server scenario whose line 4 is the workload map.
std::string scenario(const std::string& workload) {
  return "device: ascend-910b2\n"
         "model: llama-3.2-1b\n"
         "kv_cache: {policy: paged}\n"
         "workload: " +
         workload + "\n";
}

std::string load_error(const std::string& yaml) {
  try {
    testing::scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

struct ForeignCase {
  const char* workload;
  const char* expected;
};

void expect_foreign(const std::vector<ForeignCase>& cases) {
  for (const auto& c : cases) {
    const std::string e = load_error(scenario(c.workload));
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.workload << "\n" << e;
  }
}

constexpr const char* kArrival = "arrival: {process: poisson, rate_per_s: 1}";

TEST(WorkloadParams, AKeyOfAnotherKindNamesItsOwner) {
  const std::string single =
      fmt::format("requests: 1, {}, input_tokens: 8, output_tokens: 2", kArrival);
  const std::string synthetic = "{kind: synthetic, " + single;
  const std::string fixed = "{kind: fixed, " + single;
  const std::string chat = fmt::format(
      "{{kind: chat, sessions: 1, {}, turns: 1, user_tokens: 8, output_tokens: 2, think_time: 1s",
      kArrival);
  const std::string dialog = "{kind: dialog, turns: 1, prompt_tokens: 8, reply_tokens: 2";
  const std::string rag = fmt::format(
      "{{kind: rag, requests: 1, {}, docs: {{corpus: 10, zipf: 1.1, per_request: 2, "
      "chunk_tokens: 16}}, question_tokens: 8, output_tokens: 2",
      kArrival);
  const std::string trace = "{trace: {format: mooncake, path: none.jsonl}";
  const std::vector<std::string> owned = {
      synthetic + ", sessions: 3}",
      chat + ", requests: 3}",
      dialog + ", sys_prompt_tokens: 4}",
      rag + ", turns: 2}",
      fixed + ", shared_prefix: {tokens: 4}}",
      trace + ", turns: 2}",
  };
  const std::vector<std::string> expected = {
      "workload.sessions: not a parameter of workload 'synthetic' (it belongs to agentic, chat)",
      "workload.requests: not a parameter of workload 'chat' (it belongs to fixed, rag, "
      "synthetic)",
      "workload.sys_prompt_tokens: not a parameter of workload 'dialog' (it belongs to rag)",
      "workload.turns: not a parameter of workload 'rag' (it belongs to chat, dialog)",
      "workload.shared_prefix: not a parameter of workload 'fixed' (it belongs to synthetic)",
      "workload.turns: not a parameter of workload 'trace' (it belongs to chat, dialog)",
  };
  for (size_t i = 0; i < owned.size(); ++i) {
    const std::string e = load_error(scenario(owned[i]));
    EXPECT_NE(e.find("test.yaml:4:"), std::string::npos) << owned[i] << "\n" << e;
    EXPECT_NE(e.find(expected[i]), std::string::npos) << owned[i] << "\n" << e;
  }
}

TEST(WorkloadParams, AKeyOfAnotherArrivalProcessNamesItsOwner) {
  expect_foreign({
      {"{kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1, cv: 2}, "
       "input_tokens: 8, output_tokens: 2}",
       "workload.arrival.cv: not a parameter of arrival 'poisson' (it belongs to gamma)"},
      {"{kind: synthetic, requests: 1, arrival: {process: gamma, rate_per_s: 1, cv: 2, "
       "concurrency: 4}, input_tokens: 8, output_tokens: 2}",
       "workload.arrival.concurrency: not a parameter of arrival 'gamma' (it belongs to closed)"},
      {"{kind: synthetic, requests: 1, arrival: {process: constant, rate_per_s: 1, think_time: "
       "1s}, input_tokens: 8, output_tokens: 2}",
       "workload.arrival.think_time: not a parameter of arrival 'constant' (it belongs to "
       "closed)"},
      {"{kind: synthetic, requests: 1, arrival: {process: closed, concurrency: 2, rate_per_s: "
       "1}, input_tokens: 8, output_tokens: 2}",
       "workload.arrival.rate_per_s: not a parameter of arrival 'closed' (it belongs to "
       "constant, gamma, poisson)"},
  });
}

TEST(WorkloadParams, AKeyOfAnotherDistributionNamesItsOwner) {
  auto with = [](const std::string& dist) {
    return fmt::format("{{kind: synthetic, requests: 1, {}, input_tokens: {}, output_tokens: 2}}",
                       kArrival, dist);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{dist: normal, mean: 8, std: 1, max: 20, sigma: 1}", "'normal' (it belongs to lognormal)"},
      {"{dist: uniform, min: 1, max: 8, mean: 4}",
       "'uniform' (it belongs to exponential, lognormal, normal)"},
      {"{dist: constant, value: 8, s: 1.1}", "'constant' (it belongs to zipf)"},
      {"{dist: lognormal, mean: 8, sigma: 1, max: 20, std: 1}",
       "'lognormal' (it belongs to normal)"},
      {"{dist: exponential, mean: 8, max: 20, value: 3}", "'exponential' (it belongs to constant)"},
      {"{dist: zipf, s: 1.1, min: 1, max: 8, values: [1]}", "'zipf' (it belongs to empirical)"},
      {"{dist: empirical, values: [4, 8], sigma: 1}", "'empirical' (it belongs to lognormal)"},
  };
  for (const auto& [dist, owner] : cases) {
    const std::string e = load_error(scenario(with(dist)));
    EXPECT_NE(e.find("not a parameter of distribution " + owner), std::string::npos) << dist << "\n"
                                                                                     << e;
    EXPECT_NE(e.find("workload.input_tokens."), std::string::npos) << e;
  }
}

TEST(WorkloadParams, UnknownKeysStillSuggestTheClosest) {
  const std::string e = load_error(scenario(fmt::format(
      "{{kind: synthetic, requests: 1, {}, input_tokens: {{dist: normal, mean: 8, sdt: 1, max: "
      "20}}, output_tokens: 2}}",
      kArrival)));
  EXPECT_NE(e.find("did you mean 'std'"), std::string::npos) << e;
  const std::string k = load_error(scenario(fmt::format(
      "{{kind: synthetic, requests: 1, {}, input_tokens: 8, output_tokns: 2}}", kArrival)));
  EXPECT_NE(k.find("did you mean 'output_tokens'"), std::string::npos) << k;
}

TEST(WorkloadParams, TheCatalogListsKindsArrivalsAndDistributions) {
  std::map<std::string, std::set<std::string>> names;
  for (const auto& kind : component_catalog())
    for (const auto& info : kind.infos)
      if (info.kind != "section") names[kind.name].insert(info.name);
  EXPECT_EQ(names["workloads"],
            (std::set<std::string>{"agentic", "chat", "dialog", "fixed", "llama_bench", "rag",
                                   "synthetic", "trace"}));
  EXPECT_EQ(names["arrivals"], (std::set<std::string>{"closed", "constant", "gamma", "poisson"}));
  EXPECT_EQ(names["distributions"],
            (std::set<std::string>{"constant", "empirical", "exponential", "lognormal", "normal",
                                   "uniform", "zipf"}));
  // A quantity's unit is that of the key it describes, not a fixed one.
  for (const auto& info : distribution_infos())
    for (const auto& p : info.params)
      if (p.type == config::ParamType::quantity) {
        EXPECT_EQ(p.unit, config::kQuantityUnit);
      }
}

TEST(WorkloadParams, PoliciesSayWhereTheyRunAndWhetherNumericsFollowsThem) {
  config::ParamValues over;
  over.set("update_mode", std::string("paged"), true);
  const auto window_paged = make_policy_spec("sliding_window", over);
  EXPECT_EQ(window_paged->device_buffers(), nullptr);
  ASSERT_NE(window_paged->block_pool(), nullptr);
  EXPECT_EQ(window_paged->block_pool()->numerics(), ServingNumerics::none);
  over.set("update_mode", std::string("pointer_shift"), true);
  const auto window_genie = make_policy_spec("sliding_window", over);
  EXPECT_EQ(window_genie->block_pool(), nullptr);
  ASSERT_NE(window_genie->device_buffers(), nullptr);
  EXPECT_TRUE(window_genie->device_buffers()->numerics_mode().has_value());
  for (const char* p : {"paged", "chunk_lru"}) {
    const auto spec = make_policy_spec(p);
    EXPECT_EQ(spec->device_buffers(), nullptr) << p;
    ASSERT_NE(spec->block_pool(), nullptr) << p;
    EXPECT_NE(spec->block_pool()->numerics(), ServingNumerics::none) << p;
  }
  for (const char* p : {"pointer_shift", "shift_concat", "smart_mask"}) {
    const auto spec = make_policy_spec(p);
    EXPECT_EQ(spec->block_pool(), nullptr) << p;
    ASSERT_NE(spec->device_buffers(), nullptr) << p;
    EXPECT_TRUE(spec->device_buffers()->numerics_mode().has_value()) << p;
  }
  // llama.cpp's cells run under either engine; their numerics are generate's.
  const auto cells = make_policy_spec("llama_cells");
  EXPECT_NE(cells->block_pool(), nullptr);
  ASSERT_NE(cells->device_buffers(), nullptr);
  EXPECT_FALSE(cells->device_buffers()->numerics_mode().has_value());
}

TEST(SetOverride, NullRemovesTheKeyAndAnEmptyValueIsAnError) {
  config::LoadContext ctx;
  YAML::Node doc =
      YAML::Load("kv_cache: {policy: sliding_window, window: 64, update_mode: paged}\n");
  ASSERT_TRUE(config::apply_override(doc, "kv_cache.window=null", ctx));
  ASSERT_TRUE(config::apply_override(doc, "kv_cache.update_mode=~", ctx));
  EXPECT_FALSE(doc["kv_cache"]["window"].IsDefined());
  EXPECT_FALSE(doc["kv_cache"]["update_mode"].IsDefined());
  EXPECT_EQ(doc["kv_cache"]["policy"].as<std::string>(), "sliding_window");
  EXPECT_EQ(ctx.diagnostics.size(), 0u);

  EXPECT_FALSE(config::apply_override(doc, "kv_cache.window=null", ctx));  // gone already
  EXPECT_FALSE(config::apply_override(doc, "nothing.here=~", ctx));
  EXPECT_FALSE(config::apply_override(doc, "kv_cache.block_size=", ctx));
  ASSERT_EQ(ctx.diagnostics.size(), 3u);
  EXPECT_NE(ctx.diagnostics.all()[0].format().find("nothing to remove"), std::string::npos);
  EXPECT_NE(ctx.diagnostics.all()[2].format().find(
                "--set kv_cache.block_size:1:21: kv_cache.block_size: has no value"),
            std::string::npos)
      << ctx.diagnostics.all()[2].format();
  EXPECT_NE(ctx.diagnostics.all()[2].format().find("kv_cache.block_size=null"), std::string::npos);
  EXPECT_FALSE(doc["nothing"].IsDefined());  // a removal creates nothing on its way
}

class WorkloadParamsCli : public testing::TempFolderTest {
 protected:
  testing::CommandResult run(const std::string& args) { return kvsim(args); }
  std::string scenario_path(const char* name) {
    return (fs::path(KVSIM_SOURCE_DIR) / "configs" / "scenarios" / name).string();
  }
};

TEST_F(WorkloadParamsCli, AForeignWorkloadKeyIsExit2) {
  const fs::path file = dir_ / "s.yaml";
  std::ofstream(file) << scenario(fmt::format(
      "{{kind: synthetic, requests: 1, sessions: 3, {}, input_tokens: 8, output_tokens: 2}}",
      kArrival));
  const auto r = run("validate " + file.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(file.string() +
                          ":4:42: workload.sessions: not a parameter of workload 'synthetic' (it "
                          "belongs to agentic, chat)"),
            std::string::npos)
      << r.output;
}

TEST_F(WorkloadParamsCli, ListAndDescribeCoverWorkloadsArrivalsAndDistributions) {
  for (const char* kind : {"workloads", "arrivals", "distributions"}) {
    const auto r = run(std::string("list ") + kind + " --params");
    EXPECT_EQ(r.exit_code, 0) << kind << r.output;
  }
  EXPECT_EQ(run("list arrivals --names").output, "closed\nconstant\ngamma\npoisson\n");
  const auto d = run("describe lognormal");
  EXPECT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("| `mean` | quantity | `required` | tokens or time, as the key it "
                          "describes | > 0 |"),
            std::string::npos)
      << d.output;
  // "constant" is both an arrival process and a distribution: both print.
  const auto c = run("describe constant");
  EXPECT_NE(c.output.find("constant (arrival)"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("constant (distribution)"), std::string::npos) << c.output;
}

// The compare workflow configs/scenarios/sliding-window-paged.yaml describes
// in its description, exactly as written there: the window's own keys stay
// sliding_window's settings when the policy changes. Removing them with
// `=null`, the spelling before policies kept their own keys, works too.
TEST_F(WorkloadParamsCli, SlidingWindowAgainstPagedThroughSetPolicy) {
  std::ifstream yaml(scenario_path("sliding-window-paged.yaml"));
  const std::string text((std::istreambuf_iterator<char>(yaml)), {});
  EXPECT_NE(text.find("With `--set kv_cache.policy=paged` (window and\n  update_mode stay "
                      "sliding_window's settings)"),
            std::string::npos);
  for (const std::string sets :
       {"--set kv_cache.policy=paged",
        "--set kv_cache.policy=paged --set kv_cache.window=null --set kv_cache.update_mode=null"}) {
    const fs::path out = dir_ / (sets.size() > 30 ? "null" : "paged");
    const auto r = run(fmt::format("run {} {} --quiet --out {}",
                                   scenario_path("sliding-window-paged.yaml"), sets, out.string()));
    EXPECT_EQ(r.output.find("not a parameter"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("expect.kv_cache.peak_used_bytes: 6283067392 is above max"),
              std::string::npos)
        << sets << "\n"
        << r.output;
    EXPECT_TRUE(fs::exists(out / "metrics.json")) << r.output;
  }
}

TEST_F(WorkloadParamsCli, HtpWindowAgainstPointerShiftThroughSetNull) {
  const auto r = run(
      fmt::format("run {} --set kv_cache.policy=pointer_shift --set kv_cache.window=null --set "
                  "kv_cache.update_mode=null --quiet --out {}",
                  scenario_path("htp-sliding-window-long-dialog.yaml"), (dir_ / "ps").string()));
  EXPECT_EQ(r.output.find("not a parameter"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("expect.kv_cache.context_resets: 9 is not equal to 0"), std::string::npos)
      << r.output;
  const auto empty =
      run(fmt::format("run {} --set kv_cache.window= --quiet --out {}",
                      scenario_path("htp-sliding-window-long-dialog.yaml"), (dir_ / "e").string()));
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_NE(empty.output.find("has no value"), std::string::npos) << empty.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
