#pragma once
// A cache policy as the scenario tree holds it (SPEC 6, SPEC 12 "the
// scenario is a tree of typed components"): the typed values its own YAML
// gave, and the answers the rest of kvsim asks of it. Nothing outside the
// policy reads its values by name: an engine asks for the contract it runs
// (a block pool for the serving engine, on-device graph buffers for the
// genie engine), the scenario's second pass asks it to check itself against
// the rest of the tree, a study asks for its capacity columns.
//
// Implementations live in sim/policies/, one file per policy, and are
// listed in sim/policies/policy_registry.cpp.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "base/units.hpp"
#include "kernels/chunk_mask.hpp"
#include "kernels/genie_kv_buffer.hpp"
#include "models/model_spec.hpp"
#include "sim/cache/genie_policy.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/pool_sizing.hpp"

namespace kvsim {

struct InstanceSpec;
class LlamaBackendCost;

// The contract an engine runs a policy through: the serving engine's block
// pool or the genie engine's on-device buffers.
enum class EngineContract : uint8_t { block_pool, device_buffers };

// How the serving engine's numerics observer (SPEC 8) follows a policy's
// blocks: through its block tables (paged), through its chunk pool as well
// (chunk_lru, seed 003), or not at all.
enum class ServingNumerics : uint8_t { none, block_tables, chunks };

// One row of `kvsim capacity` (SPEC 9) as a pool's policy answers it: what
// a pool sized by BlockPoolContract::size() holds for sequences of
// `context` tokens.
struct PoolCapacity {
  Bytes kv_bytes_per_token = 0;   // per rank
  Bytes kv_bytes_at_context = 0;  // one sequence of `context` tokens
  Bytes block_bytes = 0;          // 0: no blocks (llama.cpp's cells)
  int64_t num_blocks = 0;
  int64_t capacity_tokens = 0;
  int64_t max_concurrent_seqs = 0;
  bool fits = true;           // weights + activations + the KV a row needs within the budget
  Bytes shortfall_bytes = 0;  // by how much not
  std::string note;           // empty: the study's own notes apply
  // The policy sized the row for the device it runs on itself (llama.cpp's
  // cells on any device); otherwise a phone's row is Genie's buffers.
  bool own_row = false;
  // A second pool beside the main one (chunk_lru, seed 003), 0 without.
  Bytes main_pool_bytes = 0, chunk_pool_bytes = 0;
  int64_t chunk_pool_blocks = 0, chunk_pool_tokens = 0;
};

// What the serving engine (continuous batching over a pool of blocks,
// seed 001) asks of a policy.
class BlockPoolContract {
 public:
  virtual ~BlockPoolContract() = default;
  // Tokens per block (a llama.cpp cell holds one).
  virtual int64_t block_size() const = 0;
  // The pool's geometry for this model on this device: the policy fills
  // what it owns of `in` (block size, its memory fractions, swap space,
  // groups by attention type) and sizes the pool.
  virtual PoolSizing size(const ModelSpec& model, PoolSizingInput in) const = 0;
  // The pool's mechanism for an instance, sized by size().
  virtual std::unique_ptr<KvCachePolicy> make(const InstanceSpec& s,
                                              const PoolSizing& sizing) const = 0;
  // A preempted sequence's blocks go to the host (vLLM V0 swap) rather than
  // being recomputed.
  virtual bool swap_preemption() const { return false; }
  // Its cache keeps blocks by content that tiers below the device can take.
  virtual bool keeps_prefix_blocks() const { return false; }
  // Its cache publishes KV events on instance `s` (a block's hash findable
  // or dropped; KvCachePolicy::set_kv_event_listener), which a router's
  // `events` prefix index needs.
  virtual bool publishes_kv_events(const InstanceSpec& s) const {
    (void)s;
    return false;
  }
  // What it reuses is whole chunks in a pool beside the main one (seed 003),
  // not the leading blocks of a prompt: a hit-rate curve sizes that pool.
  virtual bool reuses_chunks() const { return false; }
  virtual ServingNumerics numerics() const { return ServingNumerics::none; }
  // seed 003: where a missed chunk is computed (numerics of chunks only).
  virtual int64_t virtual_pos_start() const { return 0; }
  // seed 003: what a missed chunk attends; CacheBlend's recompute ratio.
  virtual kernels::ChunkAttention chunk_attention() const {
    return kernels::ChunkAttention::system_prompt;
  }
  virtual double chunk_recompute_ratio() const { return 0; }
  // The block layout's name (seed 000: ksana or atb), for its shape checks.
  virtual std::string layout() const { return "ksana"; }

