// llama_cells on every device family (sim/cache/llama_backend.hpp): which
// llama.cpp backend each family offers, which ops each backend leaves to
// the CPU (ggml-cann.cpp and ggml-hexagon.cpp supports_op), and what the
// host CPU's share costs (sim/cache/llama_backend_cost.hpp): the layers an
// n_gpu_layers split leaves on the host pay the host's compute, not only
// the KV they read.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "devices/device_spec.hpp"
#include "models/step_ops.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/llama_backend.hpp"
#include "sim/cache/llama_backend_cost.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "tests/support/metric_parts.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

DeviceSpec device(const std::string& name) {
  config::LoadContext ctx;
  DeviceSpec d = load_device_file(testing::configs_dir() + "/devices/" + name + ".yaml", ctx);
  ctx.diagnostics.throw_if_any();
  return d;
}

ModelSpec model(const std::string& device_name, const std::string& model_name) {
  return testing::scenario_from_text("name: m\ndevice: " + device_name + "\nmodel: " + model_name +
                                     "\nkv_cache: {policy: llama_cells, ctx_size: 4096}\n"
                                     "workload:\n  kind: synthetic\n  requests: 1\n"
                                     "  arrival: {process: poisson, rate_per_s: 1}\n"
                                     "  input_tokens: {dist: constant, value: 16}\n"
                                     "  output_tokens: {dist: constant, value: 4}\n")
      .model;
}

bool moved(const LlamaOpMap& m, OpKind k) {
  return m.on_host[static_cast<size_t>(k)];
}

TEST(LlamaBackends, EachFamilyOffersItsOwn) {
  const auto one = [](const std::string& n) {
    const auto b = llama_backends_of(device(n));
    return b.size() == 1 ? std::string(llama_backend_name(b[0])) : std::string("?");
  };
  EXPECT_EQ(one("xeon-platinum-8480"), "cpu");
  EXPECT_EQ(one("kunpeng-920-6426"), "cpu");
  EXPECT_EQ(one("snapdragon-8-elite-cpu"), "cpu");
  EXPECT_EQ(one("ascend-910b2"), "cann");
  EXPECT_EQ(one("ascend-310p"), "cann");
  EXPECT_EQ(one("h100-sxm5"), "cuda");
  EXPECT_EQ(one("mi300x"), "cuda");  // ggml-cuda built for HIP
  EXPECT_EQ(one("snapdragon-8-elite"), "hexagon");
  const DeviceSpec npu = device("ascend-910b2");
  EXPECT_EQ(resolve_llama_backend("auto", npu), LlamaBackend::cann);
  EXPECT_EQ(resolve_llama_backend("hexagon", npu), std::nullopt);
  EXPECT_EQ(resolve_llama_backend("vulkan", npu), std::nullopt);
}

// ggml-cann.cpp (fc8d13e6) ggml_backend_cann_supports_op.
TEST(LlamaBackends, CannTakesADenseF16LayerAndLeavesWhatItsSupportsOpRefuses) {
  const DeviceSpec npu = device("ascend-910b2");
  const ModelSpec m = model("ascend-910b2", "llama-3-8b");
  LlamaCellsShape l;
  EXPECT_FALSE(llama_op_map(LlamaBackend::cann, npu, m, l).any());
  l.v_trans = false;  // flash attention over f16 K and V
  EXPECT_FALSE(llama_op_map(LlamaBackend::cann, npu, m, l).any());
  // FLASH_ATTN_EXT takes F16 K and V only; SET_ROWS writes F32/F16 rows only.
  l.type_k = l.type_v = "q8_0";
  const LlamaOpMap q8 = llama_op_map(LlamaBackend::cann, npu, m, l);
  EXPECT_TRUE(moved(q8, OpKind::attention));
  EXPECT_TRUE(moved(q8, OpKind::kv_store));
  EXPECT_FALSE(moved(q8, OpKind::qkv_proj));
  EXPECT_EQ(q8.why.size(), 2u);
  // MUL_MAT takes F16, F32, Q8_0 and Q4_0 weights: FP8 ones (no GGUF type
  // it multiplies) stay on the host.
  ModelSpec fp8 = m;
  fp8.weights_dtype = "fp8";
  const LlamaOpMap w = llama_op_map(LlamaBackend::cann, npu, fp8, LlamaCellsShape{});
  for (OpKind k :
       {OpKind::qkv_proj, OpKind::o_proj, OpKind::mlp_gate_up, OpKind::mlp_down, OpKind::lm_head})
    EXPECT_TRUE(moved(w, k)) << op_kind_name(k);
  EXPECT_FALSE(moved(w, OpKind::attention));
  ModelSpec q8w = m;
  q8w.weights_dtype = "w8a8";
  EXPECT_FALSE(llama_op_map(LlamaBackend::cann, npu, q8w, LlamaCellsShape{}).any());
  // The 310P build takes no quantized matmul and no flash attention.
  const DeviceSpec p310 = device("ascend-310p");
  LlamaCellsShape fa;
  fa.v_trans = false;
  const LlamaOpMap on310 = llama_op_map(LlamaBackend::cann, p310, q8w, fa);
  EXPECT_TRUE(moved(on310, OpKind::qkv_proj));
  EXPECT_TRUE(moved(on310, OpKind::attention));
}

