// Scenario checks that tie a scenario to its HTP device (
// sim/genie/genie_address_checks.cpp and the dialog checks): a model + Genie KV buffers over
// the NPU address space, a VTCM request over the VTCM, on-device policies on
// the wrong kind of device. Each is a located error before the run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/studies/capacity_plan.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/genie_buffer_sizing.hpp"
#include "sim/genie/genie_address_checks.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

using testing::scenario_from_text;

std::string dialog_scenario(const std::string& device, const std::string& model,
                            const std::string& cache, const std::string& extra = "") {
  return "name: t\n"
         "device: " +
         device + "\nmodel: " + model + "\nkv_cache: " + cache + "\n" + extra +
         "workload: {kind: dialog, turns: 1, prompt_tokens: 64, reply_tokens: 8}\n";
}

std::string error_of(const std::string& yaml) {
  try {
    (void)scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(HtpAddressSpace, AModelThatFitsLoadsAndItsUseIsTheClosedForm) {
  const ScenarioSpec s = scenario_from_text(
      dialog_scenario("snapdragon-8-elite", "llama-3.2-3b-instruct-w4a16",
                      "{policy: smart_mask, dtype: int8, ctx_size: 4096, ar_variants: [1, 128]}"));
  const HtpAddressSpaceUse use = htp_address_space_use(s);
  EXPECT_EQ(use.weights, s.model.weight_bytes());
  // 2 * 28 layers * 8 KV heads * 128 * 1 B per column; 4096 cache + 128 output columns.
  EXPECT_EQ(use.kv_buffers, 2 * 28 * 8 * 128 * (4096 + 128));
  EXPECT_EQ(use.limit, 3'500'000'000);
  EXPECT_TRUE(use.fits());
}

TEST(HtpAddressSpace, ModelPlusKvOverTheAddressSpaceIsRejectedWithTheFigures) {
  const std::string yaml =
      dialog_scenario("snapdragon-8-elite", "llama-3-8b-instruct-w4a16",
                      "{policy: smart_mask, dtype: int8, ctx_size: 4096, ar_variants: [1, 128]}");
  const std::string error = error_of(yaml);
  EXPECT_NE(error.find("test.yaml:3:8: model: llama-3-8b-instruct-w4a16 does not fit the NPU "
                       "address space of snapdragon-8-elite"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("weights 5.31 GiB"), std::string::npos) << error;
  EXPECT_NE(error.find("exceed 3.26 GiB by"), std::string::npos) << error;
  EXPECT_NE(error.find("htp.npu_sessions: 2"), std::string::npos) << error;
  // Split over two sessions it fits.
  EXPECT_EQ(error_of(dialog_scenario("snapdragon-8-elite", "llama-3-8b-instruct-w4a16",
                                     "{policy: smart_mask, dtype: int8, ctx_size: 4096, "
                                     "ar_variants: [1, 128]}",
                                     "htp: {npu_sessions: 2}\n")),
            "");
}

TEST(HtpAddressSpace, TheKvBuffersCountAndPointerShiftHeadroomWithThem) {
  // 3B w4a16 (2.2 GB of weights) fits with int8 KV at 4096 but not with a
  // 32768-column fp16 POINTER_SHIFT buffer (2x row by default).
  const std::string error =
      error_of(dialog_scenario("snapdragon-8-elite", "llama-3.2-3b-instruct-w4a16",
                               "{policy: pointer_shift, dtype: fp16, ctx_size: 32768, "
                               "ar_variants: [1, 128]}"));
  EXPECT_NE(error.find("does not fit the NPU address space"), std::string::npos) << error;
  EXPECT_NE(error.find("pointer_shift, ctx_size 32768, fp16"), std::string::npos) << error;
}

TEST(HtpAddressSpace, AModelOverThePhonesMemoryIsRejectedInPhoneTerms) {
  const std::string error =
      error_of(dialog_scenario("snapdragon-8-elite", "qwen3-32b",
                               "{policy: smart_mask, dtype: int8, ctx_size: 4096, "
                               "ar_variants: [1, 128]}"));
  EXPECT_NE(error.find("qwen3-32b does not fit the memory of snapdragon-8-elite: weights 61.02 "
                       "GiB + KV buffers"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("12.00 GiB x 0.9 = 10.80 GiB"), std::string::npos) << error;
  EXPECT_EQ(error.find("block"), std::string::npos)
      << "no paged-pool wording on a phone: " << error;
}

TEST(HtpDeviceChecks, AVtcmRequestOverTheVtcmIsAnError) {
  const std::string error = error_of(
      dialog_scenario("snapdragon-8-gen3", "llama-3.2-3b-instruct-w4a16",
                      "{policy: smart_mask, dtype: int8, ctx_size: 4096, ar_variants: [1, 128]}",
                      "htp: {vtcm_request: 12MiB}\n"));
  EXPECT_NE(error.find("htp.vtcm_request"), std::string::npos) << error;
  EXPECT_NE(error.find("8.00 MiB"), std::string::npos) << error;
}

TEST(HtpDeviceChecks, OnDevicePoliciesRunWhereAGraphExecutorIs) {
  const std::string on_ascend = error_of(
      "name: t\ndevice: ascend-910b2\nmodel: llama-3-8b\n"
      "kv_cache: {policy: shift_concat, ctx_size: 4096}\n"
      "workload: {kind: synthetic, requests: 4, arrival: {process: poisson, rate_per_s: 1},"
      " input_tokens: 64, output_tokens: 8}\n");
  EXPECT_NE(on_ascend.find("kv_cache.policy: no engine of ascend-910b2 (kind accelerator)"),
            std::string::npos)
      << on_ascend;
  EXPECT_NE(on_ascend.find("which 'shift_concat' does not keep"), std::string::npos) << on_ascend;
  EXPECT_NE(on_ascend.find("paged, sliding_window with update_mode: paged"), std::string::npos)
      << on_ascend;
  // paged on a phone runs under the serving engine the HTP family also offers.
  const std::string paged_on_phone = error_of(dialog_scenario(
      "snapdragon-8-elite", "llama-3.2-3b-instruct-w4a16", "{policy: paged, dtype: int8}"));
  EXPECT_EQ(paged_on_phone, "");
}

TEST(HtpDeviceChecks, KvsimValidateExitsTwoOnAModelOverTheAddressSpace) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / "kvsim_htpdev_address_space.yaml";
  {
    std::ofstream out(file);
    out << dialog_scenario(
        "snapdragon-8-elite", "llama-3-8b-instruct-w4a16",
        "{policy: smart_mask, dtype: int8, ctx_size: 4096, ar_variants: [1, 128]}");
  }
  const testing::CommandResult r =
      testing::run_command(std::string(KVSIM_BINARY) + " validate " + file.string());
  std::filesystem::remove(file);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("does not fit the NPU address space"), std::string::npos) << r.output;
}

TEST(HtpDeviceChecks, KvsimValidateNamesABadUnitAndAMissingSourceInADeviceFile) {
  std::ifstream in(std::string(KVSIM_CONFIG_DIR) + "/devices/snapdragon-8-gen3.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("{value: 76.8GB/s,"), 17, "{value: 76.8GB,");
  const auto at = text.find("  graph_switch:");
  text.replace(at, text.find('\n', at) - at, "  graph_switch: 0.5ms");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kvsim_htpdev_devices";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "phone.yaml";
  std::ofstream(file) << text;
  const testing::CommandResult r =
      testing::run_command(std::string(KVSIM_BINARY) + " validate " + file.string());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("memory_bandwidth"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("htp.graph_switch"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE

// --- kvsim capacity rows for HTP devices ------------------------------------------

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

TEST(HtpCapacity, BufferBytesPerModeAreTheClosedForm) {
  CapacityQuery q;
  q.devices = {"snapdragon-8-elite"};
  q.models = {"llama-3.2-3b-instruct-w4a16"};
  q.contexts = {1024, 4096};
  q.kv_dtypes = {"fp16"};
  const std::vector<CapacityRow> rows = capacity_rows(q, KVSIM_CONFIG_DIR);
  ASSERT_EQ(rows.size(), 2u);
  for (const CapacityRow& r : rows) {
    SCOPED_TRACE(r.context);
    EXPECT_TRUE(r.htp);
    EXPECT_TRUE(r.fits) << r.note;
    EXPECT_EQ(r.block_bytes, 0) << "no paged blocks on a phone";
    EXPECT_EQ(r.max_concurrent_seqs, 1);
    EXPECT_EQ(r.capacity_tokens, r.context - 1) << "what an AR-1 pass holds";
    // 2 (K, V) x 28 layers x 8 KV heads x 128 x 2 B per column; columns =
    // ctx_size (x2 for pointer_shift's default headroom) + the AR-128 output.
    const Bytes per_col = 2 * 28 * 8 * 128 * 2;
    ASSERT_EQ(r.htp_buffers.size(), 3u);
    EXPECT_EQ(r.htp_buffers[0].mode, "shift_concat");
    EXPECT_EQ(r.htp_buffers[0].buffer_bytes, per_col * (r.context + 128));
    EXPECT_EQ(r.htp_buffers[1].mode, "pointer_shift");
    EXPECT_EQ(r.htp_buffers[1].buffer_bytes, per_col * (2 * r.context + 128));
    EXPECT_EQ(r.htp_buffers[2].mode, "smart_mask");
    EXPECT_EQ(r.htp_buffers[2].buffer_bytes, per_col * (r.context + 128));
    const nlohmann::ordered_json j = capacity_row_json(r);
    EXPECT_EQ(j["buffer_bytes_pointer_shift"].get<int64_t>(), r.htp_buffers[1].buffer_bytes);
    EXPECT_EQ(j["address_space_bytes"].get<int64_t>(), 3'500'000'000);
  }
  const std::string md = capacity_markdown(rows);
  EXPECT_NE(md.find("smart_mask buffers"), std::string::npos) << md;
  EXPECT_EQ(md.find("capacity tokens"), std::string::npos) << "no paged table for a phone only";
}

TEST(HtpCapacity, AModelOverTheAddressSpaceSaysSoWithTheShortfall) {
  CapacityQuery q;
  q.devices = {"snapdragon-8-gen3"};
  q.models = {"llama-3-8b-instruct-w4a16"};
  q.contexts = {4096};
  q.kv_dtypes = {"int8"};
  const std::vector<CapacityRow> rows = capacity_rows(q, KVSIM_CONFIG_DIR);
  ASSERT_EQ(rows.size(), 1u);
  const CapacityRow& r = rows[0];
  EXPECT_FALSE(r.fits);
  const Bytes smallest = r.htp_buffers[0].buffer_bytes;
  EXPECT_EQ(r.shortfall_bytes, r.weights_bytes + smallest - 3'500'000'000);
  EXPECT_EQ(r.npu_sessions_needed, 2);
  EXPECT_NE(r.note.find("does not fit the NPU address space 3.26 GiB"), std::string::npos)
      << r.note;
  EXPECT_NE(r.note.find(format_bytes(r.shortfall_bytes)), std::string::npos) << r.note;
  for (const auto& c : r.htp_buffers) EXPECT_FALSE(c.fits) << c.mode;
}

TEST(HtpCapacity, AscendRowsAreUnchangedAndCarryNoBuffers) {
  CapacityQuery q;
  q.devices = {"ascend-910b2"};
  q.models = {"llama-3-8b"};
  q.contexts = {4096};
  const CapacityRow r = capacity_rows(q, KVSIM_CONFIG_DIR).at(0);
  EXPECT_FALSE(r.htp);
  EXPECT_GT(r.num_blocks, 0);
  EXPECT_TRUE(r.htp_buffers.empty());
  EXPECT_EQ(capacity_row_json(r)["buffer_bytes_smart_mask"].get<int64_t>(), 0);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
