#pragma once
// The interface of Genie's on-device KV update modes (seed 002, SPEC 6):
// fixed per-layer buffers of ctx_size columns, the key cache transposed and
// left-padded, the value cache per head, AR-n variants with a cache dim of
// ctx_size - n, and one update dispatched after every pass (dispatchUpdate:
// clear cache, set variant, rewind, update and set).
//
// Plan, then apply (as KvCachePolicy): plan_update() is const and prices the
// update in bytes and pointer updates from the layout's closed form;
// apply_update() changes the state. The dialog engine turns the plan into
// time (CPU copy threads, graph switch); numerics drives the real buffers of
// kernels/genie_kv_buffer with the same plans.
//
// CONTRACT between the policies (shift_concat, pointer_shift, smart_mask,
// sliding_window, llama_cells) and the dialog engine. Implementations: one
// file each under sim/cache/, built by their specs in sim/policies/.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/units.hpp"
#include "models/model_spec.hpp"

namespace kvsim {

struct RunMetrics;

// seed 002 dispatchUpdate: what the requested state means for the cache.
enum class KvDispatch : uint8_t {
  clear_cache,     // requested n_past == 0
  set_variant,     // same n_past, another AR-n variant (realignment only)
  rewind,          // n_past below the current one (rejected speculative tokens)
  update_and_set,  // forward: copy the pass's new entries in
};
std::string_view kv_dispatch_name(KvDispatch d);

// llama_cells (seed 004): llama.cpp's cache parameters, from kv_cache.
struct LlamaCellsShape {
  std::string behaviour = "seed_2024";         // LlamaBehaviour (sim/cache/llama_kv_cells.hpp)
  std::string context_shift = "auto";          // on, off, or auto: the behaviour's default
  std::string type_k = "f16", type_v = "f16";  // ggml types (kernels/ggml_kv_type.hpp)
  bool v_trans = true;           // V stored transposed (llama.cpp: flash attention off)
  int64_t n_keep = 0;            // tokens kept at the start by a context shift
  int64_t n_discard = 0;         // tokens a shift drops; 0: half of those after n_keep
  double defrag_thold = 0.1;     // fragmentation above it defragments; < 0 never
  int64_t n_gpu_layers = -1;     // layers whose KV is on the accelerator; -1 all
  std::string backend = "auto";  // llama.cpp backend (sim/cache/llama_backend.hpp)
  // The Hexagon backend's matmul kernels: hvx (its default build) or hmx
  // (built with HMX matmuls, opt-in: GGML_HEXAGON_USE_HMX=1).
  std::string hexagon_matmul = "hvx";
};

// The geometry every on-device policy is built from.
struct GenieCacheShape {
  int64_t layers = 0, kv_heads = 0, head_dim = 0;
  Bytes dtype_bytes = 2;
  // Filled by the policy's spec (sim/policies/); the defaults are the
  // keys' declarations, not written here again.
  int64_t ctx_size = 0;
  std::vector<int64_t> ar_variants;
  int64_t pointer_shift_headroom = 0;  // 0: ctx_size (a 2x row)
  int64_t k_tile = 256, v_tile = 64;   // native_kv's tiles (kernels/native_kv_layout.hpp)
  // seed 002's past_key_{l}_h{h}_in naming: one K and one V tensor per head
  // instead of per layer (the model's export decides; pointer_shift's key).
  bool per_head_tensors = false;
  int64_t window = 0;     // sliding_window only
  LlamaCellsShape llama;  // llama_cells only
  // pointer_shift: host time of re-registering one KV input tensor at its
  // new offset (see pointer_shift_policy.cpp for where the figure comes from).
  TimeNs register_cost = 0;

