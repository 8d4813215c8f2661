#pragma once
// `kvsim capacity` (SPEC 3/9): the analytic capacity table per device x model
// x KV dtype x context x tensor parallelism, from the paged pool sizing of
// SPEC 6 (size_paged_pool, the nano-vllm formula of seed 001). Rows of
// kind: htp devices carry Genie buffer bytes per update mode and the address
// space check instead (cli/studies/capacity_genie.hpp).
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "models/model_spec.hpp"
#include "sim/spec/policy_spec.hpp"

namespace kvsim {

struct CapacityQuery {
  std::vector<std::string> devices, models;  // names under configs/ or paths
  std::vector<int64_t> contexts = {1024, 8192, 32768};
  std::vector<std::string> kv_dtypes = {"fp16"};
  std::vector<int64_t> tps = {1};
  // Expert-parallel sizes (vLLM's enable_expert_parallel): whole experts
  // split over ep ranks, ep a multiple of tp. For a model without experts
  // only ep = 1 makes rows.
  std::vector<int64_t> eps = {1};
  // Pipeline sizes (vLLM's pipeline_parallel_size): each stage's tp devices
  // hold its layers; a row's per-device figures are the binding stage's (the
  // one holding the fewest blocks, which sets the pool of every stage).
  std::vector<int64_t> pps = {1};
  int64_t block_size = 128;
  double memory_fraction = 0.9;
  // The activation reserve is derived for these scheduler limits (the
  // defaults of a scenario), as `kvsim run` does.
  int64_t max_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
  // `--policy chunk_lru` (seed 003): the main pool takes main_pool_fraction
  // in place of memory_fraction, and a chunk pool of chunk_pool_fraction of
  // device memory is sized beside it.
  std::string policy = "paged";
  double main_pool_fraction = 0.70;
  double chunk_pool_fraction = 0.15;
  // `--speculative METHOD` (vLLM's speculative_config method: mtp, eagle,
  // eagle3, draft_model with `--draft-model`; ngram holds nothing): the
  // drafter's weights and KV are held beside the model's
  // (models/drafter_shape.hpp), as a speculative run sizes its pool.
  std::string speculative;
  std::string draft_model;
};

// One update mode of an HTP row (cli/studies/capacity_genie.hpp).
struct HtpModeCapacity {
  std::string mode;
  Bytes buffer_bytes = 0;     // genie_buffer_bytes() at ctx_size = context
  bool fits = true;           // weights + buffer_bytes within the address space
  Bytes shortfall_bytes = 0;  // by how much they exceed it
};

struct CapacityRow {
  std::string device, model, kv_dtype;
  int64_t context = 0, tp = 1;
  Bytes weights_bytes = 0;        // per rank
  Bytes kv_bytes_per_token = 0;   // per rank
  Bytes kv_bytes_at_context = 0;  // kv_bytes_per_token * context: one sequence
  Bytes block_bytes = 0;          // per rank
  int64_t num_blocks = 0;
  int64_t capacity_tokens = 0;      // num_blocks * block_size
  int64_t max_concurrent_seqs = 0;  // num_blocks / ceil(context / block_size)
  int64_t max_context_tokens = 0;   // min(capacity_tokens, max_position_embeddings)
  Bytes device_bytes = 0, budget_bytes = 0, activation_reserve_bytes = 0;
  bool fits = true;           // weights + activations + one block within budget
  Bytes shortfall_bytes = 0;  // bytes missing for one block when it does not fit
  std::string note;           // "does not fit: ...", "context exceeds ...", "invalid layout: ..."
  std::string model_arg;      // the model as --model gave it (a name, a file, a folder)
  std::string device_arg;     // the device as --device gave it (a name or a file)
  // kind: htp devices (cli/studies/capacity_genie.hpp gives the paged
  // columns their phone meaning): Genie buffers per update mode.
  bool htp = false;
  Bytes address_space_bytes = 0;
  std::vector<HtpModeCapacity> htp_buffers;  // shift_concat, pointer_shift, smart_mask
  int64_t npu_sessions_needed = 0;           // sessions whose address spaces hold it
  // chunk_lru's dual pool (0 for paged): main = num_blocks * block_bytes.
  Bytes main_pool_bytes = 0, chunk_pool_bytes = 0;
  int64_t chunk_pool_blocks = 0, chunk_pool_tokens = 0;
  int64_t ep = 1;  // expert-parallel ranks (1: none)
  // --speculative: the drafter's part of weights_bytes and kv_bytes_per_token (0 without).
  Bytes drafter_weights_bytes = 0, drafter_kv_bytes_per_token = 0;
  // What a pool per attention type (vLLM's hybrid allocator, llama.cpp's
  // iSWA) would hold: sliding layers keep at most their window. Equal to the
  // single-pool figures on a full-attention model.
  Bytes windowed_kv_bytes_at_context = 0;
  int64_t windowed_max_concurrent_seqs = 0;
  int64_t pp = 1;             // pipeline stages (tp x pp devices)
  int64_t binding_stage = 0;  // the stage the per-device figures are of
  int64_t stage_layers = 0;   // its decoder layers
};

// A device or model resolved by name (configs/<kind>/NAME.yaml, following
// `alias:` files) or path. Throws config::ConfigError naming `flag`.
DeviceSpec resolve_device(const std::string& name, const std::string& configs_dir,
                          const std::string& flag = "--device");
ModelSpec resolve_model(const std::string& name, const std::string& configs_dir,
                        const std::string& flag = "--model");

// A comma-separated list flag (--device A,B; --model X,Y) as given, once or
// repeated: every element non-empty and given once. Throws
// config::ConfigError naming `flag` with `allowed` otherwise.
std::vector<std::string> split_flag_list(const std::string& flag,
                                         const std::vector<std::string>& given,
                                         const std::string& allowed);

// The policies `--policy` takes: those that keep a block pool.
std::vector<std::string> capacity_policy_names();
// The policy of the query's flags (its keys among them), as the rows size it.
std::shared_ptr<const PolicySpec> capacity_policy(const CapacityQuery& q);

// One row per device x model x dtype x tp x ep x pp x context (in that nesting order).
// Throws config::ConfigError for unknown names, dtypes or tensor-parallel
// sizes the model or device cannot take.
std::vector<CapacityRow> capacity_rows(const CapacityQuery& q, const std::string& configs_dir);

nlohmann::ordered_json capacity_row_json(const CapacityRow& r);
std::vector<std::string> capacity_csv_header();
std::vector<std::string> capacity_csv_cells(const CapacityRow& r);
// The tp column of the tables: "4", "4 (ep 8)", "4 x pp 2".
std::string parallel_label(int64_t tp, int64_t ep, int64_t pp);
// The human table (Markdown, also printed).
std::string capacity_markdown(const std::vector<CapacityRow>& rows);

}  // namespace kvsim
