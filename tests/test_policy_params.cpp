// Each cache policy reads only the keys it declares (sim/policies/):
// a key of another policy is an error naming its owners, at FILE:LINE:COL,
// exit 2; a wrapping policy (sliding_window) takes its base's keys; the
// defaults of CacheConfig are the declarations'; docs/yaml.md holds the
// tables the declarations make.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "report_test_helpers.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/scenario/component_catalog.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {
namespace fs = std::filesystem;

// A server scenario; line 4 onwards is the kv_cache map.
std::string scenario(const std::string& kv_cache_lines) {
  return "device: ascend-910b2\n"
         "model: llama-3.2-1b\n"
         "kv_cache:\n" +
         kv_cache_lines +
         "workload: {kind: synthetic, requests: 1, arrival: {process: poisson, rate_per_s: 1}, "
         "input_tokens: 8, output_tokens: 2}\n";
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
  const char* kv_cache;  // its last line is the foreign key
  const char* expected;  // "test.yaml:LINE:COL: key: ..."
};

TEST(PolicyParams, AKeyOfAnotherPolicyNamesItsOwners) {
  const ForeignCase cases[] = {
      {"  policy: paged\n  ctx_size: 2048\n",
       "test.yaml:5:3: kv_cache.ctx_size: not a parameter of policy 'paged' (it belongs to "
       "llama_cells, native_kv, pointer_shift, shift_concat, sliding_window, smart_mask)"},
      {"  policy: paged\n  window: 64\n",
       "test.yaml:5:3: kv_cache.window: not a parameter of policy 'paged' (it belongs to "
       "sliding_window)"},
      {"  policy: chunk_lru\n  update_threads: 2\n",
       "test.yaml:5:3: kv_cache.update_threads: not a parameter of policy 'chunk_lru' (it belongs "
       "to llama_cells, native_kv, pointer_shift, shift_concat, sliding_window, smart_mask)"},
      {"  policy: chunk_lru\n  prefix_caching: true\n",
       "test.yaml:5:3: kv_cache.prefix_caching: not a parameter of policy 'chunk_lru' (it belongs "
       "to paged, sliding_window)"},
      {"  policy: pointer_shift\n  block_size: 16\n",
       "test.yaml:5:3: kv_cache.block_size: not a parameter of policy 'pointer_shift' (it belongs "
       "to chunk_lru, paged, sliding_window)"},
      {"  policy: smart_mask\n  pointer_shift_headroom: 64\n",
       "test.yaml:5:3: kv_cache.pointer_shift_headroom: not a parameter of policy 'smart_mask' (it "
       "belongs to pointer_shift, sliding_window)"},
      {"  policy: shift_concat\n  main_pool_fraction: 0.5\n",
       "test.yaml:5:3: kv_cache.main_pool_fraction: not a parameter of policy 'shift_concat' (it "
       "belongs to chunk_lru)"},
      // sliding_window over paged takes paged's keys, not a Genie mode's.
      {"  policy: sliding_window\n  update_mode: paged\n  window: 64\n  ctx_size: 2048\n",
       "test.yaml:7:3: kv_cache.ctx_size: not a parameter of policy 'sliding_window' (it belongs "
       "to llama_cells, native_kv, pointer_shift, shift_concat, smart_mask)"},
      // ... and over a Genie mode that mode's keys, not paged's.
      {"  policy: sliding_window\n  update_mode: smart_mask\n  window: 64\n  block_size: 16\n",
       "test.yaml:7:3: kv_cache.block_size: not a parameter of policy 'sliding_window' (it "
       "belongs to chunk_lru, paged)"},
      {"  policy: sliding_window\n  update_mode: shift_concat\n  window: 64\n"
       "  pointer_shift_headroom: 256\n",
       "test.yaml:7:3: kv_cache.pointer_shift_headroom: not a parameter of policy "
       "'sliding_window' (it belongs to pointer_shift)"},
  };
  for (const auto& c : cases) {
    const std::string e = load_error(scenario(c.kv_cache));
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.kv_cache << "\n" << e;
  }
}

TEST(PolicyParams, AWrappingPolicyReadsItsBasesKeys) {
  const ScenarioSpec paged = testing::scenario_from_text(
      scenario("  policy: sliding_window\n  update_mode: paged\n  window: 64\n"
               "  block_size: 16\n  prefix_caching: false\n"));
  EXPECT_EQ(paged.policy().values().integer("block_size"), 16);
  EXPECT_EQ(paged.policy().values().integer("window"), 64);
  // Over a Genie mode the base's keys parse (the device check comes after).
  const std::string e =
      load_error(scenario("  policy: sliding_window\n  update_mode: pointer_shift\n  window: 64\n"
                          "  ctx_size: 1024\n  pointer_shift_headroom: 256\n"));
  EXPECT_EQ(e.find("not a parameter"), std::string::npos) << e;
}

TEST(PolicyParams, SharedKeysAndUnknownKeysAreNotForeign) {
  EXPECT_EQ(load_error(scenario("  policy: paged\n  dtype: bf16\n  memory_fraction: 0.8\n")), "");
  const std::string e = load_error(scenario("  policy: paged\n  block_sise: 16\n"));
  EXPECT_NE(e.find("did you mean 'block_size'"), std::string::npos) << e;
}

