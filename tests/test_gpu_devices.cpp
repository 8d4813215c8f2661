// The GPU device files (configs/devices/a100-sxm4 ... mi300x): every number
// sourced; an H100 step never beats its roofline (bytes over HBM bandwidth,
// FLOPs over the tensor-core peak) in decode or prefill; fp8 weights stream
// half the bytes of bf16; a tensor-parallel all-reduce is priced from the
// NVLink bandwidth the file gives; and the formats and fabrics a part lacks
// are refused at load, naming the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/diagnostics.hpp"
#include "devices/device_formats.hpp"
#include "devices/device_spec.hpp"
#include "devices/timing_model.hpp"
#include "models/model_resolve.hpp"
#include "models/step_ops.hpp"
#include "tests/scenario_helpers.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

namespace fs = std::filesystem;

const char* const kGpus[] = {"a100-sxm4", "h100-sxm5", "h200-sxm", "b200", "mi300x"};

DeviceSpec gpu(const std::string& name) {
  config::LoadContext ctx;
  DeviceSpec d =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/" + name + ".yaml", ctx);
  ctx.diagnostics.throw_if_any();
  return d;
}

ModelSpec model(const std::string& name) {
  return load_model_by_name(name, "", KVSIM_CONFIG_DIR);
}

StepWork batch(int64_t seqs, int64_t query, int64_t context) {
  StepWork w;
  w.seqs.assign(static_cast<size_t>(seqs), SeqWork{query, context, true});
  return w;
}

TEST(GpuDevices, EveryNumberCarriesALabelledSource) {
  for (const char* name : kGpus) {
    const DeviceSpec d = gpu(name);
    EXPECT_EQ(d.kind, "accelerator") << name;
    EXPECT_FALSE(d.architecture.empty()) << name;
    EXPECT_EQ(d.max_tensor_parallel, 8) << name << ": nodes of 8";
    EXPECT_FALSE(d.device_link_fabric.empty()) << name;
    EXPECT_GE(d.sources.size(), 24u) << name;
    for (const auto& [key, source] : d.sources)
      EXPECT_FALSE(source_label(source).empty()) << name << " " << key << ": " << source;
  }
  // fp8 where the part has it, fp4 on Blackwell only.
  EXPECT_EQ(gpu("a100-sxm4").matrix_fp8_ops, 0);
  for (const char* name : {"h100-sxm5", "h200-sxm", "b200", "mi300x"})
    EXPECT_GT(gpu(name).matrix_fp8_ops, 0) << name;
  EXPECT_GT(gpu("b200").matrix_fp4_ops, gpu("b200").matrix_fp8_ops);
  EXPECT_EQ(gpu("h100-sxm5").matrix_fp4_ops, 0);
  // The H200 is the H100's die with HBM3e: same compute, more bandwidth.
  EXPECT_EQ(gpu("h200-sxm").matrix_fp16_ops, gpu("h100-sxm5").matrix_fp16_ops);
  EXPECT_GT(gpu("h200-sxm").memory_bandwidth, gpu("h100-sxm5").memory_bandwidth);
  EXPECT_EQ(gpu("h200-sxm").architecture, gpu("h100-sxm5").architecture);
}

// The roofline: a step cannot move its bytes faster than the HBM peak nor do
// its FLOPs faster than the matrix peak, whatever the efficiencies say. The
// bounds are counted here from the model's shape, not read back from the
// timing model: every linear weight of a rank is read once per step, the KV
// of every cached token once, and each linear weight does 2 FLOPs per token.
void expect_above_roofline(const DeviceSpec& h100, const ModelSpec& m, const StepWork& w,
                           const char* what) {
  const TimingModel tm(h100, m, {.tp = 1, .kv_dtype_bytes = 2});
  const StepTiming t = tm.price(w);
  double tokens = 0, kv_tokens = 0;
  for (const SeqWork& s : w.seqs) {
    tokens += static_cast<double>(s.query_tokens);
    kv_tokens += static_cast<double>(s.context_before);
  }
  const double bytes =
      static_cast<double>(m.weight_bytes_per_rank(1)) -
      static_cast<double>(m.vocab_size * m.hidden_size * 2) +  // embeddings gathered
      kv_tokens * static_cast<double>(m.kv_bytes_per_token(2, 1));
  const double flops = 2.0 * static_cast<double>(m.linear_parameter_count()) * tokens;
  const double memory_bound_ns = bytes / static_cast<double>(h100.memory_bandwidth) * 1e9;
  const double compute_bound_ns = flops / static_cast<double>(h100.matrix_fp16_ops) * 1e9;
  EXPECT_GE(static_cast<double>(t.latency), memory_bound_ns) << what;
  EXPECT_GE(static_cast<double>(t.latency), compute_bound_ns) << what;
  EXPECT_GE(t.flops, flops * 0.999) << what << ": the step does at least the GEMMs' FLOPs";
}

