#include "base/source_paths.hpp"

namespace kvsim::source_paths {

const char* config_dir() {
  return KVSIM_SOURCE_CONFIG_DIR;
}

const char* shared_data_dir() {
  return KVSIM_SOURCE_SHARED_DATA_DIR;
}

}  // namespace kvsim::source_paths
