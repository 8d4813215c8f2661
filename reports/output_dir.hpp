#pragma once
// An output folder that appears whole or not at all, and that never replaces
// what kvsim did not write (SPEC 11 "Outputs", non-negotiable 3).
//
// Files are written into a temporary sibling folder (.NAME.tmp-PID) that
// carries a marker file (.kvsim); commit() renames it into place. Without
// commit(), e.g. when a run throws or is interrupted by SIGINT, SIGTERM or
// SIGHUP, the temporary folder is removed. The constructor refuses, before
// any work is done, a destination that kvsim did not write: an existing
// file, or a non-empty folder without the marker holding anything but the
// files kvsim writes (an earlier kvsim's output, from before the marker,
// holds only those and is replaced), unless `force`; and,
// even with `force`, the filesystem root, the home folder, the working
// folder or any folder holding it. A lock (.NAME.lock beside it) keeps two
// runs from writing one destination; temporary folders left by processes
// that no longer exist are removed on the next run into the same parent.
#include <stdexcept>
#include <string>

namespace kvsim {

// A destination kvsim will not write into (exit code 2: the input is at fault).
class OutputRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
  // Moves the folder into place. Throws std::runtime_error on failure.
  void commit();

 private:
  std::string final_;
  std::string temp_;
  std::string lock_path_;
  int lock_fd_ = -1;
  bool committed_ = false;
};

// The file that marks a folder as kvsim's output.
constexpr const char* kOutputMarker = ".kvsim";

// For outputs written in place rather than renamed into place (a sweep's
// journal grows while it runs and --resume continues it): applies the same
// refusals as OutputDir, then creates the folder with its marker. Throws
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

// Writes a whole file through a temporary name and a rename.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace kvsim
