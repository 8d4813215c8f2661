// Predicts a static-batch row: the benchmark runs one batch of B identical
// prompts to completion, all B prompts' context in one step and then one
// decode step per further output token for all B at once (TensorRT-LLM's
// gptSessionBenchmark, `--batch_size B --input_output_len ISL,OSL`; vLLM's
// benchmark_latency). The schedule does not depend on timing, so the row is
// priced step by step on the device's TimingModel without a serving run:
//   context step: B sequences of ISL new tokens, each sampling its first token
//   decode step k (1 .. OSL-1): B sequences of 1 token after ISL + k - 1
// The decode steps' latency is a piecewise-linear function of k (every op's
// roofline is linear in the context between the points where its bound
// switches), so beyond kExactDecodeSteps they are priced at that many points
// spread evenly over 1 .. OSL-1 and summed by the trapezoid rule, which is
// exact on each linear piece (tests/test_gpu_calibration.cpp holds the sum
// to the step-by-step one).
//   output_throughput_per_device (tokens/s/GPU) = B x OSL / time / (tp x pp)
//   output_throughput (tokens/s)  = B x OSL / time x instances (count / tp)
//   ttft* (ms)                    = the context step
//   latency (s)                   = the whole batch
// The row's engine (its `software` column) prices the per-step host work
// (cli/studies/calibration_engines.cpp) in place of the device file's.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "cli/studies/calibration.hpp"
#include "devices/device_formats.hpp"
#include "devices/timing_model.hpp"
#include "models/model_resolve.hpp"

