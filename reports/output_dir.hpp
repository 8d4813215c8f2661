#pragma once
// An output folder that appears whole or not at all, and that never replaces
// what kvsim did not write (SPEC 11 "Outputs", non-negotiable 3; the rule
// itself is reports/output_rule.hpp).
//
// Files are written into a temporary sibling folder (.NAME.tmp-PID) that
// carries a marker file (.kvsim); commit() checks the rule again and renames
// it into place. Without commit(), e.g. when a run throws, a disk fills up
// while the folder is made, or a signal ends the process, the temporary
// folder and the lock are removed. The constructor refuses, before any work
// is done, a destination the rule does not allow. A lock (.NAME.lock beside
// it) keeps two runs from writing one destination; temporary folders left by
// processes that no longer exist are removed on the next run into the same
// parent.
#include <string>

#include "reports/output_rule.hpp"

namespace kvsim {

class OutputDir {
 public:
  // Throws OutputRefused when `final_path` may not be replaced.
  explicit OutputDir(std::string final_path, bool force = false);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  // Path of a file inside the (temporary) folder.
  std::string file(const std::string& name) const;
  const std::string& final_path() const { return final_; }
  // Moves the folder into place. Throws OutputRefused when what is now at
  // the destination may not be replaced, std::runtime_error on failure.
  void commit();

 private:
  OutputTarget target_;
  std::string final_;
  TemporaryPath lock_file_;
  TemporaryPath temp_;
  int lock_fd_ = -1;
};

// For outputs written in place rather than renamed into place (a sweep's
// journal grows while it runs and --resume continues it): applies the same
// rule as OutputDir, then creates the folder with its marker. Throws
// OutputRefused.
void claim_output_folder(const std::string& path, bool force = false);

// A scenario name as one safe path component: '/', '\', control characters
// and NUL become '_', a leading '.' becomes '_' (no hidden folders, no "..")
// and the result is at most 96 bytes; an empty name becomes "scenario".
std::string safe_path_component(const std::string& name);

// A folder for one invocation of a command that has no natural name for its
// output (capacity, calibrate): `stem` when nothing is there yet, else the
// first of stem-2, stem-3, ... that does not exist, so a second invocation
// never replaces the first one's report.
std::string fresh_output_folder(const std::string& stem);

}  // namespace kvsim
