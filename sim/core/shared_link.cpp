#include "sim/core/shared_link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kvsim {

namespace {

__extension__ using Wide = __int128;  // __extension__: GCC/Clang builtin

// ceil(need * n / kScale): the ns until a tag `need` units ahead is passed
// with n transfers on the wire.
int64_t time_to(int64_t need, int64_t n) {
  const Wide units = static_cast<Wide>(need) * n;
  return static_cast<int64_t>((units + SharedLink::kScale - 1) / SharedLink::kScale);
}

// floor(dt * kScale / n): the units each of n transfers moves in dt ns.
int64_t units_in(int64_t dt, int64_t n) {
  return static_cast<int64_t>(static_cast<Wide>(dt) * SharedLink::kScale / n);
}

}  // namespace

SharedLink::SharedLink(Simulator& sim, LinkSpec spec, int32_t priority)
    : sim_(sim), spec_(std::move(spec)), priority_(priority), last_(sim.now()) {
  if (spec_.bandwidth <= 0)
    throw std::invalid_argument(
        fmt::format("link {}: bandwidth {} B/s, must be > 0", spec_.name, spec_.bandwidth));
  if (spec_.latency < 0)
    throw std::invalid_argument(
        fmt::format("link {}: latency {} ns, must be >= 0", spec_.name, spec_.latency));
}

// Pending events are left to the simulator, which outlives or dies with
// the link's owner and never runs them after the run.
SharedLink::~SharedLink() = default;

TimeNs SharedLink::wire_time(Bytes bytes, int64_t divisor) const {
  // The formula of the prices links replaced (KvTier::read_time,
  // price_kv_transfer), in double as they were, so a lone transfer costs
  // exactly what it did: bytes * 1e9 is exact below 4.6 GB.
  double ns = static_cast<double>(bytes) * 1e9 / static_cast<double>(spec_.bandwidth);
  if (divisor > 1) ns /= static_cast<double>(divisor);
  const double ceiling = std::ceil(ns);
  if (!(ceiling < static_cast<double>(std::numeric_limits<int64_t>::max() / kScale)))
    throw std::overflow_error(fmt::format("link {}: {} bytes take {} ns, past the clock's range",
                                          spec_.name, bytes, ceiling));
  return static_cast<TimeNs>(ceiling);
}

void SharedLink::start(Bytes bytes, Done done, int64_t divisor) {
  if (bytes <= 0)
    throw std::logic_error(fmt::format("link {}: a transfer of {} bytes", spec_.name, bytes));
  const TimeNs wire = wire_time(bytes, divisor);
  const uint64_t id = next_id_++;
  Transfer& t = transfers_[id];
  t.bytes = bytes;
  t.started = sim_.now();
  t.alone = spec_.latency + wire;
  t.done = std::move(done);
  if (spec_.latency == 0) {
    join(id, wire);
    return;
  }
  ++waiting_latency_;
  sim_.schedule_in(spec_.latency, priority_, [this, id, wire] {
    --waiting_latency_;
    join(id, wire);
  });
}

void SharedLink::join(uint64_t id, TimeNs wire) {
  advance(sim_.now());
  const int64_t units = wire * kScale;  // wire < max / kScale (wire_time)
  if (vnow_ > std::numeric_limits<int64_t>::max() - units)
    throw std::overflow_error(
        fmt::format("link {}: busy for longer than its virtual clock holds", spec_.name));
  on_wire_.emplace(vnow_ + units, id);
  if (transfers_.at(id).done) ++waited_on_wire_;
  reschedule();
}

void SharedLink::advance(TimeNs t) {
  while (!on_wire_.empty()) {
    const auto n = static_cast<int64_t>(on_wire_.size());
    const int64_t need = std::max<int64_t>(on_wire_.begin()->first - vnow_, 0);
    const int64_t dt = time_to(need, n);
    if (last_ + dt > t) break;
    // To the first tag: it is passed (floor(ceil(x) * kScale / n) >= need).
    vnow_ += units_in(dt, n);
    last_ += dt;
    counters_.busy += dt;
    while (!on_wire_.empty() && on_wire_.begin()->first <= vnow_) {
      const uint64_t id = on_wire_.begin()->second;
      on_wire_.erase(on_wire_.begin());
      leave(id);
    }
  }
  if (!on_wire_.empty()) {
    const auto n = static_cast<int64_t>(on_wire_.size());
    vnow_ += units_in(t - last_, n);
    counters_.busy += t - last_;
  } else {
    vnow_ = 0;  // a new busy period counts from 0
  }
  last_ = t;
}

void SharedLink::leave(uint64_t id) {
  auto it = transfers_.find(id);
  Transfer& t = it->second;
  const TimeNs delay = (last_ - t.started) - t.alone;
  ++counters_.transfers;
  counters_.bytes += t.bytes;
  counters_.delay += delay;
  counters_.max_delay = std::max(counters_.max_delay, delay);
  delays_.add(std::max<TimeNs>(delay, 0));  // rounding may give -1 ns
  if (observer_) observer_({t.started, last_, t.bytes, delay});
  if (t.done) {
    --waited_on_wire_;
    ready_.push_back(id);
  } else {
    transfers_.erase(it);
  }
}

// The walk advance() would take, without moving anything: tags in order,
// each passed after ceil(need * n / kScale) ns with n still on the wire.
TimeNs SharedLink::next_waited_end() const {
  if (waited_on_wire_ == 0) return -1;
  int64_t v = vnow_;
  TimeNs t = last_;
  auto n = static_cast<int64_t>(on_wire_.size());
  for (const auto& [tag, id] : on_wire_) {
    const int64_t dt = time_to(std::max<int64_t>(tag - v, 0), n);
    t += dt;
    v += units_in(dt, n);
    if (transfers_.at(id).done) return t;
    --n;
  }
  return -1;
}

void SharedLink::reschedule() {
  const TimeNs when = ready_.empty() ? next_waited_end() : sim_.now();
  if (has_event_ && when == event_time_) return;
  if (has_event_) sim_.cancel(event_);
  has_event_ = when >= 0;
  if (!has_event_) return;
  event_time_ = when;
  event_ = sim_.schedule_at(when, priority_, [this] { on_event(); });
}

void SharedLink::on_event() {
  has_event_ = false;
  advance(sim_.now());
  std::vector<uint64_t> ready;
  ready.swap(ready_);
  // The link is settled before any callback runs: one may start a
  // transfer here.
  reschedule();
  for (const uint64_t id : ready) {
    auto node = transfers_.extract(id);
    node.mapped().done();
  }
}

}  // namespace kvsim
