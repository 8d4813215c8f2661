#pragma once
// The numerics checker under chunk_lru (seed 003). The chunk path places a
// request's cached segments in its main-pool blocks at admission, outside
// the step's own tokens, so before the base checker runs a sequence's first
// step this one does what the device does: each segment's synthetic K/V is
// written into a shadow chunk pool at the policy's chunk blocks with keys
// rotated at virtual positions (when those blocks do not already hold that
// chunk), then copied into the sequence's main-pool blocks and re-rotated
// to the real positions by kernels::remap_chunk. The base checker then
// compares the question's paged attention over those blocks with the dense
// reference at the real positions: a wrong block, row, position delta or
// copy fails the run. Segments the policy does not cache are written at
// their real positions (they are prefilled there).
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "sim/cache/block_hash.hpp"
#include "sim/numerics/numerics_checker.hpp"

namespace kvsim {
class ChunkLruPolicy;
}

namespace kvsim::numerics {

class ChunkLruNumericsChecker : public NumericsChecker {
 public:
  ChunkLruNumericsChecker(const CheckerParams& params, int64_t chunk_blocks,
                          int64_t virtual_pos_start);

  void on_step_done(const ScheduledBatch& batch, const KvCachePolicy& policy, TimeNs now) override;
  void on_release(const Sequence& seq) override;

 protected:
  // Where a segment's first key was rotated in the chunk pool: the policy's
  // virtual_pos_start (tests override it to inject a wrong delta).
  virtual int64_t virtual_position() const { return virtual_pos_start_; }

 private:
  void place_chunks(const Sequence& seq, const ChunkLruPolicy& policy, int64_t cached);
  void write_rows(kernels::KvPool& pool, const std::vector<int32_t>& blocks, int64_t first_row,
                  const TokenView& tokens, int64_t first_token, int64_t n, int64_t first_position);

  kernels::KvPool chunk_pool_;
  std::vector<BlockHash> block_owner_;  // the chunk each shadow chunk block holds
  std::vector<uint8_t> owned_;
  std::unordered_set<uint64_t> placed_;  // requests whose chunk path is in the shadow pool
  int64_t virtual_pos_start_;
};

}  // namespace kvsim::numerics
