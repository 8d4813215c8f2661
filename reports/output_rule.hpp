#pragma once
// The one rule for every path kvsim writes (SPEC 11 "Outputs", non-negotiable
// 3): run folders, --trace, compare, capacity, calibrate, hitcurve, sweep and
// search folders, and generate's session files all ask it before they write
// and again before they rename into place.
//
// A path may be written when
//   - nothing is there; or
//   - kvsim's own marker proves kvsim wrote what is there: a folder holding
//     the .kvsim file, a file the writer recognises as its own (a trace with
//     kvsim's header and generator line, a session file with its marker
//     line); or
//   - `force` is given and what is there is a user's regular file (for a
//     file) or a user's folder (for a folder).
// Never, whatever `force` says: a device, socket, FIFO or symbolic link; a
// file this process read as input, or a folder holding one (the scenario
// file itself); the filesystem root, the home folder, the working folder or
// a folder holding it; a folder where a file goes or a file where a folder
// goes (a file's path written as a folder's, ending in '/', included). An
// empty folder is taken for a folder.
//
// Writes go to a temporary name in the same folder (.NAME.tmp-PID) and are
// renamed into place; temporary names are removed on every exit path: by
// their owner's destructor, and on the signals that end a process by
// default (HUP INT QUIT TERM PIPE ALRM USR1 USR2 XCPU XFSZ VTALRM PROF, and
// ABRT) by a handler that then re-raises the signal. Worker processes a
// sweep started are sent SIGTERM by the same handler.
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

namespace kvsim {

// A destination kvsim will not write into (exit code 2: the input is at fault).
class OutputRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class OutputShape { folder, file };

struct OutputTarget {
  std::string flag = "--out";   // how messages name the destination
  std::filesystem::path path;   // absolute and normal (output_target() makes it so)
  bool names_a_folder = false;  // written with a trailing '/', or as . or ..
  OutputShape shape = OutputShape::folder;
  bool force = false;
  // Whether the command has a --force flag to offer (generate's session files do not).
  bool force_flag = true;
  // For a file: whether the regular file at `path` is one kvsim wrote.
  std::function<bool(const std::filesystem::path&)> kvsim_wrote_file;
};

// `path` made absolute and normal (a trailing '/' dropped).
OutputTarget output_target(const std::string& flag, const std::string& path, OutputShape shape,
                           bool force);

// Throws OutputRefused, naming the flag, what is there and what is allowed,
// unless the rule above lets `target` be written.
void refuse_unless_writable(const OutputTarget& target);

// The file that marks a folder as kvsim's output, and its text.
constexpr const char* kOutputMarker = ".kvsim";
const char* output_marker_text();

// Removes `path` (a file, or a folder and everything in it) with system
// calls alone, so a signal handler may call it while another thread is in
// malloc; a best effort that reports nothing.
void remove_tree_signal_safe(const char* path);

// A temporary path (a file or a folder) removed when this object goes, when
// the process ends by one of the signals above, or never if released.
class TemporaryPath {
 public:
  TemporaryPath() = default;
  explicit TemporaryPath(std::string path);
  ~TemporaryPath();
  TemporaryPath(const TemporaryPath&) = delete;
  TemporaryPath& operator=(const TemporaryPath&) = delete;
  TemporaryPath(TemporaryPath&& other) noexcept;
  TemporaryPath& operator=(TemporaryPath&& other) noexcept;

  const std::string& path() const { return path_; }
  // Keeps the path (it was renamed into place): nothing is removed.
  void release();

 private:
  void remove_now();

  std::string path_;
  int slot_ = -1;
};

// ".NAME.tmp-PID" beside `final_path`.
std::string temporary_sibling(const std::filesystem::path& final_path);

// Installs the signal handlers (once; idempotent). Every TemporaryPath does.
void install_cleanup_handlers();

// A child process to send SIGTERM to when this process is ended by a signal.
void register_child_process(pid_t pid);
void unregister_child_process(pid_t pid);

// Writes a whole file through a temporary name beside it and a rename;
// throws std::filesystem::filesystem_error with the OS's reason (a full
// disk, a read-only folder). The temporary file is removed on failure.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace kvsim
