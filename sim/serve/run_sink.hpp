#pragma once
// Where a run streams its per-request and timeline rows while it runs, so
// memory does not grow with the number of finished requests. reports/ writes
// them to CSV; tests and benchmarks use NullRunSink.
#include <cstdint>
#include <string_view>

#include "base/units.hpp"

namespace kvsim {

struct RequestRow {
  uint64_t id = 0;
  std::string_view status;  // completed | rejected
  TimeNs arrival = 0;
  TimeNs first_token = -1;
  TimeNs finished = -1;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_tokens = 0;
  int32_t preemptions = 0;
  uint64_t session = 0;
  int32_t turn = 0;
};

struct TimelineRow {
  TimeNs time = 0;
  int64_t running = 0, waiting = 0, swapped = 0;
  int64_t blocks_used = 0;
  Bytes kv_used_bytes = 0;
  int64_t tokens_held = 0;
  int64_t step_tokens = 0;  // tokens of the steps launched since the previous row
  TimeNs step_latency = 0;  // their summed duration
  // false for an engine without a block pool (the dialog engine's buffers):
  // swapped and blocks_used mean nothing there and are left out of its file.
  bool pool_of_blocks = true;
};

class RunSink {
 public:
  virtual ~RunSink() = default;
  virtual void request(const RequestRow& row) = 0;
  virtual void timeline(const TimelineRow& row) = 0;
};

class NullRunSink final : public RunSink {
 public:
  void request(const RequestRow&) override {}
  void timeline(const TimelineRow&) override {}
};

}  // namespace kvsim
