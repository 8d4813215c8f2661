// Snapdragon HTP devices: the `kind: htp` device files, the HTP
// pass timing (analytic bounds and monotonicity) and the VTCM allocator with
// the shared/data README case (8 MiB VTCM, 6 MiB then 2 MiB) on v75 and v79.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>
#include <string>

#include "devices/device_family.hpp"
#include "devices/device_spec.hpp"
#include "devices/htp_timing.hpp"
#include "devices/htp_vtcm_allocator.hpp"
#include "models/model_resolve.hpp"
#include "models/model_spec.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr Bytes kMiB = Bytes{1} << 20;

DeviceSpec load_device(const std::string& name) {
  config::LoadContext ctx;
  DeviceSpec d =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/" + name + ".yaml", ctx);
  std::string messages;
  for (const auto& diag : ctx.diagnostics.all()) messages += diag.format() + "\n";
  EXPECT_TRUE(ctx.diagnostics.empty()) << messages;
  return d;
}

ModelSpec load_model(const std::string& name) {
  // By name as users write it: a shape file, plus the weights format a
  // name like llama-3.2-3b-instruct-w4a16 ends in (models/model_resolve.hpp).
  return load_model_by_name(name, "", KVSIM_CONFIG_DIR);
}

std::string errors_of(const std::string& text) {
  config::LoadContext ctx;
  parse_device(config::Node(YAML::Load(text), "", "phone.yaml", &ctx));
  std::string messages;
  for (const auto& diag : ctx.diagnostics.all()) messages += diag.format() + "\n";
  return messages;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "test setup: '" << from << "' not in the file";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string elite_text() {
  return read_text(std::string(KVSIM_CONFIG_DIR) + "/devices/snapdragon-8-elite.yaml");
}

// --- device files -------------------------------------------------------------

TEST(HtpDeviceFiles, TheThreeSnapdragonsParseWithTheirHexagonVersions) {
  struct Case {
    const char* name;
    int64_t version;
    bool windows;
    int64_t bandwidth;
  };
  for (const Case& c : {Case{"snapdragon-8-gen2", 73, false, 67'200'000'000},
                        Case{"snapdragon-8-gen3", 75, false, 76'800'000'000},
                        Case{"snapdragon-8-elite", 79, true, 84'800'000'000}}) {
    SCOPED_TRACE(c.name);
    const DeviceSpec d = load_device(c.name);
    EXPECT_EQ(d.kind, "htp");
    ASSERT_TRUE(d.htp.has_value());
    EXPECT_EQ(d.htp->hexagon_version, c.version);
    EXPECT_EQ(d.htp->vtcm_windows, c.windows) << "windows exist from v79";
    EXPECT_EQ(d.htp->vtcm_bytes, 8 * kMiB);
    EXPECT_EQ(d.memory_bandwidth, c.bandwidth);
    EXPECT_EQ(d.htp->address_space_bytes, 3'500'000'000);
    EXPECT_GT(d.htp->cpu_memcpy_bandwidth, 0);
    EXPECT_GT(d.htp->storage_bandwidth, 0);
    EXPECT_GT(d.htp->graph_switch, 0);
    EXPECT_EQ(d.max_tensor_parallel, 1);
    for (const char* key :
         {"memory", "memory_bandwidth", "matrix_fp16", "matrix_int8", "vector_fp16",
          "step_overhead", "htp.hexagon_version", "htp.vtcm", "htp.address_space",
          "htp.cpu_memcpy_bandwidth", "htp.max_update_threads", "htp.graph_switch",
          "htp.storage_bandwidth", "htp.vtcm_spill_factor", "efficiency.gemm.compute",
          "efficiency.gemm.memory"}) {
      auto it = d.sources.find(key);
      ASSERT_NE(it, d.sources.end()) << key << " has no source";
      EXPECT_FALSE(source_label(it->second).empty()) << key << ": " << it->second;
    }
    EXPECT_FALSE(d.notes.empty()) << "the calibration fit (or its absence) is in notes";
  }
}

// Devices kvsim was not fitted on (no row of shared/data names them): the
// family's fitted values are used as they are, and every number has a source.
TEST(HtpDeviceFiles, TheNewestSnapdragonsArePredictedWithTheFamilysFit) {
  const DeviceSpec elite = load_device("snapdragon-8-elite");
  struct Case {
    const char* name;
    int64_t version;
    bool windows;
    int64_t bandwidth;
    const char* gemm_from;  // whose own gemm fit it carries
  };
  for (const Case& c :
       {Case{"snapdragon-8-elite-gen5", 81, true, 84'800'000'000, "snapdragon-8-elite"},
        Case{"snapdragon-x-elite", 73, false, 135'200'000'000, "snapdragon-8-gen2"}}) {
    SCOPED_TRACE(c.name);
    const DeviceSpec d = load_device(c.name);
    ASSERT_TRUE(d.htp.has_value());
    EXPECT_EQ(d.htp->hexagon_version, c.version);
    EXPECT_EQ(d.htp->vtcm_windows, c.windows) << "windows exist from v79";
    EXPECT_EQ(d.memory_bandwidth, c.bandwidth);
    // No refit: the family-wide values are the 8 Elite's, the gemm ones the
    // nearest design's.
    EXPECT_EQ(d.matrix_tokens_exponent, elite.matrix_tokens_exponent);
    const auto att = static_cast<size_t>(OpClass::attention);
    const auto gemm = static_cast<size_t>(OpClass::gemm);
    EXPECT_EQ(d.compute_efficiency[att], elite.compute_efficiency[att]);
    EXPECT_EQ(d.memory_efficiency[att], elite.memory_efficiency[att]);
    const DeviceSpec from = load_device(c.gemm_from);
    EXPECT_EQ(d.compute_efficiency[gemm], from.compute_efficiency[gemm]);
    EXPECT_EQ(d.memory_efficiency[gemm], from.memory_efficiency[gemm]);
    EXPECT_NE(d.sources.at("efficiency.gemm.memory").find("not refitted"), std::string::npos);
    for (const auto& [key, source] : d.sources)
      EXPECT_FALSE(source_label(source).empty()) << key << ": " << source;
  }
  // What the prediction says: a faster HMX and the same LPDDR5X part give
  // the Gen 5 a shorter AR-128 prefill pass and the same AR-1 decode pass.
  const ModelSpec llama3b = load_model("llama-3.2-3b-instruct-w4a16");
  const DeviceSpec gen5 = load_device("snapdragon-8-elite-gen5");
  const HtpTimingModel old_timing{elite, llama3b, 1}, new_timing{gen5, llama3b, 1};
  EXPECT_LT(new_timing.price_pass({128, 128, 2048, 8 * kMiB, 8 * kMiB}).latency,
            old_timing.price_pass({128, 128, 2048, 8 * kMiB, 8 * kMiB}).latency);
  EXPECT_EQ(new_timing.price_pass({1, 1, 2048, 8 * kMiB, 8 * kMiB}).memory,
            old_timing.price_pass({1, 1, 2048, 8 * kMiB, 8 * kMiB}).memory);
}

TEST(HtpDeviceFiles, CalibratedEfficienciesAreLabelledMeasured) {
  // The weight-streaming and KV-read efficiencies are fitted on each phone's
  // decode rows (kvsim calibrate --fit); the notes name the rows.
  for (const char* name : {"snapdragon-8-gen3", "snapdragon-8-elite"}) {
    const DeviceSpec d = load_device(name);
    for (const char* key : {"efficiency.gemm.memory", "efficiency.attention.memory"}) {
      EXPECT_EQ(source_label(d.sources.at(key)), "M") << name << " " << key;
      EXPECT_NE(d.sources.at(key).find("fitted on rows Q"), std::string::npos)
          << name << " " << key;
    }
    EXPECT_NE(d.notes.find("Q1"), std::string::npos) << "notes carry the rows of the fit";
  }
}

TEST(HtpDeviceParse, MissingSourceIsALocatedError) {
  std::string text = elite_text();
  const auto at = text.find("memory_bandwidth:");
  text.replace(at, text.find('\n', at) - at, "memory_bandwidth: 84.8GB/s");
  const std::string errors = errors_of(text);
  EXPECT_NE(errors.find("phone.yaml:"), std::string::npos) << errors;
  EXPECT_NE(errors.find("memory_bandwidth"), std::string::npos) << errors;
  EXPECT_NE(errors.find("source"), std::string::npos) << errors;
}

// A number the family needs and the file leaves out: the error names it
// and the kind of source it should cite (a datasheet for the UFS rate, a
// measurement for the CPU's memcpy, a fit for a calibrated efficiency).
TEST(HtpDeviceParse, AMissingNumberNamesTheSourceItShouldCite) {
  const auto without = [](const std::string& key) {
    std::string text = elite_text();
    const auto at = text.find(key + ":");
    text.erase(at, text.find('\n', at) - at + 1);
    return errors_of(text);
  };
  const std::string storage = without("  storage_bandwidth");
  EXPECT_NE(storage.find("htp.storage_bandwidth: is required but missing (it should cite a "
                         "datasheet: {value: ..., source: \"V: the storage part's (UFS) "
                         "datasheet sequential write rate\"})"),
            std::string::npos)
      << storage;
  const std::string memcpy = without("  cpu_memcpy_bandwidth");
  EXPECT_NE(memcpy.find("htp.cpu_memcpy_bandwidth: is required but missing (it should cite a "
                        "measurement"),
            std::string::npos)
      << memcpy;
  const std::string fitted = without("    memory");  // efficiency.gemm.memory, the first
  EXPECT_NE(fitted.find("efficiency.gemm.memory: is required but missing (it should cite a fit "
                        "on named calibration rows"),
            std::string::npos)
      << fitted;
}

TEST(HtpDeviceParse, BadUnitIsAnError) {
  const std::string errors =
      errors_of(replace_once(elite_text(), "{value: 84.8GB/s,", "{value: 84.8GB,"));
  EXPECT_NE(errors.find("memory_bandwidth"), std::string::npos) << errors;
  const std::string vtcm_errors =
      errors_of(replace_once(elite_text(), "vtcm: {value: 8MiB,", "vtcm: {value: 8,"));
  EXPECT_NE(vtcm_errors.find("htp.vtcm"), std::string::npos) << vtcm_errors;
}

TEST(HtpDeviceParse, HtpSectionIsRequiredAndStrict) {
  std::string text = elite_text();
  text = text.substr(0, text.find("htp:\n"));
  EXPECT_NE(errors_of(text).find("htp: is required"), std::string::npos) << errors_of(text);
  const std::string typo =
      errors_of(replace_once(elite_text(), "  graph_switch:", "  graph_swich:"));
  EXPECT_NE(typo.find("did you mean 'graph_switch'"), std::string::npos) << typo;
}

TEST(HtpDeviceParse, WindowsCannotBeClaimedBeforeV79AndAreDerivedFromTheVersion) {
  const std::string text =
      replace_once(elite_text(), "hexagon_version: {value: 79,", "hexagon_version: {value: 75,");
  EXPECT_NE(errors_of(text).find("v79 or later"), std::string::npos) << errors_of(text);
  // Without the key, windows follow the version.
  std::string derived = elite_text();
  const auto at = derived.find("  vtcm_windows:");
  derived.erase(at, derived.find('\n', at) - at + 1);
  config::LoadContext ctx;
  const DeviceSpec d = parse_device(config::Node(YAML::Load(derived), "", "phone.yaml", &ctx));
  EXPECT_TRUE(ctx.diagnostics.empty());
  EXPECT_TRUE(d.htp->vtcm_windows);
}

TEST(HtpDeviceParse, AscendOnlyKeysAreRejectedOnAPhone) {
  const std::string text =
      elite_text() + "host_link_bandwidth: {value: 31.5GB/s, source: \"3P: x\"}\n";
  EXPECT_NE(errors_of(text).find("host_link_bandwidth"), std::string::npos);
}

// --- HTP pass timing ------------------------------------------------------------

class HtpTiming : public ::testing::Test {
 protected:
  DeviceSpec elite = load_device("snapdragon-8-elite");
  ModelSpec llama3b = load_model("llama-3.2-3b-instruct-w4a16");
  HtpTimingModel timing{elite, llama3b, 1};
};

TEST_F(HtpTiming, LatencyIsNeverBelowDdrBytesAtPeakBandwidth) {
  for (int64_t variant : {1, 32, 128}) {
    for (int64_t cols : {0, 1000, 4000}) {
      for (Bytes granted : {Bytes{0}, 4 * kMiB, 8 * kMiB}) {
        const HtpPassTiming t = timing.price_pass({variant, variant, cols, 8 * kMiB, granted});
        const double floor_ns = t.ddr_bytes / static_cast<double>(elite.memory_bandwidth) * 1e9;
        EXPECT_GE(static_cast<double>(t.latency), floor_ns) << variant << " " << cols;
        EXPECT_GE(t.latency, t.compute);
        EXPECT_GE(t.latency, t.memory);
      }
    }
  }
}

TEST_F(HtpTiming, WeightsAreStreamedOncePerPassAtTheirQuantisedWidth) {
  const HtpPassTiming t = timing.price_pass({1, 1, 0, 0, 0});
  // 3B tied: linear weights at 0.5 B + scales plus the 16-bit embedding
  // (read as lm_head) dominate the pass's DDR bytes.
  const double weights = static_cast<double>(llama3b.weight_bytes());
  EXPECT_GT(t.ddr_bytes, weights);
  EXPECT_LT(t.ddr_bytes, weights * 1.01);
  EXPECT_DOUBLE_EQ(t.kv_bytes_read, 0.0);
}

TEST_F(HtpTiming, KvBytesReadFollowTheClosedForm) {
  const HtpPassTiming t = timing.price_pass({1, 1, 4095, 0, 0});
  // cols x layers x kv_heads x head_dim x 2 (K and V) x 1 byte (int8)
  EXPECT_DOUBLE_EQ(t.kv_bytes_read, 4095.0 * 28 * 8 * 128 * 2 * 1);
}

TEST_F(HtpTiming, MoreColumnsReadIsNeverCheaper) {
  for (int64_t variant : {1, 128}) {
    TimeNs previous = 0;
    for (int64_t cols = 0; cols <= 4096; cols += 256) {
      const TimeNs t = timing.price_pass({variant, variant, cols, 0, 0}).latency;
      EXPECT_GE(t, previous) << "variant " << variant << " cols " << cols;
      previous = t;
    }
  }
}

TEST_F(HtpTiming, LessVtcmIsNeverCheaperAndNoVtcmCostsTheSpillFactor) {
  TimeNs previous = 0;
  for (Bytes granted = 8 * kMiB; granted >= 0; granted -= kMiB) {
    const HtpPassTiming t = timing.price_pass({1, 1, 2048, 8 * kMiB, granted});
    EXPECT_GE(t.latency, previous) << granted;
    previous = t.latency;
  }
  const HtpPassTiming full = timing.price_pass({1, 1, 2048, 8 * kMiB, 8 * kMiB});
  const HtpPassTiming none = timing.price_pass({1, 1, 2048, 8 * kMiB, 0});
  EXPECT_NEAR(none.ddr_bytes / full.ddr_bytes, 1.0 + elite.htp->vtcm_spill_factor, 1e-9);
}

TEST_F(HtpTiming, APaddedPassCostsTheFullVariant) {
  // The graph always computes `variant` tokens: 5 useful tokens in AR-128
  // cost what 128 do.
  EXPECT_EQ(timing.price_pass({128, 5, 1000, 0, 0}).latency,
            timing.price_pass({128, 128, 1000, 0, 0}).latency);
  EXPECT_GT(timing.price_pass({128, 128, 1000, 0, 0}).latency,
            timing.price_pass({32, 32, 1000, 0, 0}).latency);
}

TEST_F(HtpTiming, CpuCopiesSplitOverThreadsUpToTheCapAndTheSharedBandwidth) {
  const Bytes bytes = 120'000'000;
  const TimeNs one = timing.cpu_copy_time(bytes, 1);
  EXPECT_NEAR(
      static_cast<double>(one),
      static_cast<double>(bytes) / static_cast<double>(elite.htp->cpu_memcpy_bandwidth) * 1e9, 1.0);
  EXPECT_NEAR(static_cast<double>(timing.cpu_copy_time(bytes, 2)), static_cast<double>(one) / 2,
              1.0);
  // More threads than the cap run as the cap.
  EXPECT_EQ(timing.cpu_copy_time(bytes, 64),
            timing.cpu_copy_time(bytes, elite.htp->max_update_threads));
  EXPECT_EQ(timing.cpu_copy_time(0, 4), 0);
  // Threads share the LPDDR: a device whose threads together exceed it is capped.
  DeviceSpec fast_cpu = elite;
  fast_cpu.htp->cpu_memcpy_bandwidth = elite.memory_bandwidth;
  const HtpTimingModel capped(fast_cpu, llama3b, 1);
  EXPECT_EQ(capped.cpu_copy_time(bytes, 4), capped.cpu_copy_time(bytes, 1));
}

TEST_F(HtpTiming, StorageAndVariantSwitchComeFromTheDeviceFile) {
  EXPECT_EQ(timing.variant_switch_time(), elite.htp->graph_switch);
  const Bytes bytes = 2'800'000'000;  // one second at 2.8 GB/s
  EXPECT_EQ(timing.storage_time(bytes), kNsPerS);
}

TEST(HtpTimingContract, RejectsAnAscendDevice) {
  config::LoadContext ctx;
  const DeviceSpec ascend =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/ascend-910b2.yaml", ctx);
  EXPECT_THROW(HtpTimingModel(ascend, load_model("llama-3-8b"), 2), std::invalid_argument);
}

// --- VTCM allocation ------------------------------------------------------------

HtpSpec htp_of(int64_t version) {
  HtpSpec h;
  h.hexagon_version = version;
  h.vtcm_bytes = 8 * kMiB;
  h.vtcm_windows = version >= 79;
  h.vtcm_window_granule = 256 << 10;
  return h;
}

// shared/data README: "before v79 a 6 MB request mapped as an 8 MB page kept
// the other 2 MB from other processes".
TEST(VtcmAllocator, ReadmeCaseOnV75TheSecondSessionWaitsOrGetsNothing) {
  VtcmAllocator vtcm(htp_of(75));
  const auto a = vtcm.plan_acquire(6 * kMiB, 6 * kMiB);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->granted, 6 * kMiB);
  EXPECT_EQ(a->reserved, 8 * kMiB) << "a 6 MiB request is mapped as an 8 MiB page";
  vtcm.apply_acquire(0, *a);
  EXPECT_EQ(vtcm.free_bytes(), 0);
  EXPECT_FALSE(vtcm.plan_acquire(2 * kMiB, 2 * kMiB).has_value()) << "B waits";
  const auto b = vtcm.plan_acquire(2 * kMiB, 0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->granted, 0) << "with min 0, B runs from DDR";
  // A's release makes room.
  vtcm.release(0);
  const auto b_after = vtcm.plan_acquire(2 * kMiB, 2 * kMiB);
  ASSERT_TRUE(b_after.has_value());
  EXPECT_EQ(b_after->granted, 2 * kMiB);
}

TEST(VtcmAllocator, ReadmeCaseOnV79BothHoldTheirFullRequestAtOnce) {
  VtcmAllocator vtcm(htp_of(79));
  const auto a = vtcm.plan_acquire(6 * kMiB, 6 * kMiB);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->reserved, 6 * kMiB) << "a window takes only its request";
  vtcm.apply_acquire(0, *a);
  const auto b = vtcm.plan_acquire(2 * kMiB, 2 * kMiB);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->granted, 2 * kMiB);
  vtcm.apply_acquire(1, *b);
  EXPECT_EQ(vtcm.reserved_bytes(), 8 * kMiB);
  EXPECT_FALSE(vtcm.plan_acquire(kMiB, kMiB).has_value()) << "now it is full";
}

TEST(VtcmAllocator, APartialGrantIsTheLargestThatFits) {
  // v75: a 3 MiB session holds a 4 MiB page; a 6 MiB ask with min 1 MiB
  // then gets the largest free page, 4 MiB, and with min 5 MiB it waits.
  VtcmAllocator v75(htp_of(75));
  v75.apply_acquire(0, *v75.plan_acquire(3 * kMiB, 3 * kMiB));  // a 4 MiB page
  const auto g = v75.plan_acquire(6 * kMiB, kMiB);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->granted, 4 * kMiB);
  EXPECT_FALSE(v75.plan_acquire(6 * kMiB, 5 * kMiB).has_value());
  // v79: granule rounding; the rest is granted down to the granule.
  VtcmAllocator v79(htp_of(79));
  const auto w = v79.plan_acquire(3 * kMiB + 1, 0);
  EXPECT_EQ(w->reserved, 3 * kMiB + (256 << 10));
  v79.apply_acquire(0, *w);
  const auto rest = v79.plan_acquire(8 * kMiB, kMiB);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(rest->granted, 8 * kMiB - w->reserved);
}

TEST(VtcmAllocator, RequestsOverTheVtcmOrWithMinAboveRequestThrow) {
  VtcmAllocator vtcm(htp_of(79));
  EXPECT_THROW(vtcm.plan_acquire(9 * kMiB, 0), std::invalid_argument);
  EXPECT_THROW(vtcm.plan_acquire(2 * kMiB, 3 * kMiB), std::invalid_argument);
  EXPECT_THROW(vtcm.plan_acquire(-1, 0), std::invalid_argument);
}

TEST(VtcmAllocator, PlanDoesNotMutateAndDoubleAcquireIsABug) {
  VtcmAllocator vtcm(htp_of(75));
  (void)vtcm.plan_acquire(4 * kMiB, 4 * kMiB);
  EXPECT_EQ(vtcm.reserved_bytes(), 0);
  vtcm.apply_acquire(3, *vtcm.plan_acquire(4 * kMiB, 4 * kMiB));
  EXPECT_THROW(vtcm.apply_acquire(3, VtcmGrant{kMiB, kMiB}), std::logic_error);
}

// --- Weights formats: w4 beside w4a16 -----------------------------------------

// AI Hub's w4 export is w4a16's int4 weights with fp16 activations
// (qai_hub_models Precision.w4): the weights' bytes are w4a16's, the GEMMs
// take HMX's fp16 path (devices/family_htp.cpp). A prompt pass, bound by
// HMX, costs what the 16-bit model's compute costs; its DDR part is
// w4a16's. A decode pass, bound by the weights' bytes, is w4a16's.
TEST(HtpWeightsFormats, W4StoresW4a16sBytesAndComputesOnTheFp16Path) {
  const DeviceSpec elite = load_device("snapdragon-8-elite");
  const ModelSpec w4a16 = load_model("llama-3.2-3b-instruct-w4a16");
  const ModelSpec w4 = load_model("llama-3.2-3b-instruct-w4");
  const ModelSpec bf16 = load_model("llama-3.2-3b-instruct");
  ASSERT_EQ(w4.weights_dtype, "w4");
  ASSERT_EQ(bf16.weights_dtype, "bf16");
  EXPECT_EQ(w4.weight_bytes(), w4a16.weight_bytes());
  EXPECT_EQ(w4.linear_weight_bytes_per_parameter(), 0.5 + 2.0 / 128.0);
  EXPECT_LT(w4.weight_bytes(), bf16.weight_bytes() / 2);  // the 16-bit embeddings stay

  for (OpKind gemm :
       {OpKind::qkv_proj, OpKind::o_proj, OpKind::mlp_gate_up, OpKind::mlp_down, OpKind::lm_head}) {
    EXPECT_EQ(htp_family().compute_peak(gemm, elite, w4, 2), elite.matrix_fp16_ops);
    EXPECT_EQ(htp_family().compute_peak(gemm, elite, w4a16, 2), elite.matrix_int8_ops);
  }
  // Attention follows the KV dtype in both.
  EXPECT_EQ(htp_family().compute_peak(OpKind::attention, elite, w4, 1), elite.matrix_int8_ops);

  const HtpTimingModel t4{elite, w4, 1}, t4a16{elite, w4a16, 1}, t16{elite, bf16, 1};
  const HtpPass prompt{128, 128, 2048, 8 * kMiB, 8 * kMiB};
  const HtpPassTiming p4 = t4.price_pass(prompt), p4a16 = t4a16.price_pass(prompt),
                      p16 = t16.price_pass(prompt);
  EXPECT_EQ(p4.flops, p4a16.flops);
  EXPECT_EQ(p4.compute, p16.compute);
  EXPECT_EQ(p4.ddr_bytes, p4a16.ddr_bytes);
  EXPECT_EQ(p4.memory, p4a16.memory);
  // HMX's fp16 rate is half its int8 rate; the GEMMs, most of the pass,
  // run there (attention over the int8 KV and HVX work do not move).
  EXPECT_GT(p4.compute, p4a16.compute * 5 / 4);
  EXPECT_LT(p4.compute, p4a16.compute * 2);
  EXPECT_GT(p4.latency, p4a16.latency);

  const HtpPass decode{1, 1, 2048, 8 * kMiB, 8 * kMiB};
  EXPECT_EQ(t4.price_pass(decode).memory, t4a16.price_pass(decode).memory);
}

TEST(HtpWeightsFormats, W4IsAFormatOfItsOwnInAModelFileAndByName) {
  const ModelSpec m = load_model_by_name("llama-3.2-1b", "w4", KVSIM_CONFIG_DIR);
  EXPECT_EQ(m.weights_dtype, "w4");
  EXPECT_EQ(load_model("llama-3.2-1b-w4a16").weights_dtype, "w4a16");
  EXPECT_EQ(load_model("llama-3.2-1b-W4").weights_dtype, "w4");
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
