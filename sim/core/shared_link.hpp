#pragma once
// One direction of a physical path KV bytes cross (a device's PCIe host
// link, the intra-node fabric, a node's NIC, the pool's servers, an SSD): a
// bandwidth and a latency that every transfer crossing it at the same time
// shares.
//
// Sharing is processor sharing (fair share): n transfers on the wire each
// move at bandwidth / n, so a transfer's end moves whenever another starts
// or ends. Not FIFO, because the stacks that move KV do not send one
// transfer after another: Mooncake's Transfer Engine runs batch transfers
// "across multiple threads and network cards" and stripes large objects
// over several NICs (Mooncake docs, transfer-engine.md and architecture.md),
// RDMA stacks cut a transfer into ~64 KB chunks and round-robin them over
// their queue pairs (ROCm mori PR 351, "single-transfer chunking"), and the
// NIC arbitrates among queue pairs round-robin at packet granularity, as
// PCIe DMA engines interleave their TLPs. Chunks of tens of KB against KV
// transfers of MBs make that interleaving the fluid limit, bandwidth / n
// each; FIFO would hold a short transfer behind a long one for the long
// one's whole length, which these stacks are built to avoid.
//
// A transfer first waits the link's latency (setup, first byte; it takes
// no bandwidth), then joins the wire. Alone it takes
// latency + ceil(bytes * 1e9 / bandwidth) ns, the price kvsim's tiers and
// KV links gave before links were shared, to the nanosecond.
//
// Time is integer: each transfer on the wire holds a finish tag in virtual
// work units (kScale per nanosecond of its time alone); the virtual clock
// advances by floor(dt * kScale / n) over dt ns with n on the wire, and
// ties between tags break on the transfer's id (its start order), so a run
// is the same bit for bit. The link keeps one event, for its earliest
// waited-for end, rescheduled as transfers come and go; a background
// transfer (one nobody waits for, an asynchronous store) takes its share
// but costs no event of its own: its end is found when time passes it.
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/units.hpp"
#include "sim/core/latency_histogram.hpp"
#include "sim/core/simulator.hpp"

namespace kvsim {

struct LinkSpec {
  std::string name;       // where it is: "node0.nic.rx", "replica3.global.read"
  int64_t bandwidth = 0;  // bytes per second, > 0
  TimeNs latency = 0;     // per transfer, >= 0
};

// What a link carried, for its report (busy time: some transfer on the wire).
struct LinkCounters {
  int64_t transfers = 0;  // ended
  Bytes bytes = 0;        // of the ended transfers
  TimeNs busy = 0;        // time with at least one transfer on the wire
  TimeNs delay = 0;       // summed over ended transfers: time taken - time alone
  TimeNs max_delay = 0;   // of one transfer
};

// One ended transfer, as a link's observer hears of it (a trace's slice).
struct LinkTransfer {
  TimeNs start = 0, end = 0;  // from start() to its last byte across
  Bytes bytes = 0;
  TimeNs delay = 0;  // end - start - its time alone: what sharing cost it
};

class SharedLink {
 public:
  using Done = std::function<void()>;
  // Completion callbacks run from the link's event at `priority` (the
  // priority of the event the caller would otherwise have scheduled).
  // std::invalid_argument for a bandwidth <= 0 or a latency < 0.
  SharedLink(Simulator& sim, LinkSpec spec, int32_t priority);
  SharedLink(const SharedLink&) = delete;
  SharedLink& operator=(const SharedLink&) = delete;
  ~SharedLink();

  const LinkSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  // The wire time alone of `bytes` (a layer-wise stream sends 1/`divisor`
  // of them after the compute): ceil(bytes * 1e9 / bandwidth / divisor).
  TimeNs wire_time(Bytes bytes, int64_t divisor = 1) const;
  // Latency + wire time: what a transfer costs with the link to itself.
  TimeNs alone_time(Bytes bytes, int64_t divisor = 1) const {
    return bytes > 0 ? spec_.latency + wire_time(bytes, divisor) : 0;
  }

  // Starts a transfer of `bytes` now; `done` runs when its last byte is
  // across (never from inside start()). An empty `done` makes it a
  // background transfer. std::overflow_error when its time does not fit.
  void start(Bytes bytes, Done done, int64_t divisor = 1);

  size_t in_flight() const { return waiting_latency_ + on_wire_.size(); }
  const LinkCounters& counters() const { return counters_; }
  // The delay of every ended transfer (LinkCounters::delay, one by one),
  // for its percentiles.
  const LatencyHistogram& delays() const { return delays_; }
  // Called with every transfer as it ends (before its `done`); empty: none.
  using Observer = std::function<void(const LinkTransfer&)>;
  void set_observer(Observer observer) { observer_ = std::move(observer); }

  // Virtual work units per nanosecond of a transfer's time alone.
  static constexpr int64_t kScale = 1024;

 private:
  struct Transfer {
    Bytes bytes = 0;
    TimeNs started = 0, alone = 0;
    Done done;  // empty: background
  };
  void join(uint64_t id, TimeNs wire);
  // Moves the link to `t`: the virtual clock, and every transfer whose tag
  // it passes leaves the wire (waited-for ones to ready_, in tag order).
  void advance(TimeNs t);
  void leave(uint64_t id);
  // The time the earliest waited-for transfer on the wire ends, or -1.
  TimeNs next_waited_end() const;
  void reschedule();
  void on_event();

  Simulator& sim_;
  LinkSpec spec_;
  int32_t priority_;
  uint64_t next_id_ = 0;
  std::map<uint64_t, Transfer> transfers_;          // by id, started and not ended
  std::set<std::pair<int64_t, uint64_t>> on_wire_;  // (finish tag, id)
  size_t waiting_latency_ = 0;
  size_t waited_on_wire_ = 0;
  int64_t vnow_ = 0;             // virtual clock, reset when the wire empties
  TimeNs last_ = 0;              // time of vnow_
  std::vector<uint64_t> ready_;  // ended, callbacks not run yet
  EventHandle event_{};
  bool has_event_ = false;
  TimeNs event_time_ = 0;
  LinkCounters counters_;
  LatencyHistogram delays_;
  Observer observer_;
};

}  // namespace kvsim
