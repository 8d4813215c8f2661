#pragma once
// `kvsim capacity` (SPEC 3/9): the analytic capacity table per device x model
// x KV dtype x context x tensor parallelism, from the paged pool sizing of
// SPEC 6 (size_paged_pool, the nano-vllm formula of seed 001). On-device
// (HTP) buffer bytes per update mode are issue 4's: no HTP device exists yet,
// so those columns are not emitted.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "devices/device_spec.hpp"
#include "models/model_spec.hpp"

namespace kvsim {

struct CapacityQuery {
  std::vector<std::string> devices, models;  // names under configs/ or paths
  std::vector<int64_t> contexts = {1024, 8192, 32768};
  std::vector<std::string> kv_dtypes = {"fp16"};
  std::vector<int64_t> tps = {1};
  int64_t block_size = 128;
  double memory_fraction = 0.9;
  // The activation reserve is derived for these scheduler limits (the
  // defaults of a scenario), as `kvsim run` does.
  int64_t max_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
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
  std::string note;           // "does not fit: ...", "context exceeds ..."
};

// A device or model resolved by name (configs/<kind>/NAME.yaml, following
// `alias:` files) or path. Throws config::ConfigError naming `flag`.
DeviceSpec resolve_device(const std::string& name, const std::string& configs_dir,
                          const std::string& flag = "--device");
ModelSpec resolve_model(const std::string& name, const std::string& configs_dir,
                        const std::string& flag = "--model");

// One row per device x model x dtype x tp x context (in that nesting order).
// Throws config::ConfigError for unknown names, dtypes or tensor-parallel
// sizes the model or device cannot take.
std::vector<CapacityRow> capacity_rows(const CapacityQuery& q, const std::string& configs_dir);

nlohmann::ordered_json capacity_row_json(const CapacityRow& r);
std::vector<std::string> capacity_csv_header();
std::vector<std::string> capacity_csv_cells(const CapacityRow& r);
// The human table (Markdown, also printed).
std::string capacity_markdown(const std::vector<CapacityRow>& rows);

}  // namespace kvsim