// ggml-hexagon.cpp (afaeb543) ggml_backend_hexagon_device_supports_op.
TEST(LlamaBackends, HexagonLeavesAttentionTheStoresAndALargeLmHeadToTheCpu) {
  const DeviceSpec npu = device("snapdragon-8-elite");
  const ModelSpec m = model("snapdragon-8-elite", "llama-3.2-3b-instruct-w4a16");
  ASSERT_GT(m.vocab_size, 16 * 1024);
  const LlamaOpMap map = llama_op_map(LlamaBackend::hexagon, npu, m, LlamaCellsShape{});
  EXPECT_TRUE(moved(map, OpKind::attention));
  EXPECT_TRUE(moved(map, OpKind::kv_store));
  EXPECT_TRUE(moved(map, OpKind::lm_head));  // 128256 rows > 16384: "too large for VTCM"
  for (OpKind k : {OpKind::qkv_proj, OpKind::o_proj, OpKind::mlp_gate_up, OpKind::mlp_down,
                   OpKind::rope, OpKind::input_norm, OpKind::mlp_act})
    EXPECT_FALSE(moved(map, k)) << op_kind_name(k);
  ModelSpec fp32 = m;
  fp32.weights_dtype = "fp32";
  EXPECT_TRUE(
      moved(llama_op_map(LlamaBackend::hexagon, npu, fp32, LlamaCellsShape{}), OpKind::mlp_down));
  // A GPU and the CPU backend keep every op.
  EXPECT_FALSE(llama_op_map(LlamaBackend::cuda, device("h100-sxm5"), m, LlamaCellsShape{}).any());
  EXPECT_FALSE(
      llama_op_map(LlamaBackend::cpu, device("xeon-platinum-8480"), m, LlamaCellsShape{}).any());
}

std::string serve(const std::string& dev, const std::string& mdl, const std::string& cache) {
  return "name: s\nseed: 3\ndevice: " + dev + "\nmodel: " + mdl +
         "\nkv_cache: {policy: llama_cells, ctx_size: 8192, behaviour: current" + cache +
         "}\nscheduler: {max_num_seqs: 4, max_batched_tokens: 2048}\n"
         "workload:\n  kind: synthetic\n  requests: 6\n"
         "  arrival: {process: poisson, rate_per_s: 2}\n"
         "  input_tokens: {dist: constant, value: 512}\n"
         "  output_tokens: {dist: constant, value: 32}\n";
}

