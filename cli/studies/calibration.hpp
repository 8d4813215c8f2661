#pragma once
// Holding kvsim against published or user measurements:
// rows of a CSV in the format of shared/data/calibration/published_measurements.csv
//   id,device,model,weights,kv_dtype,context,batch,input_tokens,output_tokens,
//   metric,value,unit,software,source
// (and optional prefix_hit, arrival, pipeline, expert, data,
// speculative_method, num_speculative_tokens, acceptance, lengths, max_num_seqs,
// max_batched_tokens, memory_fraction, requests) each predicted by running a
// scenario built from the row on the device kind's predictor, then compared with the published
// value.
//
// CONTRACT: cli/studies/calibration.cpp (reader, dispatch, report),
// cli/studies/calibration_ascend.cpp, cli/studies/calibration_htp.cpp
//.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devices/device_spec.hpp"

namespace kvsim {

// A row's prompt and output lengths as histograms, from the file its
// `lengths` column names (cli/studies/calibration_lengths.cpp): the
// benchmark ran a dataset of many lengths, stated with its source.
struct LengthDistribution {
  std::string path, source;
  // (tokens, relative count), ascending by tokens, counts divided by their
  // common divisor.
  std::vector<std::pair<int64_t, int64_t>> input, output;
  double mean_input = 0, mean_output = 0;
};
// Throws config::ConfigError (exit 2) at the file's line and column of a
// malformed row, or when it states no source.
std::shared_ptr<const LengthDistribution> read_length_distribution(const std::string& path);
// The histogram as a scenario's empirical distribution (YAML flow map).
std::string empirical_yaml(const std::vector<std::pair<int64_t, int64_t>>& bins);

struct MeasurementRow {
  std::string id, device, model, weights, kv_dtype;
  std::optional<int64_t> context, batch, input_tokens, output_tokens;
  // decode_rate, ttft_one_ar128_pass, ttft_1024_prompt, output_throughput,
  // llamacpp_pp_rate, llamacpp_tg_rate, ...
  std::string metric;
  double value = 0;
  std::string unit, software, source;
  // Optional column: the fraction of every prompt that is a prefix shared by
  // all requests (vllm-ascend's prefix-cache benchmark, prefix_ratio).
  std::optional<double> prefix_hit;
  // Optional column: how the benchmark loads the engine. "closed" (empty):
  // `batch` clients each sending its next request when the last one ends
  // (vllm bench serve --max-concurrency); "static_batch": one batch of
  // `batch` requests run to completion together (TensorRT-LLM's
  // gptSessionBenchmark, vLLM's benchmark_latency); "all_at_once": `batch`
  // requests all queued at the start and served by continuous batching
  // (trtllm-bench throughput, vLLM's benchmark_throughput).
  std::string arrival;
  // Optional columns of the deployment's layout beyond the device column's
  // tensor parallelism: `pipeline` stages, `expert` parallel ranks of the
  // MoE layers, `data` parallel attention replicas (vLLM's
  // --pipeline-parallel-size, --enable-expert-parallel over data x tensor
  // ranks, --data-parallel-size). Unset: 1, no expert parallelism, 1.
  std::optional<int64_t> pipeline, expert, data;
  // Optional columns of the server's and the benchmark's settings as the
  // source states them, where they are not the benchmark tool's defaults:
  // `max_num_seqs` sequences running at once (vLLM's --max-num-seqs, per
  // data-parallel rank; the MLPerf harnesses' gpu_batch_size),
  // `max_batched_tokens` tokens a step (--max-num-batched-tokens,
  // max_num_tokens), `memory_fraction` of the device the engine takes for
  // weights and KV (--gpu-memory-utilization), and `requests`, the prompts
  // the benchmark sends (aisbench num_prompts, vllm bench serve
  // --num-prompts). Unset: the rules in cli/studies/calibration_ascend.cpp
  // and four requests per client.
  std::optional<int64_t> max_num_seqs, max_batched_tokens, requests;
  std::optional<double> memory_fraction;
  // Optional columns of speculative decoding as the row ran it (vLLM's
  // speculative_config): `speculative_method` (mtp, eagle, eagle3, ngram),
  // `num_speculative_tokens`, and `acceptance`, the constant per-draft
  // acceptance rate the source publishes or implies; all three or none.
  std::string speculative_method;
  std::optional<int64_t> num_speculative_tokens;
  std::optional<double> acceptance;
  // Optional column `lengths`: a file of input and output length
  // histograms (relative to the CSV's folder) in place of input_tokens and
  // output_tokens; the row runs requests drawn from them.
  std::string lengths;
  std::shared_ptr<const LengthDistribution> length_distribution;
  bool speculative() const { return !speculative_method.empty(); }
  // Any of the columns above set: a predictor that cannot run them must
  // not handle the row (it would price another deployment).
  bool has_layout_or_speculation() const {
    return pipeline || expert || data || speculative() || max_num_seqs || max_batched_tokens ||
           memory_fraction || requests;
  }
  std::string file;  // the CSV the row came from
  int64_t line = 0;  // 1-based line in the CSV, for messages
};

// Reads the CSV; throws config::ConfigError (exit code 2) naming the file,
// line and column of a malformed row (see reports/input_error.hpp).
std::vector<MeasurementRow> read_measurements(const std::string& path);
// The CSV's columns as help and errors list them: "needed: id,...; optional: ...".
std::string calibration_columns_text();
// Several CSVs in turn; a row id used by two files is an error at its second.
std::vector<MeasurementRow> read_measurements(const std::vector<std::string>& paths);

struct Prediction {
  double value = 0;      // in the row's unit
  std::string scenario;  // what was run (device, model, shape), one line
};

// nullopt when the predictor does not handle the row (another device kind, a
// metric it cannot produce); throws std::runtime_error when it should but
// cannot (a model file missing), with the reason.
// `device`, when given, replaces the row's device file (a fit varies its
// parameters); it must be the file the row names, as loaded.
std::optional<Prediction> predict_ascend_row(const MeasurementRow& row,
                                             const std::string& configs_dir,
                                             const DeviceSpec* device = nullptr);
std::optional<Prediction> predict_htp_row(const MeasurementRow& row, const std::string& configs_dir,
                                          const DeviceSpec* device = nullptr);
// A llama-bench row (metric llamacpp_pp_rate or llamacpp_tg_rate, t/s):
// its test run by the llama_bench workload through llama_cells
// (cli/studies/calibration_llamacpp.cpp).
std::optional<Prediction> predict_llamacpp_row(const MeasurementRow& row,
                                               const std::string& configs_dir,
                                               const DeviceSpec* device = nullptr);
// A static-batch row on an accelerator (cli/studies/calibration_static_batch.cpp).
std::optional<Prediction> predict_static_batch_row(const MeasurementRow& row,
                                                   const std::string& configs_dir,
                                                   const DeviceSpec* device = nullptr);
// The same with every decode step priced (tests hold the sampled sum to it).
double static_batch_exact_value(const MeasurementRow& row, const std::string& configs_dir);
// predict_llamacpp_row, predict_static_batch_row, predict_ascend_row, then
// predict_htp_row.
std::optional<Prediction> predict_row(const MeasurementRow& row, const std::string& configs_dir,
                                      const DeviceSpec* device = nullptr);

// A row read once and priced many times, on devices that differ from the
// one it was prepared on only in the timing parameters a fit varies
// (cli/studies/calibration_fit.hpp): a fit prices every row at hundreds of
// parameter values. `price` returns the row's metric in its unit.
struct RowPricer {
  std::function<double(const DeviceSpec& device)> price;
  double recorded = 0;   // the prediction on the device it was prepared on
  std::string scenario;  // what was run, one line
  // `price` touches nothing but what it owns (a fit may then price rows on
  // several threads at once); false: its calls are made one at a time.
  bool thread_safe = false;
};
// HTP: the one-turn dialog runs once and its passes are recorded; a price
// re-prices those passes only (HtpTimingModel), microseconds instead of a run.
// nullopt when predict_htp_row does not handle the row or its passes are not
// a fixed list (speculative drafts). Throws as predict_htp_row does.
std::optional<RowPricer> prepare_htp_row(const MeasurementRow& row, const std::string& configs_dir,
                                         const DeviceSpec& device);
// Ascend: the scenario is read once; every price runs the serving engine.
std::optional<RowPricer> prepare_ascend_row(const MeasurementRow& row,
                                            const std::string& configs_dir,
                                            const DeviceSpec& device);
// A static batch: every price re-prices its steps (no serving run).
std::optional<RowPricer> prepare_static_batch_row(const MeasurementRow& row,
                                                  const std::string& configs_dir,
                                                  const DeviceSpec& device);

// The device column: `NAME [xN] [(tp=T)]` ("h100-sxm5 x8 (tp=2)": 8 GPUs
// as 4 instances of tensor parallelism 2); tp defaults to N.
struct DeviceColumn {
  std::string name;
  int64_t count = 1;
  int64_t tp = 1;
};
std::optional<DeviceColumn> parse_device_column(const std::string& text);
std::string lower_ascii(std::string s);

// A serving engine's own per-step host work (scheduling, input preparation,
// output processing), by the software the row names: the first entry of
// configs/calibration/engine_step_overheads.csv whose `software` the row's
// software column starts with (case-insensitive). Rows of an engine the
// table does not list keep the device file's step_overhead.
struct EngineStepOverhead {
  std::string software;
  TimeNs step_overhead = 0;
  // The engine's KV cache rule, when it has one: this fraction of the
  // memory left after the weights (trtllm-bench's
  // --kv_cache_free_gpu_mem_fraction); unset: the scenario's memory_fraction.
  std::optional<double> kv_cache_free_fraction;
  // The engine's admission rule (column `admission`): "whole_sequence"
  // admits a request only when the KV blocks for its prompt and all its
  // output tokens are free beside those reserved for the running ones
  // (TensorRT-LLM's default capacity scheduler, GUARANTEED_NO_EVICT), so
  // nothing is ever preempted; empty: the scenario's scheduler (vLLM's:
  // admit on the blocks a request holds now, preempt when the cache runs
  // out).
  bool reserves_whole_sequence = false;
  std::string source;
};
std::optional<EngineStepOverhead> find_engine_step_overhead(const std::string& software,
                                                            const std::string& configs_dir);

// The device file a row names: the device column's first word, lower case
// ("ascend-910b3 x4 (tp=4)" -> "ascend-910b3").
std::string row_device_name(const MeasurementRow& row);

// One row of a calibration report (`kvsim calibrate`).
struct CalibrationEntry {
  MeasurementRow row;
  std::optional<Prediction> prediction;
  std::string not_predicted;  // why, when prediction is empty
  // (predicted - published) / published * 100, when predicted.
  std::optional<double> error_pct;
};

struct CalibrationReport {
  std::string measurements;  // the CSV read
  std::vector<CalibrationEntry> entries;
  int64_t predicted = 0;
  double median_abs_error_pct = 0;  // over predicted rows
  double max_abs_error_pct = 0;
};

// Predicts every row: predict_ascend_row, then predict_htp_row; a row
// neither handles is "not predicted" with the reason, as is one whose
// predictor threw (the message is the reason).
CalibrationReport calibrate_rows(const std::vector<MeasurementRow>& rows,
                                 const std::string& configs_dir, const std::string& measurements);

std::string calibration_table_text(const CalibrationReport& report);  // the printed table
// Rows as left-aligned columns two spaces apart, one line each (the header
// first), trailing blanks trimmed: the terminal form of every calibrate table.
std::string aligned_columns_text(const std::vector<std::string>& header,
                                 const std::vector<std::vector<std::string>>& rows);
std::string calibration_csv(const CalibrationReport& report);
std::string calibration_json_text(const CalibrationReport& report);
std::string calibration_markdown(const CalibrationReport& report);
// calibration.csv, .json and .md into `out`, which appears whole or not at all.
void write_calibration(const CalibrationReport& report, const std::string& out, bool force = false);

}  // namespace kvsim