TEST(PolicyParams, SpecDefaultsAreTheDeclarations) {
  // The section's shared knobs: a KvCacheSpec starts at their declarations.
  const KvCacheSpec kv;
  const config::ComponentInfo section = kv_cache_section_info(cache_policy_names());
  EXPECT_EQ(kv.dtype, section.default_of<std::string>("dtype"));
  EXPECT_EQ(kv.kv_scale, section.default_of<std::string>("kv_scale"));
  EXPECT_EQ(kv.memory_fraction, section.default_of<double>("memory_fraction"));
  // A scenario without kv_cache: the declared policy at its declared defaults.
  const ScenarioSpec s = testing::scenario_from_text(scenario(""));
  EXPECT_EQ(s.policy().name(), section.default_of<std::string>("policy"));
  const auto* paged = find_policy("paged");
  ASSERT_NE(paged, nullptr);
  EXPECT_EQ(s.policy().block_pool()->block_size(), paged->info.default_of<int64_t>("block_size"));
  EXPECT_FALSE(s.policy().values().has("activation_reserve"));
  // Every policy is made from its declarations alone (its spec reads every
  // key it declares; a missing one would throw).
  for (const auto& name : cache_policy_names()) {
    const auto spec = make_policy_spec(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_EQ(spec->name(), name);
    EXPECT_TRUE(spec->block_pool() != nullptr || spec->device_buffers() != nullptr) << name;
  }
}

// docs/yaml.md holds, between `<!-- params:KIND:NAME -->` and
// `<!-- /params -->`, the table the declarations make.
TEST(PolicyParams, DocsTablesAreTheDeclarations) {
  std::ifstream in(fs::path(KVSIM_SOURCE_DIR) / "docs" / "yaml.md");
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string doc = buf.str();
  const std::string refresh =
      "refresh them with: tests/refresh_yaml_params.sh build/kvsim (from the source root)";
  size_t blocks_in_doc = 0;
  for (size_t at = doc.find("<!-- params:"); at != std::string::npos;
       at = doc.find("<!-- params:", at + 1))
    ++blocks_in_doc;
  const auto blocks = catalog_markdown_blocks();
  EXPECT_EQ(blocks_in_doc, blocks.size())
      << "docs/yaml.md has stale or missing tables; " << refresh;
  for (const auto& [key, table] : blocks) {
    const std::string open = "<!-- params:" + key + " -->\n";
    const size_t begin = doc.find(open);
    ASSERT_NE(begin, std::string::npos)
        << "no table for " << key << " in docs/yaml.md; " << refresh;
    const size_t end = doc.find("<!-- /params -->", begin);
    ASSERT_NE(end, std::string::npos) << key;
    EXPECT_EQ(doc.substr(begin + open.size(), end - begin - open.size()), table)
        << "docs/yaml.md's table of " << key << " differs from its declaration; " << refresh;
  }
}

class PolicyParamsCli : public testing::TempFolderTest {
 protected:
  testing::CommandResult run(const std::string& args) { return kvsim(args); }
};

TEST_F(PolicyParamsCli, ValidateAndRunRefuseAForeignKeyWithExit2) {
  const fs::path file = dir_ / "s.yaml";
  std::ofstream(file) << scenario("  policy: paged\n  ar_variants: [1, 32]\n");
  for (const char* cmd : {"validate", "run"}) {
    const std::string out =
        std::string(cmd) == "run" ? " --out " + (dir_ / "out").string() : std::string();
    const auto r = run(fmt::format("{} {}{}", cmd, file.string(), out));
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find(
                  file.string() +
                  ":5:3: kv_cache.ar_variants: not a parameter of policy 'paged' (it "
                  "belongs to llama_cells, native_kv, pointer_shift, shift_concat, sliding_window, "
                  "smart_mask)"),
              std::string::npos)
        << r.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(PolicyParamsCli, ListPoliciesParamsPrintsEachTable) {
  const auto r = run("list policies --params");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& info : cache_policy_infos()) {
    EXPECT_NE(r.output.find(info.name + " (policy): " + info.doc + "\n\n" +
                            config::params_markdown(info)),
              std::string::npos)
        << info.name << "\n"
        << r.output;
  }
  EXPECT_NE(r.output.find("| `block_size` | integer | `128` | tokens | 1..65536 |"),
            std::string::npos)
      << r.output;
  const auto names = run("list policies --names");
  EXPECT_EQ(
      names.output,
      "chunk_lru\nllama_cells\nnative_kv\npaged\npointer_shift\nshift_concat\nsliding_window\n"
      "smart_mask\n");
  for (const auto& kind : component_catalog()) {
    const auto k = run("list " + kind.name + " --params");
    EXPECT_EQ(k.exit_code, 0) << kind.name << k.output;
  }
  const auto d = run("describe genie");
  EXPECT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("| `npu_sessions` |"), std::string::npos) << d.output;
  const auto bad = run("describe pagd");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("did you mean 'paged'"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
