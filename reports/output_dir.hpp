#pragma once
// An output folder that appears whole or not at all: files are written into a
// temporary sibling folder, and commit() renames it into place (replacing an
// earlier run's folder). Without commit(), e.g. when a run throws, the
// temporary folder is removed and no half-written output is left behind.
#include <string>

namespace kvsim {

class OutputDir {
 public:
  explicit OutputDir(std::string final_path);
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
  bool committed_ = false;
};

// Writes a whole file through a temporary name and a rename.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace kvsim
