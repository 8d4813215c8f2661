// Predicts an Ascend measurement row by running it as the benchmark
// that produced it: vllm-ascend's nightly CI runs `vllm bench serve` with a
// fixed input/output length and `--max-concurrency` clients, so the row
// becomes a closed-loop `kind: fixed` workload (concurrency = batch, think
// time 0, unique prompts) through the serving engine, and the prediction is
// the run's metric:
//   output_throughput (tokens/s) -> throughput.output_tokens_per_s
//   request_throughput (req/s)   -> throughput.requests_per_s
//   decode_rate (tokens/s)       -> 1000 / mean TPOT
//   ttft* (ms)                   -> mean TTFT
// The device column is `NAME [xN] [(tp=T)]`, e.g. "ascend-910b3 x4 (tp=4)";
// the model resolves by its Hugging Face name with the row's weights format
// (models/model_resolve.hpp). A prefix_hit column makes every prompt start
// with one prefix shared by all requests (vllm-ascend's prefix datasets:
// prefix_ratio, prefix_num 1), under automatic prefix caching.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <regex>
#include <stdexcept>

#include "cli/studies/calibration.hpp"
#include "models/model_resolve.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/engine.hpp"

namespace kvsim {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct DeviceColumn {
  std::string name;
  int64_t count = 1;
  int64_t tp = 1;
};

std::optional<DeviceColumn> parse_device_column(const std::string& text) {
  static const std::regex pattern(
      R"(^\s*(\S+)\s*(?:x\s*(\d+))?\s*(?:\(\s*tp\s*=\s*(\d+)\s*\))?\s*$)", std::regex::icase);
  std::smatch m;
  if (!std::regex_match(text, m, pattern)) return std::nullopt;
  DeviceColumn d;
  d.name = lower(m[1].str());
  if (m[2].matched) d.count = std::stoll(m[2].str());
  d.tp = m[3].matched ? std::stoll(m[3].str()) : d.count;
  return d;
}

// Requests per client: the first wave is all prefill; more waves make the
// figure a steady state (a benchmark sends several prompts per client).
constexpr int64_t kWavesPerClient = 4;

// The row as a serving scenario; nullopt when it is not an Ascend row or
// its metric is not one this predictor reads.
struct AscendRowScenario {
  ScenarioSpec spec;
  DeviceColumn device;
  std::string model, kv_dtype;
  int64_t batch = 1, requests = 0;
};

std::optional<AscendRowScenario> ascend_row_scenario(const MeasurementRow& row,
                                                     const std::string& configs_dir,
                                                     const DeviceSpec* device_spec) {
  const auto device = parse_device_column(row.device);
  if (!device || device->name.rfind("ascend-", 0) != 0) return std::nullopt;
  const bool throughput = row.metric == "output_throughput";
  const bool request_rate = row.metric == "request_throughput";
  const bool decode = row.metric == "decode_rate";
  const bool ttft = row.metric.rfind("ttft", 0) == 0;
  if (!throughput && !request_rate && !decode && !ttft) return std::nullopt;

  namespace fs = std::filesystem;
  if (!fs::exists(fs::path(configs_dir) / "devices" / (device->name + ".yaml")))
    throw std::runtime_error(
        fmt::format("no device file configs/devices/{}.yaml for '{}'", device->name, row.device));
  // The model as users name it, in the row's weights format (models/model_resolve.hpp).
  const std::string model = row.weights.empty() ? row.model : row.model + "-" + lower(row.weights);
  if (find_model(model, configs_dir).path.empty()) {
    (void)load_model_by_name(model, "", configs_dir);  // throws, naming the files looked for
  }
  if (!row.input_tokens || !row.output_tokens)
    throw std::runtime_error("the row gives no input_tokens/output_tokens to run");
  const int64_t batch = row.batch.value_or(1);
  const int64_t requests = std::max<int64_t>(batch * kWavesPerClient, 4);
  const std::string kv_dtype = row.kv_dtype.empty() ? "fp16" : lower(row.kv_dtype);

  // vLLM's serving defaults: 256 sequences, chunked prefill of 8192 tokens.
  const std::string yaml = fmt::format(
      "name: calibrate-{id}\nseed: 42\ndevice: {device}\nmodel: {model}\n"
      "parallel: {{tensor: {tp}}}\n"
      "kv_cache: {{policy: paged, dtype: {kv}, block_size: 128{caching}}}\n"
      "scheduler: {{max_num_seqs: {seqs}, max_batched_tokens: 8192}}\n"
      "workload:\n  kind: fixed\n  requests: {requests}\n"
      "  arrival: {{process: closed, concurrency: {batch}}}\n"
      "  input_tokens: {input}\n  output_tokens: {output}\n{prefix}",
      fmt::arg("id", row.id), fmt::arg("device", device->name), fmt::arg("model", model),
      fmt::arg("tp", device->tp), fmt::arg("kv", kv_dtype),
      fmt::arg("caching", row.prefix_hit ? ", prefix_caching: true" : ""),
      fmt::arg("seqs", std::max<int64_t>(256, batch)), fmt::arg("requests", requests),
      fmt::arg("batch", batch), fmt::arg("input", *row.input_tokens),
      fmt::arg("output", *row.output_tokens),
      fmt::arg("prefix",
               row.prefix_hit && *row.prefix_hit > 0
                   ? fmt::format("  prefix: {{shared_fraction: {}, groups: 1}}\n", *row.prefix_hit)
                   : std::string()));
  AscendRowScenario out;
  out.spec = load_scenario_text(yaml, fmt::format("calibration row {}", row.id), configs_dir);
  if (device_spec != nullptr) out.spec.device = *device_spec;
  out.device = *device;
  out.model = model;
  out.kv_dtype = kv_dtype;
  out.batch = batch;
  out.requests = requests;
  return out;
}

Prediction run_ascend_row(const MeasurementRow& row, const AscendRowScenario& run) {
  ServingEngine engine(run.spec, nullptr);
  const RunMetrics m = engine.run();
  if (m.requests.completed != run.requests)
    throw std::runtime_error(fmt::format("only {} of {} requests completed (rejected {})",
                                         m.requests.completed, run.requests, m.requests.rejected));
  Prediction p;
  if (row.metric == "output_throughput") p.value = m.throughput.output_tokens_per_s;
  if (row.metric == "request_throughput") p.value = m.throughput.requests_per_s;
  if (row.metric == "decode_rate")
    p.value = m.latency_ms.tpot.mean > 0 ? 1000.0 / m.latency_ms.tpot.mean : 0.0;
  if (row.metric.rfind("ttft", 0) == 0) p.value = m.latency_ms.ttft.mean;
  p.scenario = fmt::format(
      "{} x{} tp={}, {}, kv {}: closed loop of {} clients, {} requests of {} in / {} out "
      "(TTFT p50 {:.0f} ms, TPOT p50 {:.1f} ms)",
      run.device.name, run.device.count, run.device.tp, run.model, run.kv_dtype, run.batch,
      run.requests, *row.input_tokens, *row.output_tokens, m.latency_ms.ttft.p50,
      m.latency_ms.tpot.p50);
  return p;
}

}  // namespace

std::optional<Prediction> predict_ascend_row(const MeasurementRow& row,
                                             const std::string& configs_dir,
                                             const DeviceSpec* device_spec) {
  const std::optional<AscendRowScenario> run = ascend_row_scenario(row, configs_dir, device_spec);
  if (!run) return std::nullopt;
  return run_ascend_row(row, *run);
}

// A serving run's batches depend on its timing (a closed loop refills as
// requests finish), so the engine runs again at every price; only reading
// the scenario is done once.
std::optional<RowPricer> prepare_ascend_row(const MeasurementRow& row,
                                            const std::string& configs_dir,
                                            const DeviceSpec& device) {
  std::optional<AscendRowScenario> run = ascend_row_scenario(row, configs_dir, &device);
  if (!run) return std::nullopt;
  const Prediction first = run_ascend_row(row, *run);
  RowPricer pricer;
  pricer.scenario = first.scenario;
  pricer.recorded = first.value;
  auto shared = std::make_shared<const AscendRowScenario>(std::move(*run));
  pricer.price = [shared, row](const DeviceSpec& d) {
    AscendRowScenario at = *shared;
    at.spec.device = d;
    return run_ascend_row(row, at).value;
  };
  return pricer;
}

}  // namespace kvsim
