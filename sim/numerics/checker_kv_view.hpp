#pragma once
// How the numerics checker addresses its shadow pool (SPEC 8, seed 000):
// the policy's `kv_cache.layout` picks one view, chosen once by name. Both
// views write and read one buffer, the Ksana pool of kernels/kv_pool.hpp;
// they differ in the ids the kernels are handed.
//
// ksana: the store and paged attention take the policy's Ksana block ids
//        and the layer.
// atb:   each step and layer, the Ksana ids are converted to that layer's
//        ATB block table (b * layers * 2 + layer, seed 000 step 2); K and V
//        are stored and read through the kcache/vcache view with it (one
//        buffer, vcache `layers` slabs past kcache), as ATB's
//        ReshapeAndCache and PagedAttention take them.
// The dense reference does not go through either: it is built from the
// sequence's own token history.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/kv_pool.hpp"

namespace kvsim::numerics {

class CheckerKvView {
 public:
  virtual ~CheckerKvView() = default;
  virtual std::string_view name() const = 0;
  // Stores n tokens' K and V of `layer` ([n, kv_heads, head_dim] each) at
  // positions [first, first + n) of a sequence whose Ksana block table is
  // `table`.
  virtual void store(kernels::KvPool& pool, int64_t layer, std::span<const int32_t> table,
                     int64_t first, int64_t n, const float* k, const float* v) = 0;
  // Paged varlen attention of nq queries (the last of k_len positions) of
  // one sequence at `layer`: out [nq, q_heads, head_dim].
  virtual void attend(const kernels::KvPool& pool, int64_t layer, std::span<const int32_t> table,
                      const float* q, int64_t nq, int64_t k_len, int64_t q_heads, float scale,
                      float* out) = 0;
  // Per-layer block tables this view built, and their entries (0 for ksana).
  uint64_t tables_built() const { return tables_built_; }
  uint64_t table_entries() const { return table_entries_; }

 protected:
  uint64_t tables_built_ = 0;
  uint64_t table_entries_ = 0;
};

class KsanaCheckerView final : public CheckerKvView {
 public:
  std::string_view name() const override { return "ksana"; }
  void store(kernels::KvPool& pool, int64_t layer, std::span<const int32_t> table, int64_t first,
             int64_t n, const float* k, const float* v) override;
  void attend(const kernels::KvPool& pool, int64_t layer, std::span<const int32_t> table,
              const float* q, int64_t nq, int64_t k_len, int64_t q_heads, float scale,
              float* out) override;
};

class AtbCheckerView : public CheckerKvView {
 public:
  std::string_view name() const override { return "atb"; }
  void store(kernels::KvPool& pool, int64_t layer, std::span<const int32_t> table, int64_t first,
             int64_t n, const float* k, const float* v) override;
  void attend(const kernels::KvPool& pool, int64_t layer, std::span<const int32_t> table,
              const float* q, int64_t nq, int64_t k_len, int64_t q_heads, float scale,
              float* out) override;

  enum class Use { store, attend };

 protected:
  // One layer's ATB block table from the Ksana ids (kernels'
  // atb_block_table). Tests override it to hand a kernel wrong ids.
  virtual void convert(const BlockGeometry& g, std::span<const int32_t> ksana, int64_t layer,
                       Use use, std::vector<int32_t>& atb) const;

 private:
  const std::vector<int32_t>& layer_table(const BlockGeometry& g, std::span<const int32_t> ksana,
                                          int64_t layer, Use use);
  std::vector<int32_t> atb_table_;
};

// The view for a `kv_cache.layout` name (kernels/kv_layout.hpp's
// kv_layout_names); throws std::invalid_argument for any other.
std::unique_ptr<CheckerKvView> make_checker_kv_view(std::string_view layout);

}  // namespace kvsim::numerics
