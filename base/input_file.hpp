#pragma once
// Whether a path can be read as an input file, and reading one. Every reader
// of a file the user names asks this first: a directory reads as nothing (or
// fails with a misleading message) and a device such as /dev/zero or a FIFO
// reads forever, so only regular files are inputs (SPEC 3: exit 2 naming the
// file). A file that exists but cannot be read (/proc/self/mem, a bad disk
// sector) is the same kind of error, never an internal one.
//
// Every input asked about is remembered for the life of the process: kvsim
// never writes over a file it read, nor replaces a folder holding one,
// whatever --force says (reports/output_rule.hpp).
#include <string>
#include <vector>

namespace kvsim {

// "" when `path` is a regular file (after following symlinks); otherwise
// what is wrong with it: "not found", "is a directory" or "is not a
// regular file (a device, FIFO or socket)". A regular file is remembered
// as an input of this process.
std::string input_file_problem(const std::string& path);

// Reads the whole of `path` into `text`: "" when it was read, else what is
// wrong (input_file_problem's words, or "cannot be read: <the OS's reason>").
std::string read_input_file(const std::string& path, std::string& text);

// Marks `path` as an input of this process (a reader that streams its file).
void remember_input_file(const std::string& path);

// Whether `path` is a file this process read as input (the same file, by
// device and inode, whatever the spelling) or a folder that holds one; the
// input's path when so, else "".
std::string input_file_at_or_under(const std::string& path);

// Every input this process has remembered, by canonical path, sorted.
std::vector<std::string> input_files_read();

// Drops a UTF-8 byte order mark from the start of a header line (spreadsheet
// programs write one; it is no part of the first column's name).
void strip_utf8_bom(std::string& line);

}  // namespace kvsim
