#include "sim/serve/micro_batches.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/serve/sequence.hpp"

namespace kvsim {

std::vector<MicroBatch> split_micro_batches(const ScheduledBatch& batch,
                                            const KvCachePolicy& policy, int64_t ubatch,
                                            bool fixed_shape) {
  if (ubatch <= 0) throw std::invalid_argument("split_micro_batches: ubatch must be positive");
  if (batch.summary.bulk_decodes > 0)
    throw std::logic_error("split_micro_batches: bulk decodes are not items (disable them)");
  std::vector<MicroBatch> out;
  int64_t room = 0;
  for (const ScheduledSeq& item : batch.items) {
    const Sequence* seq = item.seq;
    const bool samples = seq->computed + item.tokens == seq->known_tokens();
    int64_t done = 0;
    while (done < item.tokens) {
      if (room == 0) {
        out.emplace_back();
        out.back().work.fixed_shape = fixed_shape;
        room = ubatch;
      }
      const int64_t take = std::min(room, item.tokens - done);
      const bool last = done + take == item.tokens;
      out.back().work.seqs.push_back(
          SeqWork{take, policy.attention_context(seq->computed + done), samples && last});
      ++out.back().sequences;
      done += take;
      room -= take;
    }
  }
  if (out.empty()) {
    out.emplace_back();
    out.back().work.fixed_shape = fixed_shape;
  }
  out.front().work.swap_in_bytes = batch.swap_in_bytes;
  out.front().work.swap_out_bytes = batch.swap_out_bytes;
  return out;
}

}  // namespace kvsim
