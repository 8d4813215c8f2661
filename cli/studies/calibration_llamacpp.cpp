// Predicting llama-bench rows (metrics llamacpp_pp_rate, llamacpp_tg_rate):
// each row becomes a `kind: llama_bench` scenario of its one test (`pp N`
// from input_tokens, `tg N` from output_tokens) through llama.cpp's cells
// (kv_cache.policy llama_cells, behaviour current) on the row's device, and
// the figure is the t/s the workload reports for that test, computed as
// tools/llama-bench/llama-bench.cpp computes it
// (workloads/llama_bench_workload.cpp).
//
// The row's columns as llama-bench's table states them:
//   weights        the GGUF type (q4_0, q8_0, f16) or a kvsim weights format;
//                  q4_0 is `w4a16` (sim/cache/llama_backend.cpp maps it back)
//   kv_dtype       the cache type (-ctk/-ctv), f16 when blank (llama-bench's
//                  default)
//   batch          n_batch (-b): the prompt is decoded in batches of it, the
//                  dialog engine's prefill variant; 512 when blank (llama-bench's
//                  default n_ubatch; its n_batch is 2048, split into ubatches
//                  of 512 by llama_decode)
//   context        n_depth (-d) when set: tokens in the cache before the clock
// llama-bench's context is n_prompt + n_gen + n_depth (its `n_ctx` for the
// test); ctx_size is that, at least the batch variant.
//
// The llama_bench workload runs on the dialog engine on a device with an NPU
// graph executor (kind htp, the Hexagon backend), and on the serving engine's
// llama_cells with one slot (llama-bench's n_seq_max 1) on every other
// device, through the backend its family offers (sim/cache/llama_backend.hpp:
// CANN on an Ascend, CUDA on a GPU, the CPU backend on a CPU), n_batch and
// n_ubatch both the row's batch.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

#include "cli/studies/calibration.hpp"
#include "models/model_resolve.hpp"
#include "sim/core/llama_bench_metrics.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/engine.hpp"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kDefaultUbatch = 512;

bool is_llamacpp_metric(const std::string& m) {
  return m == "llamacpp_pp_rate" || m == "llamacpp_tg_rate";
}

// GGUF type names as llama-bench prints them, as kvsim's weights formats.
std::string weights_format(std::string w) {
  w = lower_ascii(w);
  if (w.empty() || w == "q4_0") return "w4a16";
  if (w == "q8_0") return "w8a16";
  return w;
}

std::string cache_type(std::string t) {
  t = lower_ascii(t);
  if (t.empty() || t == "fp16") return "f16";
  return t;
}

struct BenchRowScenario {
  ScenarioSpec spec;
  std::string test;  // llama-bench's test name (pp128, tg64)
  std::string description;
};

