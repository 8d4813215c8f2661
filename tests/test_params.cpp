// Parameters declared by their component (base/params.hpp): the declaration
// gives the default and the range, and a sibling's key is an error naming
// its owner.
#include <gtest/gtest.h>

#include "base/params.hpp"

namespace kvsim::config::KVSIM_TEST_FILE_SCOPE {
namespace {

ComponentInfo paged_like() {
  return {"policy",
          "paged",
          "blocks",
          {int_param("block_size", 128, 1, 65536, "tokens", "tokens per block"),
           bytes_param("swap_space", 4LL << 30, 0, 1LL << 50, "host swap"),
           choice_param("preemption", std::string("recompute"), {"recompute", "swap"}, "how")}};
}

ComponentInfo genie_like(const std::string& name) {
  return {"policy",
          name,
          "buffers",
          {int_param("ctx_size", 4096, 1, 1 << 22, "tokens", "columns per buffer"),
           int_list_param("ar_variants", std::vector<int64_t>{1, 32, 128}, 1, 1 << 22, "tokens",
                          "AR-n graphs")}};
}

TEST(Params, DefaultsAndRangesComeFromTheDeclaration) {
  LoadContext ctx;
  YAML::Node doc = YAML::Load("block_size: 16\n");
  MapReader r(Node(doc, "kv_cache", "s.yaml", &ctx));
  const ParamValues v = read_params(r, paged_like());
  r.finish();
  EXPECT_TRUE(ctx.diagnostics.empty());
  EXPECT_EQ(v.integer("block_size"), 16);
  EXPECT_TRUE(v.given("block_size"));
  EXPECT_EQ(v.integer("swap_space"), 4LL << 30);
  EXPECT_FALSE(v.given("swap_space"));
  EXPECT_EQ(v.string("preemption"), "recompute");
  EXPECT_THROW(v.integer("ctx_size"), std::logic_error);  // not declared: a bug, not input
}

TEST(Params, OutOfRangeIsAnErrorAtTheKey) {
  LoadContext ctx;
  YAML::Node doc = YAML::Load("block_size: 0\n");
  MapReader r(Node(doc, "kv_cache", "s.yaml", &ctx));
  (void)read_params(r, paged_like());
  ASSERT_EQ(ctx.diagnostics.size(), 1u);
  EXPECT_EQ(ctx.diagnostics.all()[0].key_path, "kv_cache.block_size");
  EXPECT_EQ(ctx.diagnostics.all()[0].where.line, 1);
}

TEST(Params, ASiblingsKeyNamesItsOwners) {
  LoadContext ctx;
  YAML::Node doc = YAML::Load("policy: paged\nctx_size: 2048\nblock_sise: 16\n");
  MapReader r(Node(doc, "kv_cache", "s.yaml", &ctx));
  r.string("policy", "paged");
  const ComponentInfo chosen = paged_like();
  (void)read_params(r, chosen);
  report_foreign_keys(r, chosen, {chosen, genie_like("pointer_shift"), genie_like("smart_mask")});
  r.finish();
  ASSERT_EQ(ctx.diagnostics.size(), 2u);
  const auto& all = ctx.diagnostics.all();
  EXPECT_EQ(all[0].key_path, "kv_cache.ctx_size");
  EXPECT_EQ(all[0].where.line, 2);
  EXPECT_NE(all[0].problem.find("not a parameter of policy 'paged' (it belongs to "
                                "pointer_shift, smart_mask)"),
            std::string::npos)
      << all[0].problem;
  // A key nobody declares is still an unknown key with a did-you-mean.
  EXPECT_NE(all[1].problem.find("did you mean 'block_size'"), std::string::npos) << all[1].problem;
}

TEST(Params, ListsAreSortedAndEmptyListsRefused) {
  LoadContext ctx;
  YAML::Node doc = YAML::Load("ar_variants: [128, 1, 32, 32]\n");
  MapReader r(Node(doc, "kv_cache", "s.yaml", &ctx));
  const ParamValues v = read_params(r, genie_like("pointer_shift"));
  EXPECT_EQ(v.int_list("ar_variants"), (std::vector<int64_t>{1, 32, 128}));
  LoadContext ctx2;
  YAML::Node empty = YAML::Load("ar_variants: []\n");
  MapReader r2(Node(empty, "kv_cache", "s.yaml", &ctx2));
  const ParamValues v2 = read_params(r2, genie_like("pointer_shift"));
  EXPECT_EQ(ctx2.diagnostics.size(), 1u);
  EXPECT_EQ(v2.int_list("ar_variants"), (std::vector<int64_t>{1, 32, 128}));
}

TEST(Params, MarkdownTableShowsDefaultsInYamlForm) {
  const std::string md = params_markdown(paged_like());
  EXPECT_NE(md.find("| `swap_space` | bytes | `4GiB` | bytes | 0B..1024TiB |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| `preemption` | choice | `recompute` | - | recompute, swap |"),
            std::string::npos)
      << md;
}

}  // namespace
}  // namespace kvsim::config::KVSIM_TEST_FILE_SCOPE
