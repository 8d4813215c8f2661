#pragma once
// The source tree and the kvsim binary a test runs against, compiled into
// tests/support/test_paths.cpp alone (see base/source_paths.hpp).
#include "base/source_paths.hpp"

namespace kvsim::test_paths {

const char* source_dir();
const char* kvsim_binary();

}  // namespace kvsim::test_paths

#define KVSIM_SOURCE_DIR (::kvsim::test_paths::source_dir())
#define KVSIM_BINARY (::kvsim::test_paths::kvsim_binary())
