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
#include <bit>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <memory>
#include <regex>
#include <stdexcept>
#include <unordered_map>

#include "cli/studies/calibration.hpp"
#include "devices/device_family.hpp"
#include "devices/timing_model.hpp"
#include "models/model_resolve.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/engine.hpp"

namespace kvsim {
namespace {

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
  // The row's engine's per-step host work, in place of the device file's
  // (cli/studies/calibration_engines.cpp); none: the device file's.
  std::optional<EngineStepOverhead> engine;
};

// A device no graph executor runs (Ascend parts, GPUs): its rows are priced
// by replaying the serving engine; a graph executor's (the Hexagon NPU's)
// by its passes (calibration_catalog.cpp).
bool served_device(const DeviceSpec& d) {
  return device_family_of(d).graph_executor(d) == nullptr;
}

bool served_device(const std::string& name, const std::string& configs_dir) {
  const std::string path = configs_dir + "/devices/" + name + ".yaml";
  if (!std::filesystem::exists(path)) return false;
  config::LoadContext ctx;
  const DeviceSpec d = load_device_file(path, ctx);
  return ctx.diagnostics.empty() && served_device(d);
}

std::optional<AscendRowScenario> ascend_row_scenario(const MeasurementRow& row,
                                                     const std::string& configs_dir,
                                                     const DeviceSpec* device_spec) {
  const auto device = parse_device_column(row.device);
  if (!device || row.arrival == "static_batch") return std::nullopt;
  if (device_spec != nullptr ? !served_device(*device_spec)
                             : !served_device(device->name, configs_dir))
    return std::nullopt;
  const bool throughput =
      row.metric == "output_throughput" || row.metric == "output_throughput_per_device";
  const bool request_rate = row.metric == "request_throughput";
  const bool decode = row.metric == "decode_rate";
  const bool ttft = row.metric.rfind("ttft", 0) == 0;
  if (!throughput && !request_rate && !decode && !ttft) return std::nullopt;

  namespace fs = std::filesystem;
  if (!fs::exists(fs::path(configs_dir) / "devices" / (device->name + ".yaml")))
    throw std::runtime_error(
        fmt::format("no device file configs/devices/{}.yaml for '{}'", device->name, row.device));
  // The model as users name it, in the row's weights format (models/model_resolve.hpp).
  const std::string model =
      row.weights.empty() ? row.model : row.model + "-" + lower_ascii(row.weights);
  if (find_model(model, configs_dir).path.empty()) {
    (void)load_model_by_name(model, "", configs_dir);  // throws, naming the files looked for
  }
  const LengthDistribution* lengths = row.length_distribution.get();
  if (lengths == nullptr && (!row.input_tokens || !row.output_tokens))
    throw std::runtime_error("the row gives no input_tokens/output_tokens (nor lengths) to run");
  // The lengths a request draws: the row's two cells, or its dataset's
  // histograms (calibration_lengths.cpp), each side on its own stream.
  const std::string input_yaml =
      lengths != nullptr ? empirical_yaml(lengths->input) : std::to_string(*row.input_tokens);
  const std::string output_yaml =
      lengths != nullptr ? empirical_yaml(lengths->output) : std::to_string(*row.output_tokens);
  const int64_t batch = row.batch.value_or(1);
  // Every request queued at the start (trtllm-bench throughput, vLLM's
  // benchmark_throughput): `batch` requests, one per client.
  const bool all_at_once = row.arrival == "all_at_once";
  // The prompts the benchmark sends when the source states them
  // (num_prompts), else a few waves per client.
  const int64_t requests = row.requests  ? *row.requests
                           : all_at_once ? batch
                                         : std::max<int64_t>(batch * kWavesPerClient, 4);
  const std::string kv_dtype = row.kv_dtype.empty() ? "fp16" : lower_ascii(row.kv_dtype);

  // vLLM's serving defaults: 256 sequences, chunked prefill of 8192 tokens.
  // Requests queued at once run as many at a time as the cache holds, up
  // to trtllm-bench's cap of 4096 (tensorrt_llm/bench/build/tuning.py,
  // finetune_setting: min(kv_cache_max_requests, 4096)); every running
  // sequence must fit one step's tokens, as vLLM requires.
  // A row that states the engine's own limits (a source's --max-num-seqs
  // and --max-num-batched-tokens, per data-parallel rank) runs with them.
  const int64_t seqs = row.max_num_seqs.value_or(all_at_once ? std::min<int64_t>(batch, 4096)
                                                             : std::max<int64_t>(256, batch));
  const int64_t step_tokens = row.max_batched_tokens.value_or(std::max<int64_t>(8192, seqs));
  // An engine that sizes its KV cache from the memory left after the
  // weights: the same bytes as a fraction of the whole device.
  std::string memory_fraction;
  const std::optional<EngineStepOverhead> engine =
      find_engine_step_overhead(row.software, configs_dir);
  if (row.memory_fraction) {
    // The run's own share of the device (vLLM's --gpu-memory-utilization).
    memory_fraction = fmt::format(", memory_fraction: {}", *row.memory_fraction);
  } else if (engine && engine->kv_cache_free_fraction) {
    const DeviceSpec on = device_spec != nullptr ? *device_spec : [&] {
      config::LoadContext ctx;
      return load_device_file(configs_dir + "/devices/" + device->name + ".yaml", ctx);
    }();
    const double mem = static_cast<double>(on.memory_bytes);
    const double weights = static_cast<double>(
        load_model_by_name(model, "", configs_dir).weight_bytes_per_rank(device->tp));
    if (mem > weights) {
      const double f = (weights + *engine->kv_cache_free_fraction * (mem - weights)) / mem;
      memory_fraction = fmt::format(", memory_fraction: {:.4f}", std::min(f, 0.99));
    }
  }
  // The row's layout: an instance is tensor x pipeline devices, its MoE
  // layers' experts over `expert` ranks. `data` > 1 replicas of attention
  // (vLLM's --data-parallel-size) run as the scenarios run them
  // (parallel.data, sim/serve/data_parallel_group.hpp): one engine per
  // rank with its own scheduler and KV pool, the arrivals split evenly over
  // them, a MoE model's ranks stepping together through the expert group's
  // all-to-all (data x tensor ranks, over the network link where they span
  // nodes). The device column then holds the whole group, data x tensor x
  // pipeline devices, and `batch` is the benchmark's clients of the group.
  const int64_t pp = row.pipeline.value_or(1);
  const int64_t dp = row.data.value_or(1);
  if (row.data && device->count != dp * device->tp * pp)
    throw std::runtime_error(
        fmt::format("data {} x tensor {} x pipeline {} is {} devices, but the device column has {}",
                    dp, device->tp, pp, dp * device->tp * pp, device->count));
  std::string parallel = fmt::format("tensor: {}", device->tp);
  if (dp > 1) parallel += fmt::format(", data: {}", dp);
  if (row.pipeline) parallel += fmt::format(", pipeline: {}", *row.pipeline);
  if (row.expert) parallel += fmt::format(", expert: {}", *row.expert);
  // The row's speculative_config, with the acceptance it publishes.
  const std::string speculative =
      row.speculative() ? fmt::format(
                              "speculative: {{method: {}, num_speculative_tokens: {}, "
                              "acceptance: {{rate: {}}}}}\n",
                              row.speculative_method, *row.num_speculative_tokens, *row.acceptance)
                        : std::string();
  const std::string yaml = fmt::format(
      "name: calibrate-{id}\nseed: 42\ndevice: {device}\nmodel: {model}\n"
      "parallel: {{{parallel}}}\n{speculative}"
      "kv_cache: {{policy: paged, dtype: {kv}, block_size: 128{caching}{fraction}}}\n"
      "scheduler: {{max_num_seqs: {seqs}, max_batched_tokens: {tokens}}}\n"
      "workload:\n  kind: fixed\n  requests: {requests}\n"
      "  arrival: {{process: closed, concurrency: {batch}}}\n"
      "  input_tokens: {input}\n  output_tokens: {output}\n{prefix}",
      fmt::arg("id", row.id), fmt::arg("device", device->name), fmt::arg("model", model),
      fmt::arg("parallel", parallel), fmt::arg("speculative", speculative),
      fmt::arg("kv", kv_dtype), fmt::arg("caching", row.prefix_hit ? ", prefix_caching: true" : ""),
      fmt::arg("fraction", memory_fraction), fmt::arg("seqs", seqs),
      fmt::arg("tokens", step_tokens), fmt::arg("requests", requests), fmt::arg("batch", batch),
      fmt::arg("input", input_yaml), fmt::arg("output", output_yaml),
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
  out.engine = engine;
  if (out.engine) out.spec.device.step_overhead = out.engine->step_overhead;
  if (out.engine && out.engine->reserves_whole_sequence) {
    // Reserving each request's whole sequence at admission
    // (GUARANTEED_NO_EVICT) runs at most as many at once as the pool holds
    // whole sequences, and none is preempted.
    const PoolSizing sizing = out.spec.pool_sizing();
    const int64_t block = out.spec.policy().block_pool()->block_size();
    // A dataset's requests differ in length: its mean sequence stands for
    // each (the pool holds about that many whole sequences at once).
    const double tokens = lengths != nullptr
                              ? lengths->mean_input + lengths->mean_output
                              : static_cast<double>(*row.input_tokens + *row.output_tokens);
    const auto per_request = static_cast<int64_t>(std::ceil(tokens / static_cast<double>(block)));
    const int64_t fit = std::max<int64_t>(1, sizing.num_blocks / std::max<int64_t>(1, per_request));
    out.spec.scheduler.max_num_seqs = std::min(out.spec.scheduler.max_num_seqs, fit);
  }
  return out;
}

Prediction run_ascend_row(const MeasurementRow& row, const AscendRowScenario& run,
                          std::vector<StepWork>* steps = nullptr) {
  // Data-parallel ranks run as a scenario's do (run_scenario builds their
  // group); one instance alone runs its engine (and records its steps).
  const RunMetrics m = [&] {
    if (run.spec.dp > 1) return run_scenario(run.spec, nullptr).metrics;
    ServingEngine engine(run.spec, nullptr);
    if (steps != nullptr)
      engine.set_step_recorder([steps](const StepWork& w) { steps->push_back(w); });
    return engine.run();
  }();
  if (m.requests.completed != run.requests)
    throw std::runtime_error(fmt::format("only {} of {} requests completed (rejected {})",
                                         m.requests.completed, run.requests, m.requests.rejected));
  Prediction p;
  // Instances of tp x pp devices each serve `batch` clients: a system's
  // throughput is theirs times the instances (count / (tp x pp)). A
  // data-parallel group is one instance of dp x tp x pp devices whose run
  // is the whole group's.
  const int64_t per_instance = run.device.tp * run.spec.pp * std::max<int64_t>(run.spec.dp, 1);
  const double instances =
      static_cast<double>(std::max<int64_t>(1, run.device.count / per_instance));
  if (row.metric == "output_throughput") p.value = m.throughput.output_tokens_per_s * instances;
  if (row.metric == "output_throughput_per_device")
    p.value = m.throughput.output_tokens_per_s / static_cast<double>(per_instance);
  if (row.metric == "request_throughput") p.value = m.throughput.requests_per_s;
  if (row.metric == "decode_rate")
    p.value = m.latency_ms.tpot.mean > 0 ? 1000.0 / m.latency_ms.tpot.mean : 0.0;
  if (row.metric.rfind("ttft", 0) == 0) p.value = m.latency_ms.ttft.mean;
  std::string layout = fmt::format("tp={}", run.device.tp);
  if (run.spec.pp > 1) layout += fmt::format(" pp={}", run.spec.pp);
  if (row.expert) layout += fmt::format(" ep={}", *row.expert);
  if (row.data) layout += fmt::format(" dp={}", *row.data);
  // The engine's own limits, when the row states them.
  if (row.max_num_seqs) layout += fmt::format(" max_num_seqs={}", *row.max_num_seqs);
  if (row.max_batched_tokens)
    layout += fmt::format(" max_batched_tokens={}", *row.max_batched_tokens);
  if (row.memory_fraction) layout += fmt::format(" memory_fraction={}", *row.memory_fraction);
  if (row.speculative())
    layout += fmt::format(", {} K={} acceptance {}", row.speculative_method,
                          *row.num_speculative_tokens, *row.acceptance);
  const std::string shape =
      row.length_distribution
          ? fmt::format("lengths of {} (mean {:.1f} in / {:.1f} out)", row.lengths,
                        row.length_distribution->mean_input, row.length_distribution->mean_output)
          : fmt::format("{} in / {} out", *row.input_tokens, *row.output_tokens);
  // The source's server settings, when the row gives them.
  std::string server;
  if (row.max_num_seqs || row.max_batched_tokens)
    server = fmt::format(", max_num_seqs {} and max_batched_tokens {} per rank",
                         run.spec.scheduler.max_num_seqs, run.spec.scheduler.max_batched_tokens);
  p.scenario = fmt::format(
      "{} x{} {}, {}, kv {}: closed loop of {} clients, {} requests of {}{} "
      "(TTFT p50 {:.0f} ms, TPOT p50 {:.1f} ms)",
      run.device.name, run.device.count, layout, run.model, run.kv_dtype, run.batch, run.requests,
      shape, server, m.latency_ms.ttft.p50, m.latency_ms.tpot.p50);
  return p;
}

// A recorded run's steps, each distinct one once with how often it came,
// in the order each first came. All requests queued at once and of one
// length run in waves that repeat the same batches, so a run of thousands of
// steps holds far fewer distinct ones.
struct DistinctStep {
  StepWork work;
  int64_t count = 0;
};

// Every field of a step, bit for bit: equal keys, equal steps.
std::string step_key(const StepWork& w) {
  std::string key;
  auto add = [&key](uint64_t bits) {
    for (int b = 0; b < 8; ++b) key += static_cast<char>((bits >> (8 * b)) & 0xff);
  };
  auto add_double = [&add](double v) { add(std::bit_cast<uint64_t>(v)); };
  add(static_cast<uint64_t>(w.totals_given) | static_cast<uint64_t>(w.fixed_shape) << 1 |
      static_cast<uint64_t>(w.sampled_logits_only) << 2);
  const StepTotals& t = w.totals;
  for (const double v : {t.tokens, t.samplers, t.attended_pairs, t.kv_tokens_read, t.context_read,
                         t.prefill_pairs, t.prefill_kv_tokens})
    add_double(v);
  add(static_cast<uint64_t>(w.swap_in_bytes));
  add(static_cast<uint64_t>(w.swap_out_bytes));
  add(static_cast<uint64_t>(w.kv_copy_bytes));
  add(static_cast<uint64_t>(w.rerope_tokens));
  add(w.seqs.size());
  for (const SeqWork& q : w.seqs) {
    add(static_cast<uint64_t>(q.query_tokens));
    add(static_cast<uint64_t>(q.context_before));
    add(static_cast<uint64_t>(q.samples));
  }
  return key;
}
static_assert(sizeof(StepTotals) == 7 * sizeof(double), "StepTotals changed: add it to step_key()");

std::vector<DistinctStep> distinct_steps(const std::vector<StepWork>& steps) {
  std::vector<DistinctStep> out;
  std::unordered_map<std::string, size_t> index;
  for (const StepWork& w : steps) {
    const auto [it, fresh] = index.emplace(step_key(w), out.size());
    if (fresh) out.push_back({w, 0});
    ++out[it->second].count;
  }
  return out;
}

}  // namespace

std::optional<Prediction> predict_ascend_row(const MeasurementRow& row,
                                             const std::string& configs_dir,
                                             const DeviceSpec* device_spec) {
  const std::optional<AscendRowScenario> run = ascend_row_scenario(row, configs_dir, device_spec);
  if (!run) return std::nullopt;
  return run_ascend_row(row, *run);
}

// A closed loop's batches depend on its timing (it refills as requests
// finish), so the engine runs again at every price; only reading the
// scenario is done once. Every request queued at the start is another
// matter: the scheduler's choices depend on the queue and the cache, never
// on the clock, so the run's steps are recorded once and a price re-prices
// them (prepare_row holds the result to a full run).
std::optional<RowPricer> prepare_ascend_row(const MeasurementRow& row,
                                            const std::string& configs_dir,
                                            const DeviceSpec& device) {
  std::optional<AscendRowScenario> run = ascend_row_scenario(row, configs_dir, &device);
  if (!run) return std::nullopt;
  const bool replayable =
      row.arrival == "all_at_once" && !row.prefix_hit && run->spec.pp == 1 && run->spec.dp == 1 &&
      !row.speculative() &&  // the drafter's passes are priced beside the steps
      (row.metric == "output_throughput" || row.metric == "output_throughput_per_device");
  auto steps = std::make_shared<std::vector<StepWork>>();
  const Prediction first = run_ascend_row(row, *run, replayable ? steps.get() : nullptr);
  RowPricer pricer;
  pricer.scenario = first.scenario;
  pricer.recorded = first.value;
  auto shared = std::make_shared<const AscendRowScenario>(std::move(*run));
  if (replayable) {
    // The recorded value is tokens / time at the device it ran on: the
    // tokens are what that time produced, whatever the device.
    const ScenarioSpec& spec = shared->spec;
    // Its step graph is every price's (built once: only the efficiencies move).
    auto structure = std::make_shared<const TimingModel>(
        spec.device, spec.model,
        TimingModel::Params{.tp = spec.tp,
                            .kv_dtype_bytes = spec.kv.dtype_bytes(),
                            .ep = spec.ep,
                            .expert_skew = spec.expert_skew});
    double first_ns = 0;
    for (const StepWork& w : *steps)
      first_ns += static_cast<double>(std::max<TimeNs>(structure->step_latency(w), 1));
    const double value_times_ns = first.value * first_ns;
    auto distinct = std::make_shared<const std::vector<DistinctStep>>(distinct_steps(*steps));
    // Reads only the shared, const recording; its timing model is its own.
    pricer.thread_safe = true;
    pricer.price = [shared, steps, distinct, structure, value_times_ns](const DeviceSpec& d) {
      DeviceSpec dd = d;
      if (shared->engine) dd.step_overhead = shared->engine->step_overhead;
      const TimingModel tm(*structure, dd);
      // Each step's time is whole nanoseconds, so the run's, summed in
      // integers, is the sum of every step in turn (a double adds whole
      // numbers exactly while below 2^53).
      int64_t total = 0;
      bool exact = true;
      for (const DistinctStep& s : *distinct) {
        int64_t t = 0;
        exact =
            exact &&
            !__builtin_mul_overflow(std::max<TimeNs>(tm.step_latency(s.work), 1), s.count, &t) &&
            !__builtin_add_overflow(total, t, &total) && total < (int64_t{1} << 53);
        if (!exact) break;
      }
      double ns = static_cast<double>(total);
      if (!exact) {
        ns = 0;
        for (const StepWork& w : *steps)
          ns += static_cast<double>(std::max<TimeNs>(tm.step_latency(w), 1));
      }
      return value_times_ns / ns;
    };
    return pricer;
  }
  pricer.price = [shared, row](const DeviceSpec& d) {
    AscendRowScenario at = *shared;
    at.spec.device = d;
    if (at.engine) at.spec.device.step_overhead = at.engine->step_overhead;
    return run_ascend_row(row, at).value;
  };
  return pricer;
}

}  // namespace kvsim
