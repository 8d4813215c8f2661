// POINTER_SHIFT (seed 002): "modify tensor pointers instead of copying data".
// Every K row and V head has row_columns() = C + headroom physical columns
// (pointer_shift_headroom, 0 meaning C: the 2x row of the kernel); the graph
// sees the view [offset, offset + cache_dim). The valid columns sit at the
// right end of the view. An update memcpys the n new entries just past the
// view's end and moves the offset right by n; the new offset is given to QNN
// with one registerPointerOffset(variant, ptr_offset * bw) call.
//
// What counts as a pointer update: one registerPointerOffset per dispatched
// update (clear, set variant, rewind, update and set), for the variant the
// next pass runs, whether or not the offset changed: dispatchUpdate always
// ends with it, and a graph switch needs its tensors re-pointed anyway.
//
// What that call costs: qualla's NewNSPKVManager (nsp-kvmanager.cpp) hands
// (variant, ptr_offset * bw) to the model's register function, which points
// every KV input tensor of the variant's graph (past_key_{l}_in,
// past_value_{l}_in: kv_tensors()) at its buffer plus the offset. On the HTP
// those tensors are shared-buffer memory handles, so a new offset is a new
// registration (QnnMem_register of the shared buffer at that offset; Genie's
// KV rewind tutorial reports "memory register-related errors" with
// POINTER_SHIFT, QAIRT 2.39 docs/Genie/general/tutorials/dialog/rewind).
// So an update costs tensor_registrations = kv_tensors() registrations of
// register_cost each, on the host, before the next pass. register_cost is
// an assumption [A]: no published per-registration time was found; the
// default (pointer_shift.register_cost) is a host QNN API call that adds a
// handle to an already mapped buffer, well below one graph execute's CPU
// side (the device files' kernel_launch, ~100 us). ExecuTorch's Qualcomm
// llama runner made the same trade: it pre-registers its handles at init
// ("bring forward the memHandle creating time from execution to
// initialization", pytorch/executorch PR 13410), merged each layer's heads
// into one cache "to decrease the number of inputs and outputs" and
// deprecated its ShiftPointer updater (PR 15438), keeping SmartMask.
//
// Closed form of one AR-1 decode step (n_update = 1, p = n_past before),
// L layers, H KV heads, D head_dim, b dtype bytes, C ctx_size, h headroom
// (h = C when 0), cache dim C - 1, row R = C + h columns:
//   no compaction:  bytes_moved = bytes_copied = 2 L H D b      (constant in p)
//   compaction, when offset + (C - 1) + 1 > R, i.e. offset > h:
//                   bytes_shifted = 2 L H D b p  (one memmove of the valid
//                   columns back to offset 0), then the copy: 2 L H D b (p + 1).
//   In steady AR-1 decoding the offset grows by one per step, so a
//   compaction comes once every h + 2 steps after the previous one.
//
// Rewind of r tokens: the offset moves back by r (no bytes) when offset >= r;
// otherwise the kept p - r columns are memmoved to end at column cache_dim
// with offset 0 (a compaction of p - r columns). Window eviction: nothing
// moves (attention reads the p rightmost columns of the view). Clear: offset
// back to 0, nothing moves.
// Attention reads the whole view (the static shape: read = C - n, useful = p).
#include "sim/cache/genie_buffer_sizing.hpp"
#include "sim/cache/genie_mode_policy.hpp"

namespace kvsim {
namespace {

class PointerShiftPolicy final : public GenieModePolicy {
 public:
  using GenieModePolicy::GenieModePolicy;
  std::string_view name() const override { return "pointer_shift"; }
  int64_t row_columns() const override {
    return pointer_shift_row_columns(shape_.ctx_size, shape_.pointer_shift_headroom);
  }

 protected:
  void price_clear(GenieState&, KvUpdatePlan&) const override {}
  void price_evict(GenieState&, int64_t, KvUpdatePlan&) const override {}
  void price_rewind(GenieState& s, int64_t tokens, KvUpdatePlan& plan) const override {
    if (s.offset >= tokens) {
      s.offset -= tokens;
      return;
    }
    plan.bytes_shifted += (s.held - tokens) * column_bytes();
    plan.compaction = true;
    s.offset = 0;
  }
  void price_append(GenieState& s, int64_t tokens, KvUpdatePlan& plan) const override {
    if (s.offset + cache_dim(s.variant) + tokens > row_columns()) {
      plan.bytes_shifted += s.held * column_bytes();
      plan.compaction = true;
      s.offset = 0;
    }
    plan.bytes_copied += tokens * column_bytes();
    s.offset += tokens;
  }
  uint64_t pointer_updates_per_update() const override { return 1; }
  uint64_t registrations_per_update() const override { return static_cast<uint64_t>(kv_tensors()); }
};

}  // namespace

std::unique_ptr<GenieModePolicy> make_pointer_shift_policy(const GenieCacheShape& shape) {
  return std::make_unique<PointerShiftPolicy>(shape);
}

}  // namespace kvsim
