#include "sim/core/link_path.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace kvsim {

Bytes rank_share(Bytes bytes, int64_t ranks, int64_t r) {
  if (ranks < 1 || r < 0 || r >= ranks) throw std::logic_error("a rank share of no rank");
  return bytes / ranks + (r < bytes % ranks ? 1 : 0);
}

void transfer_over(const LinkPath& path, Bytes bytes, SharedLink::Done done, int64_t divisor,
                   RankSplit split) {
  if (path.empty()) throw std::logic_error("a transfer over no link");
  // Flows of a split hop: a rank's share of fewer bytes than ranks is empty.
  auto flows = [&](size_t hop) -> int64_t {
    return split.splits(hop) ? std::min<int64_t>(split.ranks, bytes) : 1;
  };
  auto share = [&](size_t hop, int64_t r) {
    return split.splits(hop) ? rank_share(bytes, split.ranks, r) : bytes;
  };
  if (!done) {  // background: nobody waits, every flow takes its share
    for (size_t i = 0; i < path.size(); ++i)
      for (int64_t r = 0; r < flows(i); ++r) path[i]->start(share(i, r), {}, divisor);
    return;
  }
  size_t total = 0;
  for (size_t i = 0; i < path.size(); ++i) total += static_cast<size_t>(flows(i));
  if (total == 1) {
    path[0]->start(bytes, std::move(done), divisor);
    return;
  }
  struct Join {
    size_t left;
    SharedLink::Done done;
  };
  auto join = std::make_shared<Join>(Join{total, std::move(done)});
  for (size_t i = 0; i < path.size(); ++i) {
    for (int64_t r = 0; r < flows(i); ++r) {
      path[i]->start(
          share(i, r),
          [join] {
            if (--join->left == 0) join->done();
          },
          divisor);
    }
  }
}

TimeNs alone_over(const LinkPath& path, Bytes bytes, int64_t divisor) {
  TimeNs t = 0;
  for (const SharedLink* hop : path) t = std::max(t, hop->alone_time(bytes, divisor));
  return t;
}

}  // namespace kvsim