TEST(GpuDevices, AnH100StepNeverBeatsItsRoofline) {
  const DeviceSpec h100 = gpu("h100-sxm5");
  const ModelSpec m = model("llama-3.1-8b");  // bf16
  expect_above_roofline(h100, m, batch(64, 1, 2048), "decode, 64 sequences at 2048");
  expect_above_roofline(h100, m, batch(1, 1, 100), "decode, one sequence");
  expect_above_roofline(h100, m, batch(1, 8192, 0), "prefill, one 8192-token prompt");
  expect_above_roofline(h100, m, batch(16, 512, 0), "prefill, 16 x 512");
  // A memory-bound decode sits within reach of the memory bound and a
  // compute-bound prefill within reach of the compute bound: the bounds are
  // the ones that bind, not loose.
  const TimingModel tm(h100, m, {.tp = 1, .kv_dtype_bytes = 2});
  const double decode_ns = static_cast<double>(tm.price(batch(1, 1, 100)).latency);
  const double weights_ns = static_cast<double>(m.weight_bytes_per_rank(1)) /
                            static_cast<double>(h100.memory_bandwidth) * 1e9;
  EXPECT_LT(decode_ns, 3.0 * weights_ns);
}

TEST(GpuDevices, Fp8WeightsStreamHalfTheBytesOfBf16) {
  const ModelSpec bf16 = model("llama-3.1-8b");
  const ModelSpec fp8 = model("llama-3.1-8b-fp8");
  ASSERT_EQ(fp8.weights_dtype, "fp8");
  EXPECT_DOUBLE_EQ(bf16.linear_weight_bytes_per_parameter(), 2.0);
  EXPECT_DOUBLE_EQ(fp8.linear_weight_bytes_per_parameter(), 1.0);
  // Per op of a decode step: every GEMM streams half the weight bytes.
  const StepWork w = batch(1, 1, 512);
  const StepOpCosts a = step_op_costs(bf16, w, StepShapeParams{1, 2});
  const StepOpCosts b = step_op_costs(fp8, w, StepShapeParams{1, 2});
  for (OpKind k : {OpKind::qkv_proj, OpKind::o_proj, OpKind::mlp_gate_up, OpKind::mlp_down}) {
    const auto i = static_cast<size_t>(k);
    ASSERT_GT(a[i].weight_bytes, 0) << op_kind_name(k);
    EXPECT_DOUBLE_EQ(b[i].weight_bytes * 2.0, a[i].weight_bytes) << op_kind_name(k);
  }
  // The LM head and embeddings stay 16-bit, as FP8 exports leave them.
  EXPECT_DOUBLE_EQ(b[static_cast<size_t>(OpKind::lm_head)].weight_bytes,
                   a[static_cast<size_t>(OpKind::lm_head)].weight_bytes);
  // A weight-bound decode on the H100 then takes about half as long.
  const DeviceSpec h100 = gpu("h100-sxm5");
  const TimingModel t16(h100, bf16, {.tp = 1, .kv_dtype_bytes = 2});
  const TimingModel t8(h100, fp8, {.tp = 1, .kv_dtype_bytes = 2});
  const double ratio = static_cast<double>(t8.price(w).latency - h100.step_overhead) /
                       static_cast<double>(t16.price(w).latency - h100.step_overhead);
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 0.75) << "the LM head, norms and launches do not halve";
  // fp8 GEMMs run on the fp8 tensor cores: a compute-bound prefill is faster.
  const StepWork prefill = batch(4, 4096, 0);
  EXPECT_LT(t8.price(prefill).latency, t16.price(prefill).latency * 0.75);
}

TEST(GpuDevices, AnNvlinkAllReduceIsPricedFromItsBandwidth) {
  const DeviceSpec h100 = gpu("h100-sxm5");
  const ModelSpec m = model("llama-3.3-70b");
  const int64_t tp = 8;
  const StepWork w = batch(256, 1, 1024);
  const StepOpCosts costs = step_op_costs(m, w, StepShapeParams{tp, 2});
  const OpCost& ar = costs[static_cast<size_t>(OpKind::attn_allreduce)];
  ASSERT_TRUE(ar.present);
  // Ring all-reduce of the [tokens, hidden] bf16 activations: 2 (tp-1)/tp of the buffer.
  const double bytes = 2.0 * 7.0 / 8.0 * 256.0 * static_cast<double>(m.hidden_size) * 2.0;
  EXPECT_DOUBLE_EQ(ar.link_bytes, bytes);
  const TimingModel tm(h100, m, {.tp = tp, .kv_dtype_bytes = 2});
  const double link_ns = bytes / static_cast<double>(h100.device_link_bandwidth) * 1e9;
  const TimeNs expected =
      static_cast<TimeNs>(std::ceil(link_ns + static_cast<double>(h100.device_link_latency))) +
      h100.kernel_launch;
  EXPECT_EQ(tm.op_duration(OpKind::attn_allreduce, ar), expected);
  // Twice the link bandwidth halves the transfer part, not the latency.
  DeviceSpec fast = h100;
  fast.device_link_bandwidth *= 2;
  const TimingModel tf(fast, m, {.tp = tp, .kv_dtype_bytes = 2});
  const TimeNs expected_fast =
      static_cast<TimeNs>(std::ceil(link_ns / 2 + static_cast<double>(h100.device_link_latency))) +
      h100.kernel_launch;
  EXPECT_EQ(tf.op_duration(OpKind::attn_allreduce, ar), expected_fast);
  // The A100's NVLink 3 (300 GB/s per direction) takes 1.5x the H100's 450.
  EXPECT_EQ(gpu("a100-sxm4").device_link_bandwidth * 3, h100.device_link_bandwidth * 2);
}

