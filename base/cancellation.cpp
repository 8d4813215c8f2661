#include "base/cancellation.hpp"

#include <atomic>

namespace kvsim {
namespace {
// Relaxed is enough: the flag carries no data, and a check that misses a
// request by a few steps sees it at the next.
std::atomic<bool> g_cancel{false};
}  // namespace

void request_cancel() {
  g_cancel.store(true, std::memory_order_relaxed);
}

void clear_cancel() {
  g_cancel.store(false, std::memory_order_relaxed);
}

bool cancel_requested() {
  return g_cancel.load(std::memory_order_relaxed);
}

void throw_if_cancelled() {
  if (cancel_requested()) throw Cancelled();
}

}  // namespace kvsim
