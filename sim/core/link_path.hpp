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
#include <vector>

#include "sim/core/shared_link.hpp"

namespace kvsim {

using LinkPath = std::vector<SharedLink*>;

// Starts `bytes` over every hop of `path` (not empty) now; `done` runs once
// the last hop has them across. An empty `done`: a background transfer.
void transfer_over(const LinkPath& path, Bytes bytes, SharedLink::Done done, int64_t divisor = 1);
// What it costs with every hop to itself.
TimeNs alone_over(const LinkPath& path, Bytes bytes, int64_t divisor = 1);

}  // namespace kvsim
