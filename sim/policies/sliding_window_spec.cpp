// sliding_window (seed 002) as a policy: the last `window` tokens kept, over
// a Genie update mode, NativeKV included (the genie engine's buffers, sim/cache/
// sliding_window_policy.cpp) or over paged (the serving engine's block
// pool, sim/cache/paged_window_policy.cpp). It composes the policy its
// update_mode names: that policy's keys are read with its own, its checks
// run from here, and it offers the contract of its base.
#include <fmt/format.h>

#include <stdexcept>

#include "sim/cache/paged_window_policy.hpp"
#include "sim/policies/genie_buffer_spec.hpp"
#include "sim/policies/paged_pool_spec.hpp"
#include "sim/policies/paged_spec.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {
namespace {

constexpr const char* kBaseKey = "update_mode";

class SlidingWindowSpec final : public PolicySpec,
                                public DeviceBufferContract,
                                public BlockPoolContract {
 public:
  explicit SlidingWindowSpec(const PolicyValues& v) : window_(v.values.integer("window")) {
    set_read(v.values, v.paths);
    const std::string base = v.values.string(kBaseKey);
    const PolicyEntry* entry = find_policy(base);
    if (entry == nullptr || entry->make == nullptr || !entry->base_key.empty())
      throw std::invalid_argument(fmt::format("sliding_window cannot wrap '{}'", base));
    base_ = entry->make(v);
    mode_ = dynamic_cast<const GenieModeSpec*>(base_.get());
    if (base_->block_pool() != nullptr) pool_ = PagedPoolSettings::from(v.values);
  }

  std::string_view name() const override { return "sliding_window"; }
  std::string display_name() const override {
    return fmt::format("sliding_window({})", base_->name());
  }
  const DeviceBufferContract* device_buffers() const override {
    return mode_ != nullptr ? this : nullptr;
  }
  const BlockPoolContract* block_pool() const override {
    return base_->block_pool() != nullptr ? this : nullptr;
  }

  // It needs a window; over paged the blocks leave the window, so prefix
  // caching is off; over a Genie mode the window must fit the smallest cache
  // dim, ctx_size - largest variant. The base's own checks run from here.
  void check(const InstanceSpec& s, EngineContract engine,
             config::LoadContext& ctx) const override {
    const std::string window_key = key_path("window");
    if (window_ < 1) {
      ctx.diagnostics.error(ctx.location_of(window_key), window_key,
                            "sliding_window needs the number of tokens it keeps",
                            "window: 1.. (at most ctx_size - largest AR variant on a Genie mode)");
    }
    if (mode_ == nullptr && given("prefix_caching") && values().boolean("prefix_caching")) {
      const std::string key = key_path("prefix_caching");
      ctx.diagnostics.error(ctx.location_of(key), key,
                            "prefix caching is off under a sliding window (blocks leave the "
                            "window)",
                            "prefix_caching: false, or remove it");
    }
    if (mode_ == nullptr) {
      check_block_layout(pool_, *this, s, ctx);
      return;
    }
    base_->check(s, engine, ctx);
    const int64_t largest = mode_->buffers().largest_variant();
    const int64_t ctx_size = mode_->ctx_size();
    if (window_ > 0 && largest < ctx_size && window_ > ctx_size - largest) {
      ctx.diagnostics.error(
          ctx.location_of(window_key), window_key,
          fmt::format("{} tokens do not fit the cache: ctx_size {} - largest variant AR-{} = {}",
                      window_, ctx_size, largest, ctx_size - largest),
          fmt::format("1..{}", ctx_size - largest));
    }
  }

  // Over a Genie mode: its buffers, a window kept.
  int64_t ctx_size() const override { return mode_->ctx_size(); }
  const std::vector<int64_t>& ar_variants() const override { return mode_->ar_variants(); }
  int64_t update_threads() const override { return mode_->update_threads(); }
  int64_t window() const override { return window_; }
  GenieCacheShape shape(const ModelSpec& model, Bytes dtype_bytes) const override {
    GenieCacheShape s = mode_->shape(model, dtype_bytes);
    s.window = window_;
    return s;
  }
  std::unique_ptr<GenieKvPolicy> make(const ModelSpec& model, Bytes dtype_bytes) const override {
    return make_sliding_window_policy(mode_->make_mode(shape(model, dtype_bytes)), window_);
  }
  Bytes buffer_bytes(const ModelSpec& model, Bytes dtype_bytes) const override {
    return mode_->buffer_bytes(model, dtype_bytes);
  }
  std::string_view buffer_layout() const override { return mode_->buffer_layout(); }
  std::optional<kernels::GenieUpdateMode> numerics_mode() const override {
    return mode_->numerics_mode();
  }
  bool keeps_selected() const override { return mode_->keeps_selected(); }

  // Over paged: its pool, without prefix caching and without groups by
  // attention type.
  int64_t block_size() const override { return pool_.block_size; }
  PoolSizing size(const ModelSpec& model, PoolSizingInput in) const override {
    pool_.fill(in);
    return size_paged_pool(model, in);
  }
  std::unique_ptr<KvCachePolicy> make(const InstanceSpec& s,
                                      const PoolSizing& sizing) const override {
    (void)s;
    PagedWindowParams p;
    p.num_blocks = sizing.num_blocks;
    p.block_size = pool_.block_size;
    p.block_bytes = sizing.block_bytes;
    p.window = window_;
    return std::make_unique<PagedWindowPolicy>(p);
  }
  bool swap_preemption() const override { return pool_.swap; }
  std::string layout() const override { return pool_.layout; }

 private:
  int64_t window_;
  std::shared_ptr<PolicySpec> base_;
  const GenieModeSpec* mode_ = nullptr;  // base_ as a Genie mode, when it is one
  PagedPoolSettings pool_;               // over paged
};

}  // namespace

PolicyEntry sliding_window_policy_entry() {
  using namespace config;
  // The keys of the policy it wraps are added by the registry (policy_keys).
  return {{"policy",
           "sliding_window",
           "keeps the last `window` tokens over a Genie update mode or paged (seed 002); takes the "
           "keys of its update_mode too",
           {choice_param(kBaseKey, std::string("pointer_shift"),
                         {"shift_concat", "pointer_shift", "smart_mask", "native_kv", "paged"},
                         "the policy it wraps"),
            int_param("window", 0, 0, 1 << 22, "tokens",
                      "tokens kept (required: at most ctx_size - largest variant on a Genie "
                      "mode)")}},
          kBaseKey,
          [](const PolicyValues& v) -> std::shared_ptr<PolicySpec> {
            return std::make_shared<SlidingWindowSpec>(v);
          }};
}

}  // namespace kvsim