  // `kvsim capacity` (SPEC 9). The element types `--kv-dtype` takes (the
  // first is the default), the bytes of one of them, why a layout of tp x pp
  // devices cannot hold the pool (empty: it can), what a row holds, and the
  // one paragraph that says how the table was sized.
  virtual std::vector<std::string> capacity_dtypes() const { return kKvDtypeNames; }
  virtual Bytes capacity_dtype_bytes(const std::string& dtype) const {
    return kv_dtype_bytes(dtype);
  }
  virtual std::string capacity_layout_problem(int64_t tp, int64_t pp) const {
    (void)tp;
    (void)pp;
    return "";
  }
  virtual PoolCapacity capacity(const ModelSpec& model, const std::string& dtype, int64_t context,
                                const PoolSizing& sizing) const;
  virtual std::string capacity_sizing_text() const;
};

// What the genie engine (one user's dialog over Genie's fixed on-device
// buffers, seed 002) asks of a policy.
class DeviceBufferContract {
 public:
  virtual ~DeviceBufferContract() = default;
  virtual int64_t ctx_size() const = 0;
  virtual const std::vector<int64_t>& ar_variants() const = 0;  // sorted
  virtual int64_t update_threads() const = 0;
  // Tokens a sliding window keeps (0: none, the cache holds ctx_size - n).
  virtual int64_t window() const { return 0; }
  // The geometry every on-device policy is built from.
  virtual GenieCacheShape shape(const ModelSpec& model, Bytes dtype_bytes) const = 0;
  virtual std::unique_ptr<GenieKvPolicy> make(const ModelSpec& model, Bytes dtype_bytes) const = 0;
  // Cache + output buffers (sim/cache/genie_buffer_sizing.hpp) on one NPU.
  virtual Bytes buffer_bytes(const ModelSpec& model, Bytes dtype_bytes) const = 0;
  // Whose buffer layout they are (a sliding window's is its update mode's).
  virtual std::string_view buffer_layout() const = 0;
  // The update mode whose buffers the numerics kernels drive (seed 002);
  // nullopt when the policy's numerics are not Genie's buffers.
  virtual std::optional<kernels::GenieUpdateMode> numerics_mode() const { return std::nullopt; }
  // Whether an update can keep an arbitrary subset of a pass's entries
  // (dispatchUpdate's `selected` keep-mask, seed 002), as tree drafts need.
  virtual bool keeps_selected() const { return false; }
};

class PolicySpec {
 public:
  virtual ~PolicySpec() = default;
  // The registry name, the value of kv_cache.policy.
  virtual std::string_view name() const = 0;
  // How runs and reports name it ("sliding_window(pointer_shift)").
  virtual std::string display_name() const { return std::string(name()); }
  // The contracts it implements; nullptr when it cannot run under that
  // kind of engine (the engine says so, exit 2).
  virtual const BlockPoolContract* block_pool() const { return nullptr; }
  virtual const DeviceBufferContract* device_buffers() const { return nullptr; }
  // Its checks against the rest of the scenario, run in the second pass
  // for the policy that runs, under the contract its engine takes
  // (DESIGN practice 5).
  virtual void check(const InstanceSpec& s, EngineContract engine, config::LoadContext& ctx) const {
    (void)s;
    (void)engine;
    (void)ctx;
  }
  // What the policy's runtime leaves to the device's host CPU each step
  // (llama.cpp's backends and n_gpu_layers, sim/cache/llama_backend_cost.hpp),
  // for either engine to add to its steps; nullptr: the device runs them whole.
  virtual std::unique_ptr<LlamaBackendCost> host_work(const InstanceSpec& s) const;
  // The serving engine's step as the policy's runtime runs it: at most
  // step_token_cap() tokens a step (0: the scheduler's max_batched_tokens
  // alone), computed in micro-batches of micro_batch_tokens() tokens priced
  // one after another (0: one pass). llama.cpp's n_batch and n_ubatch.
  virtual int64_t step_token_cap() const { return 0; }
  virtual int64_t micro_batch_tokens() const { return 0; }

  // The key path one of its keys was read at (`kv_cache.window`, or
  // `kv_cache.sliding_window.window` from its own map), for errors; the
  // flat spelling for a key left at its default.
  std::string key_path(std::string_view key) const;
  // True when the scenario wrote the key (flat or in the policy's map).
  bool given(std::string_view key) const { return key_paths_.count(key) > 0; }
  // Every value it was made from, by key, as read (provenance, tests): its
  // own code keeps them typed.
  const config::ParamValues& values() const { return values_; }
  // What the policy's file reads is kept here by its constructor.
  void set_read(config::ParamValues values, std::map<std::string, std::string, std::less<>> paths) {
    values_ = std::move(values);
    key_paths_ = std::move(paths);
  }

 private:
  config::ParamValues values_;
  std::map<std::string, std::string, std::less<>> key_paths_;
};

}  // namespace kvsim