// The layers -ngl leaves on the host run there, weights and all: a step
// costs at least what the host CPU needs for those layers' FLOPs or bytes,
// whichever binds, on top of the device's part (the KV copy alone, as a
// host read at memcpy speed, would be a fraction of it).
TEST(LlamaBackends, HostLayersPayTheHostsComputeNotOnlyTheirKv) {
  const ScenarioSpec s =
      testing::scenario_from_text(serve("ascend-910b2", "llama-3-8b", ", n_gpu_layers: 24"));
  ASSERT_TRUE(s.device.host);
  std::unique_ptr<LlamaBackendCost> cost = s.policy().host_work(s);
  ASSERT_NE(cost, nullptr);
  EXPECT_EQ(cost->host_layers(), 8);
  const DeviceSpec& host = *s.device.host;
  for (const int64_t tokens : {1, 64, 512}) {
    StepWork w;
    w.seqs.push_back(SeqWork{tokens, 1024, true});
    const StepOpCosts costs = step_op_costs(s.model, w, StepShapeParams{1, 2});
    double flops = 0, bytes = 0, kv = 0;
    for (size_t k = 0; k < kOpKindCount; ++k) {
      if (!costs[k].present || !op_is_per_layer(static_cast<OpKind>(k))) continue;
      flops += costs[k].flops;
      bytes += costs[k].mem_bytes;
      kv += costs[k].kv_read_bytes;
    }
    const double peak = static_cast<double>(
        std::max({host.matrix_fp16_ops, host.matrix_int8_ops, host.vector_fp16_ops}));
    const double bound_s =
        8 * std::max(flops / peak, bytes / static_cast<double>(host.memory_bandwidth));
    const auto bound = static_cast<TimeNs>(bound_s * 1e9);
    const TimeNs device_latency = 5'000'000;
    const TimeNs t = cost->serve_step(w, device_latency);
    const LlamaHostShare share = cost->share(w, {});
    EXPECT_GE(share.host, bound) << tokens << " tokens";
    EXPECT_GE(t, bound) << tokens << " tokens";
    // What the old price charged: the host layers' KV read at the bandwidth.
    const auto kv_only =
        static_cast<TimeNs>(8 * kv / static_cast<double>(host.memory_bandwidth) * 1e9);
    EXPECT_GT(share.host, kv_only) << tokens << " tokens";
    EXPECT_GT(share.link_bytes, 0);  // the activations cross at the split point
  }
}

TEST(LlamaBackends, AServedSplitIsSlowerAndReportsItsHostShare) {
  const RunMetrics all =
      run_scenario(testing::scenario_from_text(serve("ascend-910b2", "llama-3-8b", "")), nullptr)
          .metrics;
  const RunMetrics split =
      run_scenario(
          testing::scenario_from_text(serve("ascend-910b2", "llama-3-8b", ", n_gpu_layers: 24")),
          nullptr)
          .metrics;
  EXPECT_EQ(all.requests.completed, 6);
  EXPECT_EQ(split.requests.completed, 6);
  EXPECT_TRUE(testing::cells_of(all).backend.empty());  // nothing on the host: priced as before
  const LlamaCellsMetrics& c = testing::cells_of(split);
  EXPECT_EQ(c.backend, "cann");
  EXPECT_EQ(c.host_device, "kunpeng-920-6426");
  EXPECT_EQ(c.host_layers, 8);
  EXPECT_GT(c.host_ns, 0);
  EXPECT_GT(split.latency_ms.tpot.p50, 2 * all.latency_ms.tpot.p50);
}

// A quantized cache under flash attention: CANN's FLASH_ATTN_EXT refuses it,
// so every layer's attention runs on the Kunpeng, its K/V copied over PCIe.
TEST(LlamaBackends, CannWithAQuantizedCacheRunsAttentionOnTheHost) {
  const std::string fa = ", v_trans: false";
  const RunMetrics f16 =
      run_scenario(testing::scenario_from_text(serve("ascend-910b2", "llama-3-8b", fa)), nullptr)
          .metrics;
  const RunMetrics q8 =
      run_scenario(testing::scenario_from_text(
                       serve("ascend-910b2", "llama-3-8b", fa + ", type_k: q8_0, type_v: q8_0")),
                   nullptr)
          .metrics;
  const LlamaCellsMetrics& c = testing::cells_of(q8);
  ASSERT_EQ(c.ops_on_host.size(), 2u);
  EXPECT_EQ(c.ops_on_host[0].rfind("attention: FLASH_ATTN_EXT takes F16 K and V only", 0), 0u);
  EXPECT_GT(c.host_link_bytes, 0);
  EXPECT_GT(q8.latency_ms.tpot.p50, f16.latency_ms.tpot.p50);
}

