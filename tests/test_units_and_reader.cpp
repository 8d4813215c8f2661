// Units parsed once into integers, and the strict YAML reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/reader.hpp"
#include "base/units.hpp"
#include "sim/core/latency_histogram.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

TEST(Units, Bytes) {
  EXPECT_EQ(parse_bytes("64GiB").value, 64LL << 30);
  EXPECT_EQ(parse_bytes("16MB").value, 16'000'000);
  EXPECT_EQ(parse_bytes("4096B").value, 4096);
  EXPECT_EQ(parse_bytes("0").value, 0);
  EXPECT_FALSE(parse_bytes("4096").value);
  EXPECT_NE(parse_bytes("4").problem.find("has no unit"), std::string::npos);
  EXPECT_EQ(parse_bytes("1.5KiB").value, 1536);
  EXPECT_FALSE(parse_bytes("-1GiB").value);
  EXPECT_FALSE(parse_bytes("12parsecs").value);
  EXPECT_NE(parse_bytes("12parsecs").problem.find("GiB"), std::string::npos);
}

TEST(Units, BandwidthDurationOps) {
  EXPECT_EQ(parse_bandwidth("1.6TB/s").value, 1'600'000'000'000LL);
  EXPECT_EQ(parse_bandwidth("31.5GB/s").value, 31'500'000'000LL);
  EXPECT_FALSE(parse_bandwidth("1.6TB").value);
  EXPECT_EQ(parse_duration("20us").value, 20'000);
  EXPECT_EQ(parse_duration("1.5ms").value, 1'500'000);
  EXPECT_EQ(parse_duration("2s").value, 2'000'000'000);
  EXPECT_FALSE(parse_duration("20").value);  // a duration needs its unit
  EXPECT_EQ(parse_ops_rate("353.9TFLOPS").value, 353'900'000'000'000LL);
  EXPECT_EQ(parse_ops_rate("140TOPS").value, 140'000'000'000'000LL);
}

TEST(Reader, UnknownKeyGetsDidYouMeanWithLineAndColumn) {
  config::LoadContext ctx;
  YAML::Node doc = YAML::Load("block_size: 16\nmemory_fractoin: 0.5\n");
  config::MapReader r(config::Node(doc, "kv_cache", "s.yaml", &ctx));
  EXPECT_EQ(r.integer("block_size", 128, 1, 1024), 16);
  r.number("memory_fraction", 0.9, 0.0, 1.0);
  r.finish();
  ASSERT_EQ(ctx.diagnostics.size(), 1u);
  const std::string msg = ctx.diagnostics.all()[0].format();
  EXPECT_NE(msg.find("s.yaml:2:1: kv_cache.memory_fractoin: unknown key"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("did you mean 'memory_fraction'"), std::string::npos) << msg;
}

TEST(Reader, WrongTypeAndRangeAreReportedTogether) {
  config::LoadContext ctx;
  YAML::Node doc = YAML::Load("a: twelve\nb: 1.5\nc: -4GiB\n");
  config::MapReader r(config::Node(doc, "x", "f.yaml", &ctx));
  r.integer("a", 0, 0, 10);
  r.number("b", 0.5, 0.0, 1.0);
  r.bytes("c", 0, 0, 1LL << 40);
  r.finish();
  ASSERT_EQ(ctx.diagnostics.size(), 3u);
  EXPECT_NE(ctx.diagnostics.all()[0].format().find("f.yaml:1:4: x.a: expected an integer"),
            std::string::npos);
  EXPECT_NE(ctx.diagnostics.all()[1].format().find("f.yaml:2:4: x.b: 1.5 is out of range"),
            std::string::npos);
  EXPECT_NE(ctx.diagnostics.all()[2].format().find("f.yaml:3:4: x.c:"), std::string::npos);
  EXPECT_NE(ctx.diagnostics.all()[2].format().find("negative"), std::string::npos);
  EXPECT_THROW(ctx.diagnostics.throw_if_any(), config::ConfigError);
}

TEST(Reader, MissingRequiredKey) {
  config::LoadContext ctx;
  YAML::Node doc = YAML::Load("other: 1\n");
  config::MapReader r(config::Node(doc, "m", "f.yaml", &ctx));
  r.integer("hidden_size", std::nullopt, 1, 100);
  r.ignore({"other"});
  r.finish();
  ASSERT_EQ(ctx.diagnostics.size(), 1u);
  EXPECT_NE(ctx.diagnostics.all()[0].format().find("m.hidden_size: is required"),
            std::string::npos);
}

TEST(Reader, OverrideSetsNestedKeysAndPointsErrorsAtTheFlag) {
  config::LoadContext ctx;
  YAML::Node doc = YAML::Load("kv_cache: {block_size: 16}\n");
  ASSERT_TRUE(config::apply_override(doc, "kv_cache.block_size=abc", ctx));
  ASSERT_TRUE(config::apply_override(doc, "scheduler.max_num_seqs=8", ctx));
  EXPECT_EQ(doc["scheduler"]["max_num_seqs"].as<int>(), 8);
  config::MapReader top(config::Node(doc, "", "s.yaml", &ctx));
  config::MapReader kv(top.child("kv_cache"));
  kv.integer("block_size", 128, 1, 1024);
  ASSERT_EQ(ctx.diagnostics.size(), 1u);
  EXPECT_NE(ctx.diagnostics.all()[0].format().find("--set kv_cache.block_size"), std::string::npos);
  EXPECT_FALSE(config::apply_override(doc, "no_equals_sign", ctx));
}

TEST(Reader, ClosestMatch) {
  EXPECT_EQ(config::closest_match("polcy", {"policy", "dtype"}), "policy");
  EXPECT_EQ(config::closest_match("zzzzzz", {"policy", "dtype"}), "");
}

TEST(LatencyHistogram, LoneValueIsExactAndPercentilesAreWithinATenthOfAPercent) {
  LatencyHistogram one;
  one.add(123'456'789);
  EXPECT_EQ(one.percentile(50), 123'456'789.0);
  EXPECT_EQ(one.percentile(99), 123'456'789.0);
  LatencyHistogram h;
  for (int i = 1; i <= 100000; ++i) h.add(static_cast<TimeNs>(i) * 1000);
  EXPECT_NEAR(h.percentile(50), 50'000'000.0, 50'000'000.0 * 1e-3);
  EXPECT_NEAR(h.percentile(99), 99'000'000.0, 99'000'000.0 * 1e-3);
  EXPECT_DOUBLE_EQ(h.mean(), 50'000'500.0);
  EXPECT_EQ(h.max(), 100'000'000);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// A key written twice in one map is an error at its second occurrence (yaml-cpp
// would keep the first value silently), in a file and in nested maps.
TEST(Reader, ADuplicateKeyIsAnErrorAtItsSecondLine) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("kvsim-dup-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "dup.yaml").string();
  std::ofstream(path) << "seed: 1\nkv_cache:\n  block_size: 16\n  block_size: 32\nseed: 2\n";
  config::LoadContext ctx;
  (void)config::load_file(path, ctx);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(ctx.diagnostics.size(), 2u);
  const auto& all = ctx.diagnostics.all();
  EXPECT_EQ(all[0].where.line, 4);
  EXPECT_NE(all[0].problem.find("duplicate key 'block_size' (first at line 3)"), std::string::npos)
      << all[0].format();
  EXPECT_EQ(all[1].where.line, 5);
  EXPECT_NE(all[1].problem.find("duplicate key 'seed' (first at line 1)"), std::string::npos)
      << all[1].format();
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