namespace kvsim {
namespace {

constexpr int64_t kExactDecodeSteps = 64;

struct StaticBatchRun {
  DeviceColumn device;
  ModelSpec model;
  std::string model_name, kv_dtype;
  Bytes kv_bytes = 2;
  int64_t batch = 1, input = 1, output = 1;
  std::optional<TimeNs> engine_step_overhead;
  std::string engine;
};

bool static_metric(const std::string& m) {
  return m == "output_throughput_per_device" || m == "output_throughput" || m == "latency" ||
         m.rfind("ttft", 0) == 0;
}

std::optional<StaticBatchRun> static_batch_run(const MeasurementRow& row,
                                               const std::string& configs_dir,
                                               const DeviceSpec& device) {
  if (row.arrival != "static_batch") return std::nullopt;
  if (!static_metric(row.metric)) return std::nullopt;
  // One batch priced step by step on one instance: the layout and
  // speculation columns are the serving engine's (calibration_ascend.cpp).
  if (row.has_layout_or_speculation())
    throw std::runtime_error(
        "pipeline, expert, data and speculative columns are not run for static_batch rows");
  // A static batch is one shape (gptSessionBenchmark's --input_output_len).
  if (row.length_distribution)
    throw std::runtime_error("a lengths file is not run for static_batch rows (one shape each)");
  const auto column = parse_device_column(row.device);
  if (!column)
    throw std::runtime_error(fmt::format("device '{}' is not NAME [xN] [(tp=T)]", row.device));
  if (!row.input_tokens || !row.output_tokens)
    throw std::runtime_error("the row gives no input_tokens/output_tokens to run");
  StaticBatchRun run;
  run.device = *column;
  run.model_name = row.weights.empty() ? row.model : row.model + "-" + lower_ascii(row.weights);
  run.model = load_model_by_name(run.model_name, "", configs_dir);
  run.kv_dtype = row.kv_dtype.empty() ? "fp16" : lower_ascii(row.kv_dtype);
  run.kv_bytes = kv_dtype_bytes(run.kv_dtype);
  run.batch = row.batch.value_or(1);
  run.input = *row.input_tokens;
  run.output = *row.output_tokens;
  if (const std::string why = weights_format_problem(device, run.model.weights_dtype); !why.empty())
    throw std::runtime_error(why);
  if (const std::string why = kv_format_problem(device, run.kv_dtype); !why.empty())
    throw std::runtime_error(why);
  if (const std::string why = run.model.tensor_parallel_problem(run.device.tp); !why.empty())
    throw std::runtime_error(why);
  // The batch's whole KV cache and the weights must fit one rank.
  const Bytes weights = run.model.weight_bytes_per_rank(run.device.tp);
  const Bytes kv =
      run.model.kv_bytes_for_context(run.input + run.output, run.kv_bytes, run.device.tp) *
      run.batch;
  if (weights + kv > device.memory_bytes)
    throw std::runtime_error(fmt::format(
        "{} x {} tokens of KV ({:.1f} GB) and the weights ({:.1f} GB) exceed one rank's {:.1f} GB",
        run.batch, run.input + run.output, static_cast<double>(kv) / 1e9,
        static_cast<double>(weights) / 1e9, static_cast<double>(device.memory_bytes) / 1e9));
  if (const auto engine = find_engine_step_overhead(row.software, configs_dir)) {
    run.engine_step_overhead = engine->step_overhead;
    run.engine = engine->software;
  }
  return run;
}

StepWork batch_step(int64_t batch, int64_t query, int64_t context) {
  StepWork w;
  w.seqs.assign(static_cast<size_t>(batch), SeqWork{query, context, true});
  return w;
}

struct BatchTimes {
  double context_ns = 0;
  double total_ns = 0;
};

BatchTimes price_batch(const StaticBatchRun& run, const DeviceSpec& device_in, bool exact) {
  DeviceSpec device = device_in;
  if (run.engine_step_overhead) device.step_overhead = *run.engine_step_overhead;
  const TimingModel tm(device, run.model, {.tp = run.device.tp, .kv_dtype_bytes = run.kv_bytes});
  BatchTimes t;
  t.context_ns = static_cast<double>(tm.step_latency(batch_step(run.batch, run.input, 0)));
  t.total_ns = t.context_ns;
  const int64_t decodes = run.output - 1;
  auto decode_ns = [&](int64_t k) {
    return static_cast<double>(tm.step_latency(batch_step(run.batch, 1, run.input + k - 1)));
  };
  if (decodes <= 0) return t;
  if (exact || decodes <= kExactDecodeSteps) {
    for (int64_t k = 1; k <= decodes; ++k) t.total_ns += decode_ns(k);
    return t;
  }
  // Trapezoid over kExactDecodeSteps + 1 points from k = 1 to k = decodes.
  const int64_t points = kExactDecodeSteps + 1;
  double prev_k = 1, prev = decode_ns(1);
  double sum = 0;
  for (int64_t i = 1; i < points; ++i) {
    const auto k = static_cast<int64_t>(
        std::llround(1.0 + static_cast<double>(decodes - 1) * static_cast<double>(i) /
                               static_cast<double>(points - 1)));
    const double v = decode_ns(k);
    sum += (v + prev) / 2.0 * (static_cast<double>(k) - prev_k);
    prev_k = static_cast<double>(k);
    prev = v;
  }
  // The trapezoid spans decodes - 1 intervals; the steps are decodes points.
  const double mean_step = sum / static_cast<double>(decodes - 1);
  t.total_ns += mean_step * static_cast<double>(decodes);
  return t;
}

double static_batch_metric(const MeasurementRow& row, const StaticBatchRun& run,
                           const BatchTimes& t) {
  const double seconds = t.total_ns / 1e9;
  const double tokens = static_cast<double>(run.batch) * static_cast<double>(run.output);
  if (row.metric == "output_throughput_per_device")
    return tokens / seconds / static_cast<double>(run.device.tp);
  if (row.metric == "output_throughput")
    return tokens / seconds *
           static_cast<double>(std::max<int64_t>(1, run.device.count / run.device.tp));
  if (row.metric == "latency") return seconds;
  return t.context_ns / 1e6;  // ttft*
}

std::string describe(const StaticBatchRun& run, const BatchTimes& t) {
  return fmt::format(
      "{} tp={}, {}, kv {}: one static batch of {} x ({} in / {} out){}; context step {:.1f} ms, "
      "whole batch {:.3f} s",
      run.device.name, run.device.tp, run.model_name, run.kv_dtype, run.batch, run.input,
      run.output,
      run.engine.empty() ? std::string()
                         : fmt::format(", {} step overhead {:.3g} ms", run.engine,
                                       static_cast<double>(*run.engine_step_overhead) / 1e6),
      t.context_ns / 1e6, t.total_ns / 1e9);
}

DeviceSpec row_device(const MeasurementRow& row, const std::string& configs_dir) {
  const auto column = parse_device_column(row.device);
  const std::string name = column ? column->name : row_device_name(row);
  const std::string path = configs_dir + "/devices/" + name + ".yaml";
  if (!std::filesystem::exists(path))
    throw std::runtime_error(
        fmt::format("no device file configs/devices/{}.yaml for '{}'", name, row.device));
  config::LoadContext ctx;
  DeviceSpec d = load_device_file(path, ctx);
  ctx.diagnostics.throw_if_any();
  return d;
}

}  // namespace

std::optional<Prediction> predict_static_batch_row(const MeasurementRow& row,
                                                   const std::string& configs_dir,
                                                   const DeviceSpec* device) {
  if (row.arrival != "static_batch") return std::nullopt;
  const DeviceSpec d = device != nullptr ? *device : row_device(row, configs_dir);
  const auto run = static_batch_run(row, configs_dir, d);
  if (!run) return std::nullopt;
  const BatchTimes t = price_batch(*run, d, /*exact=*/false);
  return Prediction{static_batch_metric(row, *run, t), describe(*run, t)};
}

double static_batch_exact_value(const MeasurementRow& row, const std::string& configs_dir) {
  const DeviceSpec d = row_device(row, configs_dir);
  const auto run = static_batch_run(row, configs_dir, d);
  if (!run) throw std::invalid_argument("not a static-batch row");
  return static_batch_metric(row, *run, price_batch(*run, d, /*exact=*/true));
}

std::optional<RowPricer> prepare_static_batch_row(const MeasurementRow& row,
                                                  const std::string& configs_dir,
                                                  const DeviceSpec& device) {
  if (row.arrival != "static_batch") return std::nullopt;
  auto run = static_batch_run(row, configs_dir, device);
  if (!run) return std::nullopt;
  const BatchTimes t = price_batch(*run, device, false);
  RowPricer pricer;
  pricer.recorded = static_batch_metric(row, *run, t);
  pricer.scenario = describe(*run, t);
  auto shared = std::make_shared<const StaticBatchRun>(std::move(*run));
  pricer.price = [shared, row](const DeviceSpec& d) {
    return static_batch_metric(row, *shared, price_batch(*shared, d, false));
  };
  return pricer;
}

}  // namespace kvsim
