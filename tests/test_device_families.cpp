// Device families (devices/device_family.hpp): a GPU of the generic
// accelerator's shape is data only, the old kind name still loads, every
// family declares its keys, and an HTP pass is priced from the same op graph
// (models/step_ops.hpp) as a serving step.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "devices/device_family.hpp"
#include "devices/htp_timing.hpp"
#include "devices/timing_model.hpp"
#include "models/model_resolve.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

namespace fs = std::filesystem;

// An NVIDIA H100 SXM5 as a `kind: accelerator` file. V: NVIDIA H100 Tensor
// Core GPU datasheet (80 GB HBM3, 3.35 TB/s, FP16 tensor 1,979 TFLOPS and
// INT8 3,958 TOPS with sparsity, i.e. 989 and 1,979 dense; NVLink 900 GB/s;
// PCIe Gen5 128 GB/s). Efficiencies are assumed, as for any uncalibrated part.
constexpr const char* kH100 = R"(name: nvidia-h100-sxm
kind: accelerator
description: "NVIDIA H100 SXM5 80GB"
memory: {value: 80GB, source: "V: H100 datasheet, 80 GB HBM3"}
memory_bandwidth: {value: 3.35TB/s, source: "V: H100 datasheet, 3.35 TB/s"}
matrix_fp16: {value: 989TFLOPS, source: "D: H100 datasheet 1,979 TFLOPS FP16 tensor with sparsity / 2 = dense"}
matrix_int8: {value: 1979TFLOPS, source: "D: H100 datasheet 3,958 TOPS INT8 tensor with sparsity / 2 = dense"}
vector_fp16: {value: 134TFLOPS, source: "D: H100 datasheet 67 TFLOPS FP32 x 2 for packed fp16 on the CUDA cores"}
device_link_bandwidth: {value: 450GB/s, source: "D: H100 datasheet NVLink 900 GB/s total / 2 directions"}
device_link_latency: {value: 10us, source: "A: one NCCL ring step; to be calibrated"}
host_link_bandwidth: {value: 64GB/s, source: "D: H100 datasheet PCIe Gen5 128 GB/s total / 2 directions"}
kernel_launch: {value: 5us, source: "A: CUDA kernel launch; to be calibrated"}
step_overhead: {value: 1ms, source: "A: scheduler and host prep per step; to be calibrated"}
max_tensor_parallel: {value: 8, source: "V: HGX H100 8-GPU NVLink domain"}
efficiency:
  gemm: {compute: {value: 0.7, source: "A: assumed for the test"}, memory: {value: 0.8, source: "A: assumed for the test"}}
  attention: {compute: {value: 0.5, source: "A: assumed for the test"}, memory: {value: 0.8, source: "A: assumed for the test"}}
  elementwise: {compute: {value: 0.5, source: "A: assumed for the test"}, memory: {value: 0.7, source: "A: assumed for the test"}}
  transfer: {compute: {value: 1.0, source: "A: assumed for the test"}, memory: {value: 0.8, source: "A: assumed for the test"}}
  collective: {compute: {value: 1.0, source: "A: assumed for the test"}, memory: {value: 0.7, source: "A: assumed for the test"}}
)";

std::string messages(const config::LoadContext& ctx) {
  std::string out;
  for (const auto& d : ctx.diagnostics.all()) out += d.format() + "\n";
  return out;
}

DeviceSpec load_text(const std::string& text, const std::string& file_name,
                     config::LoadContext& ctx) {
  const fs::path path = fs::temp_directory_path() / file_name;
  std::ofstream(path) << text;
  DeviceSpec d = load_device_file(path.string(), ctx);
  fs::remove(path);
  return d;
}

ModelSpec load_model(const std::string& name) {
  // By name as users write it: a shape file, plus the weights format a
  // name like llama-3.2-3b-instruct-w4a16 ends in (models/model_resolve.hpp).
  return load_model_by_name(name, "", KVSIM_CONFIG_DIR);
}

