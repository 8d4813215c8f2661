#include "sim/core/link_path.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace kvsim {

void transfer_over(const LinkPath& path, Bytes bytes, SharedLink::Done done, int64_t divisor) {
  if (path.empty()) throw std::logic_error("a transfer over no link");
  if (path.size() == 1 || !done) {
    for (size_t i = 0; i < path.size(); ++i)
      path[i]->start(bytes, i + 1 == path.size() ? std::move(done) : SharedLink::Done(), divisor);
    return;
  }
  struct Join {
    size_t left;
    SharedLink::Done done;
  };
  auto join = std::make_shared<Join>(Join{path.size(), std::move(done)});
  for (SharedLink* hop : path) {
    hop->start(
        bytes,
        [join] {
          if (--join->left == 0) join->done();
        },
        divisor);
  }
}

TimeNs alone_over(const LinkPath& path, Bytes bytes, int64_t divisor) {
  TimeNs t = 0;
  for (const SharedLink* hop : path) t = std::max(t, hop->alone_time(bytes, divisor));
  return t;
}

}  // namespace kvsim
