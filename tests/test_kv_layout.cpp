// Seed 000: the ATB kcache/vcache view of the Ksana pool addresses the same
// bytes as the Ksana block layout, with block id b * layers * 2 + layer and
// the vcache base offset.
#include <gtest/gtest.h>

#include <set>

#include "kernels/kv_layout.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

TEST(KvLayout, SeedFormulas) {
  const BlockGeometry g{32, 128, 8, 128, 2};  // Llama-3-8B, fp16, block 128
  EXPECT_EQ(g.block_bytes(), 2LL * 32 * 128 * 8 * 128 * 2);
  EXPECT_EQ(ksana_block_base(g, 5), 5 * g.block_bytes());
  EXPECT_EQ(atb_block_id(g, 5, 0), 5 * 32 * 2);
  EXPECT_EQ(atb_block_id(g, 5, 7), 5 * 32 * 2 + 7);
  EXPECT_EQ(atb_kcache_base(g), 0);
  EXPECT_EQ(atb_vcache_base(g), 32LL * 128 * 8 * 128 * 2);
}

TEST(KvLayout, AtbViewAddressesTheSameBytesAsKsanaExhaustively) {
  const BlockGeometry g{3, 4, 2, 5, 2};
  auto ksana = make_ksana_layout();
  auto atb = make_atb_layout();
  std::set<int64_t> seen;
  const int64_t num_blocks = 4;
  for (int64_t b = 0; b < num_blocks; ++b)
    for (int part = 0; part < 2; ++part)
      for (int64_t l = 0; l < g.layers; ++l)
        for (int64_t t = 0; t < g.block_tokens; ++t)
          for (int64_t hd = 0; hd < g.kv_heads; ++hd)
            for (int64_t d = 0; d < g.head_dim; ++d) {
              const KvCoordinate c{b, static_cast<KvPart>(part), l, t, hd, d};
              const int64_t k = ksana->byte_offset(g, c);
              ASSERT_EQ(k, atb->byte_offset(g, c));
              seen.insert(k);
            }
  // A bijection onto the pool: every element has its own bytes, none outside.
  EXPECT_EQ(static_cast<int64_t>(seen.size()), num_blocks * g.block_bytes() / g.dtype_bytes);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), num_blocks * g.block_bytes() - g.dtype_bytes);
}

TEST(KvLayout, AtbRejectsBlockSizesItsKernelCannotTake) {
  auto atb = make_atb_layout();
  EXPECT_FALSE(atb->reject({32, 128, 8, 128, 2}).has_value());
  EXPECT_TRUE(atb->reject({32, 100, 8, 128, 2}).has_value());  // not a multiple of 16
  EXPECT_TRUE(atb->reject({32, 256, 8, 128, 2}).has_value());  // 256 * 128 > 128 * 128
  EXPECT_FALSE(make_ksana_layout()->reject({32, 100, 8, 128, 2}).has_value());
}

TEST(KvLayout, RegistryListsEveryLayout) {
  EXPECT_EQ(kv_layout_names(), (std::vector<std::string>{"atb", "ksana"}));
  for (const auto& n : kv_layout_names()) {
    auto l = make_kv_layout(n);
    ASSERT_TRUE(l);
    EXPECT_EQ(l->name(), n);
  }
  EXPECT_FALSE(make_kv_layout("paged"));
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
