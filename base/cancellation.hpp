#pragma once
// A request to stop a long computation early, from another thread: the
// Python module (SPEC 11 "Interfaces") runs a command on a worker thread and
// asks it to stop when the user presses Ctrl-C. The engine checks between
// steps, a cache replay between requests and a sweep's pool between
// variants; each throws Cancelled, which unwinds like any error (temporary
// output is removed, finished output stays). The command line never asks:
// its Ctrl-C ends the process.
#include <stdexcept>

namespace kvsim {

class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled") {}
};

// Asks every running computation of this process to stop (any thread).
void request_cancel();
// Forgets the request (before the next computation starts).
void clear_cancel();
bool cancel_requested();
// Throws Cancelled when a stop was asked for.
void throw_if_cancelled();

}  // namespace kvsim
