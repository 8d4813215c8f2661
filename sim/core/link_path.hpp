#pragma once
// The links one movement of KV crosses, in order (the instance's own port,
// then what it shares: its node's NIC, the pool's servers), and a transfer
// over all of them.
//
// The hops carry the transfer at once (RDMA is cut-through: a byte leaves
// the NIC as soon as it has crossed PCIe, nothing is stored and forwarded),
// each at its own fair share, and the transfer ends when its last hop does:
// the busiest hop sets the pace. A simplification of max-min fairness: a
// hop does not hand the share a transfer cannot use (throttled elsewhere)
// to the others. Alone, a transfer costs the slowest hop's
// latency + bytes / bandwidth.
//
// An instance of several tensor-parallel ranks moves KV as its ranks do:
// each rank its own 1/T share of every block (a rank holds its KV heads'
// slice, SPEC's per-rank block), over its own die's link. Those links are
// the instance's own port, one link of the ranks' summed bandwidth (a
// die's PCIe host link, its RoCE port; alone each share takes what one
// die's link takes). What the ranks share is a link of the node or the
// cluster (a node's NIC, the fabric, the pool's servers), where each rank's
// share is a flow of its own: T flows that take T shares of the link
// against another instance's one (the NIC and the pool's servers arbitrate
// among queue pairs, shared_link.hpp, and each rank's connector worker
// opens its own: vLLM's KV connector runs in every TP worker, LMCache and
// Mooncake store a rank's slice under a key per rank). RankSplit says from
// which hop of a path the flows start and how many there are; alone the
// T flows on a hop of bandwidth B end together at latency + bytes / B, to
// within T - 1 ns of one transfer's ceiling.
#include <cstddef>
#include <limits>
#include <vector>

#include "sim/core/shared_link.hpp"

namespace kvsim {

using LinkPath = std::vector<SharedLink*>;

struct RankSplit {
  // Hops from this index on carry the transfer as `ranks` flows.
  size_t shared_from = std::numeric_limits<size_t>::max();
  int64_t ranks = 1;
  bool splits(size_t hop) const { return ranks > 1 && hop >= shared_from; }
};

// The share of rank `r` of `ranks` in `bytes`: floor, the first
// bytes % ranks ranks one byte more, so the shares sum to `bytes`.
Bytes rank_share(Bytes bytes, int64_t ranks, int64_t r);

// Starts `bytes` over every hop of `path` (not empty) now; `done` runs once
// the last hop has them across. An empty `done`: a background transfer.
// With `split`, the hops it names carry `split.ranks` flows (rank_share
// each), the others the whole.
void transfer_over(const LinkPath& path, Bytes bytes, SharedLink::Done done, int64_t divisor = 1,
                   RankSplit split = {});
// What it costs with every hop to itself.
TimeNs alone_over(const LinkPath& path, Bytes bytes, int64_t divisor = 1);

}  // namespace kvsim
