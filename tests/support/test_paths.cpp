#include "tests/support/test_paths.hpp"

namespace kvsim::test_paths {

const char* source_dir() {
  return KVSIM_TEST_SOURCE_DIR;
}

const char* kvsim_binary() {
  return KVSIM_TEST_BINARY;
}

}  // namespace kvsim::test_paths