  // Bytes of one cached token (one column) over all layers, K and V.
  Bytes column_bytes() const { return 2 * layers * kv_heads * head_dim * dtype_bytes; }
};

// The state the engine asks for after (or before) a pass.
struct KvUpdateRequest {
  KvUpdateRequest(int64_t n_past_ = 0, int64_t variant_ = 1, std::vector<bool> selected_ = {})
      : n_past(n_past_), variant(variant_), selected(std::move(selected_)) {}
  int64_t n_past = 0;   // tokens the cache should hold afterwards (positions 0..n_past-1,
                        // or the last `window` of them under sliding_window)
  int64_t variant = 1;  // AR-n graph the next pass runs
  // dispatchUpdate's keep-mask (seed 002): of the last pass's entries, the
  // ones to keep (true), in order; empty: the first n_past - held of them.
  // Its true entries must number n_past - held, and it may not be longer
  // than the pass that computed them (the current variant).
  std::vector<bool> selected;
};

struct KvUpdatePlan {
  KvDispatch dispatch = KvDispatch::update_and_set;
  int64_t n_past_before = 0, n_past_after = 0;
  int64_t variant_before = 1, variant_after = 1;
  int64_t n_update = 0;          // signed, seed 002: > 0 appended, < 0 removed
  int64_t evicted_tokens = 0;    // sliding window: oldest tokens dropped by this update
  Bytes bytes_copied = 0;        // new entries from the output buffer (memcpy)
  Bytes bytes_shifted = 0;       // kept entries moved (shift_concat, compaction, window shrink)
  Bytes realign_bytes = 0;       // AR-m -> AR-n variant switch
  Bytes pad_bytes = 0;           // columns reset to the pad value (memset)
  uint64_t pointer_updates = 0;  // registerPointerOffset calls
  std::vector<bool> selected;    // the keep-mask the update applied (empty: none)
  // pointer_shift: KV input tensors re-registered at the new offset by those
  // calls (every K and V tensor of the graph), and their host time.
  uint64_t tensor_registrations = 0;
  TimeNs registration_time = 0;
  // memcpy calls of the copy of new entries (updateKey/updateValue: one
  // per K row of every head, one per V head, each layer), the same with
  // one tensor per layer or per head.
  uint64_t copy_calls = 0;
  bool compaction = false;  // pointer_shift ran out of headroom
  // Added by the policies: the cache state the plan leads
  // to, so apply_update() installs what was priced. tokens_held differs from
  // n_past only under sliding_window (n_past is the logical position).
  int64_t tokens_held_before = 0, tokens_held_after = 0;
  int64_t view_offset_after = 0;  // pointer_shift's offset after the update (columns)
  int64_t ring_start_after = 0;   // smart_mask under a window: column of the oldest token
  int64_t appended_tokens = 0;    // entries written (a window keeps at most `window` of a pass)
  int64_t rewound_tokens = 0;     // entries removed from the newest end
  // llama_cells (seed 004): the K-shift (RoPE re-rotation of the shifted
  // keys, read and written in place) and the defragmentation (cells moved
  // into holes, K and V of every layer) run as graphs of their own before
  // the next pass.
  Bytes kshift_bytes = 0;
  Bytes defrag_bytes = 0;
  int64_t shifted_cells = 0, defrag_moves = 0;
  Bytes bytes_moved() const {
    return bytes_copied + bytes_shifted + realign_bytes + pad_bytes + kshift_bytes + defrag_bytes;
  }
};

// Columns per layer and KV head that the next pass's attention reads, and
// how many of them hold valid tokens.
struct AttentionSpan {
  int64_t read = 0;
  int64_t useful = 0;
  // llama_cells with an n_gpu_layers split: K/V bytes of the layers kept in
  // host memory, read by the CPU that runs those layers (seed 004 per-layer
  // buffers); `read` then counts the accelerator's layers only.
  Bytes host_read_bytes = 0;
};

struct GenieAccounting {
  Bytes buffer_bytes = 0;
  Bytes bytes_moved = 0;
  uint64_t pointer_updates = 0, compactions = 0, variant_switches = 0, rewinds = 0;
  uint64_t tensor_registrations = 0;
  int64_t window_evicted_tokens = 0;
};

class GenieKvPolicy {
 public:
  virtual ~GenieKvPolicy() = default;
  virtual std::string_view name() const = 0;

  // Throws std::invalid_argument when the request cannot be met (n_past
  // beyond what the variant's cache dim holds without a window, a variant
  // the model does not ship).
  virtual KvUpdatePlan plan_update(const KvUpdateRequest& request) const = 0;
  virtual void apply_update(const KvUpdatePlan& plan) = 0;

  virtual AttentionSpan attention_span() const = 0;  // for a pass at the current variant
  // Bytes the host writes into the attention mask input before a pass at
  // the current state (0: the policy's graph takes no such mask).
  virtual Bytes attention_mask_bytes() const { return 0; }
  // The logical position (the last requested n_past): tokens held, except
  // under sliding_window where tokens_held() keeps at most `window` of them.
  virtual int64_t n_past() const = 0;
  virtual int64_t tokens_held() const { return n_past(); }
  virtual int64_t variant() const = 0;
  // Most tokens the cache can hold at `variant` (ctx_size - variant; a
  // sliding window holds at most `window`, older ones are evicted).
  virtual int64_t capacity_tokens(int64_t variant) const = 0;
  virtual int64_t view_offset() const = 0;  // pointer_shift's offset in columns, else 0
  virtual Bytes saved_bytes() const = 0;    // dumpCache: the valid portion
  virtual GenieAccounting accounting() const = 0;
  // True when the policy itself makes room once the dialog outgrows the
  // context (a sliding window evicts, llama.cpp shifts the context), so the
  // engine never resets it.
  virtual bool makes_room() const { return false; }
  // A turn that does not fit a policy that does not make room: the reply
  // tokens it may still generate at `position` after `input` prompt
  // tokens, 0 to refuse the turn; -1 (the default) lets the engine clear
  // the cache and start the turn alone (Genie's context reset).
  // llama_cells with context shift off answers as llama-server does.
  virtual int64_t overflow_reply_tokens(int64_t position, int64_t input, int64_t reply) const {
    (void)position, (void)input, (void)reply;
    return -1;
  }
  // Bytes of KV the cache holds now; `column_bytes` is one token of the
  // scenario's shape (a policy with its own element types overrides).
  virtual Bytes held_bytes(Bytes column_bytes) const { return tokens_held() * column_bytes; }
  // The policy's own counters, for the run's metrics (llama_cells).
  virtual void report(RunMetrics& metrics) const { (void)metrics; }
};

}  // namespace kvsim
