#pragma once
// A request to stop a long computation early, from another thread: the
// Python module (SPEC 11 "Interfaces") runs a command on a worker thread and
// asks it to stop when the user presses Ctrl-C. The engine checks between
// steps, a cache replay between requests, generation between tokens and a
// sweep's pool between variants; each throws Cancelled, which unwinds like
// an error (temporary output is removed, finished output stays). The command
// line never asks: its Ctrl-C ends the process.
namespace kvsim {

// Not a std::exception: a study that records a row's failure and goes on
// (calibration catches std::exception per row) must not take a stop
// request for one row's error and write a table of them.
class Cancelled {
 public:
  const char* what() const noexcept { return "cancelled"; }
};

// Asks every running computation of this process to stop (any thread).
void request_cancel();
// Forgets the request (before the next computation starts).
void clear_cancel();
bool cancel_requested();
// Throws Cancelled when a stop was asked for.
void throw_if_cancelled();

}  // namespace kvsim
