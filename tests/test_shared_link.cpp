// SharedLink (sim/core/shared_link.hpp): transfers that overlap on one link
// share its bandwidth fairly, their ends move as others start and end, a
// lone transfer costs latency + bytes / bandwidth, and a run is the same
// bit for bit. Times are worked out by hand in each test.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/core/link_path.hpp"
#include "sim/core/shared_link.hpp"
#include "sim/core/simulator.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t kGBps = 1'000'000'000;  // 1 GB/s: one byte per ns
constexpr int32_t kPrio = 0;

// Starts a transfer of `bytes` at `at`; its end time lands in `*end`.
void start_at(Simulator& sim, SharedLink& link, TimeNs at, Bytes bytes, TimeNs* end) {
  sim.schedule_at(at, kPrio, [&sim, &link, bytes, end] {
    link.start(bytes, [&sim, end] { *end = sim.now(); });
  });
}

TEST(SharedLink, ALoneTransferCostsLatencyPlusBytesOverBandwidth) {
  Simulator sim;
  SharedLink link(sim, {"pcie", 25 * kGBps, 10'000}, kPrio);
  TimeNs end = -1;
  start_at(sim, link, 1000, 48 * 1024 * 1024, &end);
  sim.run();
  // 50331648 B / 25 GB/s = 2013265.92 ns, rounded up, after 10 us.
  EXPECT_EQ(end, 1000 + 10'000 + 2'013'266);
  EXPECT_EQ(link.alone_time(48 * 1024 * 1024), 10'000 + 2'013'266);
  EXPECT_EQ(link.counters().transfers, 1);
  EXPECT_EQ(link.counters().delay, 0);
  EXPECT_EQ(link.counters().busy, 2'013'266);
}

TEST(SharedLink, TwoEqualOverlappingTransfersEachTakeTwiceAsLong) {
  Simulator sim;
  SharedLink link(sim, {"nic", kGBps, 0}, kPrio);
  TimeNs a = -1, b = -1;
  start_at(sim, link, 0, 1'000'000, &a);
  start_at(sim, link, 0, 1'000'000, &b);
  sim.run();
  EXPECT_EQ(a, 2'000'000);
  EXPECT_EQ(b, 2'000'000);
  EXPECT_EQ(link.counters().delay, 2 * 1'000'000);
  EXPECT_EQ(link.counters().busy, 2'000'000);
}

TEST(SharedLink, EightOverlappingTransfersEachSeeAnEighth) {
  Simulator sim;
  SharedLink link(sim, {"nic", 25 * kGBps, 0}, kPrio);
  std::vector<TimeNs> ends(8, -1);
  for (auto& e : ends) start_at(sim, link, 0, 25'000'000, &e);
  sim.run();
  // 25 MB at 25 GB/s is 1 ms alone; at a share of 25/8 GB/s, 8 ms.
  for (TimeNs e : ends) EXPECT_EQ(e, 8'000'000);
}

TEST(SharedLink, ATransferThatStartsHalfwayFinishesWhenTheArithmeticSays) {
  // A: 1 ms alone from 0. B: the same from 0.5 ms. At 0.5 ms A has 0.5 ms
  // of work left and moves at half speed: it ends at 1.5 ms. B has then
  // moved 0.5 ms of its 1 ms, alone for the rest: it ends at 2 ms.
  Simulator sim;
  SharedLink link(sim, {"nic", kGBps, 0}, kPrio);
  TimeNs a = -1, b = -1;
  start_at(sim, link, 0, 1'000'000, &a);
  start_at(sim, link, 500'000, 1'000'000, &b);
  sim.run();
  EXPECT_EQ(a, 1'500'000);
  EXPECT_EQ(b, 2'000'000);
}

TEST(SharedLink, LatencyIsWaitedApartFromTheWire) {
  // Both wait 100 us, then share the wire: 2 x 1 ms each.
  Simulator sim;
  SharedLink link(sim, {"roce", kGBps, 100'000}, kPrio);
  TimeNs a = -1, b = -1;
  start_at(sim, link, 0, 1'000'000, &a);
  start_at(sim, link, 0, 1'000'000, &b);
  sim.run();
  EXPECT_EQ(a, 100'000 + 2'000'000);
  EXPECT_EQ(b, 100'000 + 2'000'000);
}

TEST(SharedLink, ThreeWaysThenTwoThenOne) {
  // Sizes 1, 2, 3 ms alone from 0: the first ends at 3 x 1 = 3 ms; the
  // second has 1 ms left, at half speed 2 ms more: 5 ms; the third has 1 ms
  // left alone: 6 ms (the link never idles: 1 + 2 + 3).
  Simulator sim;
  SharedLink link(sim, {"nic", kGBps, 0}, kPrio);
  TimeNs a = -1, b = -1, c = -1;
  start_at(sim, link, 0, 1'000'000, &a);
  start_at(sim, link, 0, 2'000'000, &b);
  start_at(sim, link, 0, 3'000'000, &c);
  sim.run();
  EXPECT_EQ(a, 3'000'000);
  EXPECT_EQ(b, 5'000'000);
  EXPECT_EQ(c, 6'000'000);
}

TEST(SharedLink, ABackgroundTransferTakesItsShareWithoutAnEventOfItsOwn) {
  Simulator sim;
  SharedLink link(sim, {"nic", kGBps, 0}, kPrio);
  TimeNs a = -1;
  sim.schedule_at(0, kPrio, [&] { link.start(1'000'000, {}); });
  start_at(sim, link, 0, 1'000'000, &a);
  sim.run();
  EXPECT_EQ(a, 2'000'000);
  // The two starts and the waited-for end: no event for the background one.
  EXPECT_EQ(sim.events_processed(), 3u);
  // Alone, a background transfer ends unseen; the next start finds it gone.
  TimeNs b = -1;
  sim.schedule_at(3'000'000, kPrio, [&] { link.start(4'000'000, {}); });
  start_at(sim, link, 10'000'000, 1'000'000, &b);
  sim.run();
  EXPECT_EQ(b, 11'000'000);
  EXPECT_EQ(link.counters().transfers, 4);
}

TEST(SharedLink, EndsAtTheSameInstantRunInStartOrder) {
  Simulator sim;
  SharedLink link(sim, {"nic", kGBps, 0}, kPrio);
  std::vector<int> order;
  sim.schedule_at(0, kPrio, [&] {
    for (int i = 0; i < 4; ++i) link.start(1000, [&order, i] { order.push_back(i); });
  });
  sim.run();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(sim.now(), 4000);
}

// Random starts and sizes: two runs give the same ends, every transfer
// takes at least its time alone, and the link moves bytes at its
// bandwidth while busy (work conserving, to rounding).
std::vector<TimeNs> random_run(uint32_t seed, TimeNs* busy) {
  Simulator sim;
  SharedLink link(sim, {"nic", 3 * kGBps, 2'000}, kPrio);
  std::mt19937 rng(seed);
  std::vector<TimeNs> ends(200, -1);
  for (size_t i = 0; i < ends.size(); ++i) {
    const TimeNs at = std::uniform_int_distribution<TimeNs>(0, 5'000'000)(rng);
    const Bytes bytes = std::uniform_int_distribution<Bytes>(1, 300'000)(rng);
    sim.schedule_at(at, kPrio, [&sim, &link, &ends, i, bytes, at] {
      link.start(bytes, [&sim, &ends, i, at, bytes, &link] {
        ends[i] = sim.now();
        EXPECT_GE(sim.now() - at, link.alone_time(bytes));
      });
    });
  }
  sim.run();
  *busy = link.counters().busy;
  return ends;
}

TEST(SharedLink, RunsAreTheSameBitForBit) {
  TimeNs busy1 = 0, busy2 = 0;
  const std::vector<TimeNs> a = random_run(7, &busy1);
  const std::vector<TimeNs> b = random_run(7, &busy2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(busy1, busy2);
  for (TimeNs e : a) EXPECT_GE(e, 0);
}

TEST(SharedLink, AHopPathEndsWithItsSlowestHop) {
  Simulator sim;
  SharedLink port(sim, {"port", 2 * kGBps, 1'000}, kPrio);
  SharedLink nic(sim, {"nic", kGBps, 0}, kPrio);
  const LinkPath path{&port, &nic};
  EXPECT_EQ(alone_over(path, 1'000'000), 1'000'000);
  TimeNs a = -1, b = -1;
  sim.schedule_at(0, kPrio, [&] {
    transfer_over(path, 1'000'000, [&] { a = sim.now(); });
    // A second transfer on the NIC only: the path's NIC hop now shares.
    nic.start(1'000'000, [&] { b = sim.now(); });
  });
  sim.run();
  EXPECT_EQ(a, 2'000'000);
  EXPECT_EQ(b, 2'000'000);
}

TEST(SharedLink, RefusesANonPositiveBandwidthAndOverflow) {
  Simulator sim;
  EXPECT_THROW(SharedLink(sim, {"nic", 0, 0}, kPrio), std::invalid_argument);
  EXPECT_THROW(SharedLink(sim, {"nic", -5, 0}, kPrio), std::invalid_argument);
  EXPECT_THROW(SharedLink(sim, {"nic", kGBps, -1}, kPrio), std::invalid_argument);
  SharedLink slow(sim, {"slow", 1, 0}, kPrio);
  // 2^60 bytes at 1 B/s: 1.15e27 ns.
  EXPECT_THROW(slow.start(int64_t{1} << 60, [] {}), std::overflow_error);
  EXPECT_THROW(slow.start(0, [] {}), std::logic_error);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