// Bad input: exit 2 naming the key, through the same loader kvsim run uses.
std::string load_error(const std::string& yaml) {
  try {
    (void)testing::scenario_from_text(yaml);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string scenario(const std::string& device, const std::string& model_name, int tp,
                     const std::string& kv) {
  return "name: t\ndevice: " + device + "\nmodel: " + model_name +
         "\nparallel: {tensor: " + std::to_string(tp) +
         "}\nkv_cache: {policy: paged, dtype: " + kv +
         "}\nworkload: {kind: fixed, requests: 4, arrival: {process: poisson, rate_per_s: 4}, "
         "input_tokens: 64, output_tokens: 8}\n";
}

TEST(GpuDevices, Fp8OnAPartWithoutFp8IsRefusedNamingTheKey) {
  const std::string weights = load_error(scenario("a100-sxm4", "llama-3.1-8b-fp8", 1, "fp16"));
  EXPECT_NE(weights.find("model"), std::string::npos) << weights;
  EXPECT_NE(weights.find("matrix_fp8"), std::string::npos) << weights;
  const std::string kv = load_error(scenario("a100-sxm4", "llama-3.1-8b", 1, "fp8"));
  EXPECT_NE(kv.find("kv_cache.dtype"), std::string::npos) << kv;
  EXPECT_NE(kv.find("matrix_fp8"), std::string::npos) << kv;
  const std::string ascend = load_error(scenario("ascend-910b2", "llama-3.1-8b", 1, "fp8_e4m3"));
  EXPECT_NE(ascend.find("kv_cache.dtype"), std::string::npos) << ascend;
  const std::string fp4 = load_error(scenario("h100-sxm5", "llama-3.1-8b-fp4", 1, "fp8"));
  EXPECT_NE(fp4.find("matrix_fp4"), std::string::npos) << fp4;
  // The same on a part that has them loads.
  EXPECT_EQ(load_error(scenario("h100-sxm5", "llama-3.1-8b-fp8", 1, "fp8")), "");
  EXPECT_EQ(load_error(scenario("b200", "llama-3.1-8b-fp4", 1, "fp8")), "");
}

TEST(GpuDevices, ANodeSizeTheDeviceFileDoesNotAllowIsRefused) {
  const std::string e = load_error(scenario("h100-sxm5", "llama-3.3-70b", 16, "fp16"));
  EXPECT_NE(e.find("parallel.tensor"), std::string::npos) << e;
  EXPECT_NE(e.find("1..8"), std::string::npos) << e;
}

TEST(GpuDevices, NvlinkOnAPcieOnlyPartIsRefusedNamingTheKey) {
  std::ifstream in(std::string(KVSIM_CONFIG_DIR) + "/devices/h100-sxm5.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("device_link_fabric: nvlink");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("device_link_fabric: nvlink").size(), "device_link_fabric: pcie");
  const fs::path path = fs::temp_directory_path() / "h100-pcie-nvlink.yaml";
  std::ofstream(path) << text;
  config::LoadContext ctx;
  (void)load_device_file(path.string(), ctx);
  fs::remove(path);
  ASSERT_FALSE(ctx.diagnostics.empty());
  const std::string msg = ctx.diagnostics.all().front().format();
  EXPECT_NE(msg.find("device_link_bandwidth"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pcie"), std::string::npos) << msg;
}

TEST(GpuDevices, FormatProblemsNameTheDeviceKey) {
  const DeviceSpec a100 = gpu("a100-sxm4");
  EXPECT_NE(weights_format_problem(a100, "fp8").find("matrix_fp8"), std::string::npos);
  EXPECT_EQ(weights_format_problem(a100, "bf16"), "");
  EXPECT_EQ(weights_format_problem(a100, "w8a8"), "");
  EXPECT_NE(kv_format_problem(a100, "fp8_e5m2").find("matrix_fp8"), std::string::npos);
  EXPECT_EQ(kv_format_problem(gpu("mi300x"), "fp8"), "");
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