std::optional<BenchRowScenario> bench_row_scenario(const MeasurementRow& row,
                                                   const std::string& configs_dir,
                                                   const DeviceSpec* device) {
  if (!is_llamacpp_metric(row.metric)) return std::nullopt;
  if (row.has_layout_or_speculation() || row.length_distribution)
    throw std::runtime_error(fmt::format(
        "row {}: a llama-bench row runs one test of fixed sizes (no layout, speculative or "
        "lengths columns)",
        row.id));
  const bool pp = row.metric == "llamacpp_pp_rate";
  const std::optional<int64_t> n = pp ? row.input_tokens : row.output_tokens;
  if (!n || *n <= 0)
    throw std::runtime_error(fmt::format("row {}: {} needs {} (the test's size)", row.id,
                                         row.metric, pp ? "input_tokens" : "output_tokens"));
  const std::string name = row_device_name(row);
  const std::string device_file = configs_dir + "/devices/" + name + ".yaml";
  if (!fs::exists(device_file))
    throw std::runtime_error(
        fmt::format("row {}: no device file {}/devices/{}.yaml", row.id, configs_dir, name));
  DeviceSpec loaded;
  if (device == nullptr) {
    config::LoadContext ctx;
    loaded = load_device_file(device_file, ctx);
    ctx.diagnostics.throw_if_any();
    device = &loaded;
  }
  const bool dialog_engine = device->kind == "htp";
  const std::string weights = weights_format(row.weights);
  try {
    (void)load_model_by_name(row.model, weights, configs_dir);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("row {}: {}", row.id, e.what()));
  }
  const int64_t n_batch = row.batch.value_or(kDefaultUbatch);
  const int64_t depth = row.context.value_or(0);
  const std::string type = cache_type(row.kv_dtype);
  const std::string dtype = type == "f16" ? "fp16" : type == "f32" ? "fp32" : "int8";
  // llama-bench's n_ctx is n_depth + n_prompt + n_gen; the dialog engine's
  // AR-n_batch pass also needs n_batch cells free beside what it holds (its
  // static shape), and a `tg` run holds the one token its first decode reads.
  const int64_t n_ctx = depth + *n + 1 + n_batch;
  const std::string test = fmt::format("{} {}", pp ? "pp" : "tg", *n);
  const std::string kv = dialog_engine
                             ? fmt::format("ctx_size: {}, ar_variants: [1, {}]", n_ctx, n_batch)
                             : fmt::format("ctx_size: {}, n_parallel: 1, n_batch: {}, n_ubatch: {}",
                                           depth + *n + 1, n_batch, n_batch);
  const std::string scheduler =
      dialog_engine
          ? std::string()
          : fmt::format("scheduler: {{max_num_seqs: 1, max_batched_tokens: {}}}\n", n_batch);
  const std::string yaml = fmt::format(
      "name: calibrate-{id}\n"
      "seed: 1\n"
      "device: {device}\n"
      "model: {model}-{weights}\n"
      "kv_cache: {{policy: llama_cells, behaviour: current, dtype: {dtype}, type_k: {type}, "
      "type_v: {type}, v_trans: {v_trans}, {kv}}}\n"
      "{scheduler}"
      "workload: {{kind: llama_bench, tests: [\"{test}\"], depth: [{depth}], repetitions: 1}}\n",
      fmt::arg("id", row.id), fmt::arg("device", name), fmt::arg("model", row.model),
      fmt::arg("weights", weights), fmt::arg("dtype", dtype), fmt::arg("type", type),
      fmt::arg("v_trans", type == "f16" || type == "f32" ? "true" : "false"), fmt::arg("kv", kv),
      fmt::arg("scheduler", scheduler), fmt::arg("test", test), fmt::arg("depth", depth));
  BenchRowScenario out;
  out.spec = load_scenario_text(yaml, fmt::format("calibration row {}", row.id), configs_dir);
  // A fit's device comes from its file alone; the host CPU that runs the
  // ops the backend leaves (`host`) is the one the scenario loader read.
  std::shared_ptr<const DeviceSpec> host = out.spec.device.host;
  out.spec.device = *device;
  if (!out.spec.device.host) out.spec.device.host = host;
  out.test = fmt::format("{}{}{}", pp ? "pp" : "tg", *n,
                         depth > 0 ? fmt::format(" @ d{}", depth) : std::string());
  out.description = fmt::format("{} {}-{} llama_cells current KV {} n_batch {} llama-bench {}{}",
                                name, row.model, weights, type, n_batch, test,
                                depth > 0 ? fmt::format(" -d {}", depth) : std::string());
  return out;
}

}  // namespace

std::optional<Prediction> predict_llamacpp_row(const MeasurementRow& row,
                                               const std::string& configs_dir,
                                               const DeviceSpec* device) {
  std::optional<BenchRowScenario> run = bench_row_scenario(row, configs_dir, device);
  if (!run) return std::nullopt;
  const RunMetrics m = run->spec.device.kind == "htp" ? GenieEngine(run->spec, nullptr).run()
                                                      : ServingEngine(run->spec, nullptr).run();
  for (const LlamaBenchMetrics::Test& t : m.parts.get_or_zero<LlamaBenchMetrics>().tests) {
    if (t.name != run->test) continue;
    Prediction p;
    p.value = bench_rate(t).mean;
    p.scenario = run->description;
    return p;
  }
  throw std::runtime_error(fmt::format("row {}: the run reported no test {}", row.id, run->test));
}

}  // namespace kvsim
