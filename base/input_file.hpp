#pragma once
// Whether a path can be read as an input file. Every reader of a file the
// user names asks this first: a directory reads as nothing (or fails with a
// misleading message) and a device such as /dev/zero or a FIFO reads
// forever, so only regular files are inputs (SPEC 3: exit 2 naming the file).
#include <string>

namespace kvsim {

// "" when `path` is a regular file (after following symlinks); otherwise
// what is wrong with it: "not found", "is a directory" or "is not a
// regular file (a device, FIFO or socket)".
std::string input_file_problem(const std::string& path);

}  // namespace kvsim