// llama_cells runs on a CPU socket, a phone's cores, a GPU, an Ascend and
// the Hexagon NPU.
TEST(LlamaBackends, EveryFamilyRunsLlamaCells) {
  for (const std::string dev : {"xeon-platinum-8480", "kunpeng-920-6426", "snapdragon-8-elite-cpu",
                                "h100-sxm5", "ascend-910b2"}) {
    const RunMetrics m =
        run_scenario(testing::scenario_from_text(serve(dev, "llama-3.2-1b", "")), nullptr).metrics;
    EXPECT_EQ(m.requests.completed, 6) << dev;
    EXPECT_GT(m.latency_ms.tpot.p50, 0) << dev;
  }
  const RunMetrics phone =
      run_scenario(testing::scenario_from_text(
                       "name: d\nseed: 5\ndevice: snapdragon-8-elite\n"
                       "model: llama-3.2-3b-instruct-w4a16\n"
                       "kv_cache: {policy: llama_cells, dtype: fp16, ctx_size: 2048, "
                       "ar_variants: [1, 128], update_threads: 4, behaviour: current}\n"
                       "workload:\n  kind: dialog\n  turns: 3\n"
                       "  prompt_tokens: {dist: constant, value: 200}\n"
                       "  reply_tokens: {dist: constant, value: 50}\n"
                       "  think_time: {dist: constant, value: 1s}\n"),
                   nullptr)
          .metrics;
  EXPECT_EQ(phone.requests.completed, 3);
  const LlamaCellsMetrics& c = testing::cells_of(phone);
  EXPECT_EQ(c.backend, "hexagon");
  EXPECT_EQ(c.host_device, "snapdragon-8-elite-cpu");
  EXPECT_EQ(c.ops_on_host.size(), 3u);  // attention, kv_store, lm_head
  EXPECT_EQ(c.host_link_bytes, 0);      // the phone's NPU and cores share LPDDR
  EXPECT_GT(c.host_ns, 0);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// ggml-hexagon's matmuls are HVX dot products (htp/matmul-ops.c,
// vec_dot_q4x4x2_q8x4x2: int8 vrmpy, 128 MACs a vector, twice the fp16
// lanes), not HMX tiles, unless built for HMX: a Q4_0 pass's GEMMs are priced
// at 2 x vector_fp16 at the HVX efficiency, and the same pass on HMX is
// faster. The backend asks for it through the op map (hexagon_matmul).
TEST(LlamaBackends, HexagonGemmsRunOnHvxUnlessBuiltForHmx) {
  const DeviceSpec npu = device("snapdragon-8-elite");
  const ModelSpec m = model("snapdragon-8-elite", "llama-3.2-1b-instruct-w4a16");
  const HtpTimingModel htp(npu, m, 2, GraphLogits::last_row);
  HtpPass pass{128, 128, 128, 0, 0};
  const HtpPassTiming hmx = htp.price_pass(pass);
  pass.gemm_on_vector = true;
  const HtpPassTiming hvx = htp.price_pass(pass);
  EXPECT_GT(hvx.latency, 4 * hmx.latency);
  // The GEMMs' flops at 2 x vector_fp16 x the HVX efficiency are a floor of
  // the pass's compute (the other ops only add to it).
  StepWork w;
  w.fixed_shape = true;
  w.sampled_logits_only = true;
  w.seqs.push_back(SeqWork{128, 128, true});
  const StepOpCosts c = step_op_costs(m, w, StepShapeParams{1, 2});
  double gemm = 0;
  for (OpKind k : {OpKind::qkv_proj, OpKind::o_proj, OpKind::mlp_gate_up, OpKind::mlp_down})
    gemm += c[static_cast<size_t>(k)].flops * static_cast<double>(m.num_hidden_layers);
  gemm += c[static_cast<size_t>(OpKind::lm_head)].flops;
  const double rate = 2.0 * static_cast<double>(npu.vector_fp16_ops) *
                      npu.compute_efficiency[static_cast<size_t>(OpClass::elementwise)];
  EXPECT_GE(static_cast<double>(hvx.compute), 1e9 * gemm / rate * 0.999);
  // The op map carries the choice: hvx by default, hmx on request.
  LlamaCellsShape shape;
  EXPECT_TRUE(llama_op_map(LlamaBackend::hexagon, npu, m, shape).gemm_on_vector);
  shape.hexagon_matmul = "hmx";
  EXPECT_FALSE(llama_op_map(LlamaBackend::hexagon, npu, m, shape).gemm_on_vector);
  EXPECT_FALSE(llama_op_map(LlamaBackend::cann, device("ascend-910b2"),
                            model("ascend-910b2", "llama-3.2-1b"), LlamaCellsShape{})
                   .gemm_on_vector);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
