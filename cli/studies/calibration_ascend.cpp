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
#include <regex>
#include <stdexcept>

#include "cli/studies/calibration.hpp"
#include "models/model_resolve.hpp"
#include "sim/scenario.hpp"
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

}  // namespace

std::optional<Prediction> predict_ascend_row(const MeasurementRow& row,
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
  ScenarioSpec spec =
      load_scenario_text(yaml, fmt::format("calibration row {}", row.id), configs_dir);
  if (device_spec != nullptr) spec.device = *device_spec;
  ServingEngine engine(spec, nullptr);
  const RunMetrics m = engine.run();
  if (m.requests.completed != requests)
    throw std::runtime_error(fmt::format("only {} of {} requests completed (rejected {})",
                                         m.requests.completed, requests, m.requests.rejected));

  Prediction p;
  if (throughput) p.value = m.throughput.output_tokens_per_s;
  if (request_rate) p.value = m.throughput.requests_per_s;
  if (decode) p.value = m.latency_ms.tpot.mean > 0 ? 1000.0 / m.latency_ms.tpot.mean : 0.0;
  if (ttft) p.value = m.latency_ms.ttft.mean;
  p.scenario = fmt::format(
      "{} x{} tp={}, {}, kv {}: closed loop of {} clients, {} requests of {} in / {} out "
      "(TTFT p50 {:.0f} ms, TPOT p50 {:.1f} ms)",
      device->name, device->count, device->tp, model, kv_dtype, batch, requests, *row.input_tokens,
      *row.output_tokens, m.latency_ms.ttft.p50, m.latency_ms.tpot.p50);
  return p;
}

}  // namespace kvsim