TEST(DeviceFamilies, AnH100IsADeviceFileOfTheAcceleratorFamilyAndPricesAStep) {
  config::LoadContext ctx;
  const DeviceSpec h100 = load_text(kH100, "nvidia-h100-sxm.yaml", ctx);
  ASSERT_TRUE(ctx.diagnostics.empty()) << messages(ctx);
  EXPECT_EQ(h100.kind, "accelerator");
  EXPECT_EQ(h100.memory_bytes, 80'000'000'000);
  EXPECT_EQ(h100.memory_bandwidth, 3'350'000'000'000);
  EXPECT_EQ(h100.matrix_fp16_ops, 989'000'000'000'000);
  EXPECT_EQ(&device_family_of(h100), &accelerator_family());

  const ModelSpec model = load_model("llama-3-8b");
  const TimingModel tm(h100, model, {.tp = 1, .kv_dtype_bytes = 2});
  StepWork decode;
  for (int i = 0; i < 16; ++i) decode.seqs.push_back({1, 2048, true});
  const StepTiming t = tm.price(decode);
  // A 16-sequence decode streams the weights once: at least their bytes over
  // 3.35 TB/s (~4.8 ms for 16 GB of fp16), well under a 910B2's 1.6 TB/s.
  const double weight_floor_ns = static_cast<double>(model.weight_bytes()) / 3.35e12 * 1e9;
  EXPECT_GE(static_cast<double>(t.latency), weight_floor_ns);
  EXPECT_LT(static_cast<double>(t.latency), 3.0 * weight_floor_ns + 2e6);
  EXPECT_EQ(t.latency, std::max(t.critical_path, t.memory_floor) + h100.step_overhead);
}

TEST(DeviceFamilies, TheOldNameAscendLoadsAsTheAcceleratorFamily) {
  std::string text = kH100;
  text.replace(text.find("kind: accelerator"), 17, "kind: ascend");
  config::LoadContext ctx;
  const DeviceSpec d = load_text(text, "old-name.yaml", ctx);
  ASSERT_TRUE(ctx.diagnostics.empty()) << messages(ctx);
  EXPECT_EQ(d.kind, "accelerator");
  EXPECT_EQ(find_device_family("ascend"), &accelerator_family());
  EXPECT_EQ(find_device_family("htp"), &htp_family());
  EXPECT_EQ(find_device_family("gpu"), nullptr);
}

// A key of another family is an error naming the family that takes it, in
// both directions.
TEST(DeviceFamilies, AnotherFamilysKeyNamesItsOwner) {
  std::string text = kH100;
  text += "htp:\n  vtcm: {value: 8MiB, source: \"A: test\"}\n";
  config::LoadContext ctx;
  load_text(text, "gpu-with-vtcm.yaml", ctx);
  std::string m = messages(ctx);
  ASSERT_EQ(ctx.diagnostics.all().size(), 1u) << m;
  EXPECT_EQ(ctx.diagnostics.all()[0].key_path, "htp");
  EXPECT_NE(m.find("not a parameter of device family 'accelerator' (it belongs to htp)"),
            std::string::npos)
      << m;
  std::ifstream in(std::string(KVSIM_CONFIG_DIR) + "/devices/snapdragon-8-elite.yaml");
  std::string phone((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  phone += "device_link_bandwidth: {value: 100GB/s, source: \"A: test\"}\n";
  config::LoadContext ctx2;
  load_text(phone, "phone-with-link.yaml", ctx2);
  m = messages(ctx2);
  ASSERT_EQ(ctx2.diagnostics.all().size(), 1u) << m;
  EXPECT_NE(m.find("not a parameter of device family 'htp' (it belongs to accelerator)"),
            std::string::npos)
      << m;
}

TEST(DeviceFamilies, AnUnknownKindIsTheOneErrorAndListsTheFamilies) {
  std::string text = kH100;
  text.replace(text.find("kind: accelerator"), 17, "kind: gpu");
  config::LoadContext ctx;
  load_text(text, "bad-kind.yaml", ctx);
  const std::string m = messages(ctx);
  ASSERT_EQ(ctx.diagnostics.all().size(), 1u) << m;
  EXPECT_NE(m.find("kind"), std::string::npos) << m;
  EXPECT_NE(m.find("accelerator"), std::string::npos) << m;
  EXPECT_NE(m.find("htp"), std::string::npos) << m;
}

TEST(DeviceFamilies, EachFamilyDeclaresItsKeysWithTypeUnitRangeAndDoc) {
  const std::vector<config::ComponentInfo> infos = device_family_infos();
  ASSERT_EQ(infos.size(), 3u);
  EXPECT_EQ(infos[0].name, "accelerator");
  EXPECT_EQ(infos[1].name, "htp");
  EXPECT_EQ(infos[2].name, "cpu");
  for (const auto& info : infos) {
    EXPECT_EQ(info.kind, "device family");
    EXPECT_FALSE(info.doc.empty());
    for (const auto& p : info.params) EXPECT_FALSE(p.doc.empty()) << info.name << "." << p.key;
    ASSERT_NE(info.find("memory_bandwidth"), nullptr);
    ASSERT_NE(info.find("efficiency.gemm.compute"), nullptr);
  }
  EXPECT_NE(infos[0].find("device_link_bandwidth"), nullptr);
  EXPECT_EQ(infos[1].find("device_link_bandwidth"), nullptr);
  ASSERT_NE(infos[1].find("htp.vtcm"), nullptr);
  EXPECT_EQ(infos[1].find("htp.vtcm")->range_text(), "64KiB..1GiB");
  EXPECT_EQ(infos[0].find("matrix_fp16")->type, config::ParamType::ops_rate);
  EXPECT_EQ(htp_family().engines(), (std::vector<std::string_view>{"genie", "serving"}));
  EXPECT_EQ(accelerator_family().engines(), (std::vector<std::string_view>{"serving"}));
}

TEST(DeviceFamilies, TheFamiliesPlaceQuantisedGemmsOnTheirOwnPeaks) {
  DeviceSpec d;
  d.matrix_fp16_ops = 100;
  d.matrix_int8_ops = 200;
  d.vector_fp16_ops = 10;
  ModelSpec w4;
  w4.weights_dtype = "w4a16";
  ModelSpec w8;
  w8.weights_dtype = "w8a8";
  // Ascend has no int4 path: w4a16 GEMMs run at fp16; an HTP's HMX runs them on int8.
  EXPECT_EQ(accelerator_family().compute_peak(OpKind::qkv_proj, d, w4, 2), 100);
  EXPECT_EQ(accelerator_family().compute_peak(OpKind::qkv_proj, d, w8, 2), 200);
  EXPECT_EQ(htp_family().compute_peak(OpKind::qkv_proj, d, w4, 2), 200);
  // Attention follows the KV dtype on HTP, stays fp16 on the accelerator.
  EXPECT_EQ(htp_family().compute_peak(OpKind::attention, d, w4, 1), 200);
  EXPECT_EQ(accelerator_family().compute_peak(OpKind::attention, d, w8, 1), 100);
  EXPECT_EQ(htp_family().compute_peak(OpKind::rope, d, w4, 1), 10);
}

TEST(DeviceFamilies, AnHtpPassMovesTheDdrBytesOfTheStepOpGraph) {
  config::LoadContext ctx;
  const DeviceSpec phone =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/snapdragon-8-elite.yaml", ctx);
  ASSERT_TRUE(ctx.diagnostics.empty()) << messages(ctx);
  const ModelSpec model = load_model("llama-3.2-3b-instruct-w4a16");
  const HtpTimingModel htp(phone, model, 1);
  const HtpPassTiming t = htp.price_pass({.variant = 1, .useful_tokens = 1, .kv_cols_read = 1000});

  StepWork work;
  work.fixed_shape = true;
  work.seqs.push_back({1, 1000, true});
  const StepOpCosts costs = step_op_costs(model, work, {1, 1});
  double ddr = 0, kv_read = 0;
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const double copies =
        op_is_per_layer(static_cast<OpKind>(k)) ? double(model.num_hidden_layers) : 1.0;
    ddr += copies * (costs[k].weight_bytes + costs[k].kv_read_bytes + costs[k].kv_write_bytes +
                     costs[k].residual_bytes);
    kv_read += copies * costs[k].kv_read_bytes;
  }
  EXPECT_DOUBLE_EQ(t.ddr_bytes, ddr);
  EXPECT_DOUBLE_EQ(t.kv_bytes_read, kv_read);
  // 1000 columns x 2 (K, V) x 28 layers x 8 KV heads x 128 x 1 byte.
  EXPECT_DOUBLE_EQ(kv_read, 1000.0 * 2 * 28 * 8 * 128);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
