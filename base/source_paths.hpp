#pragma once
// Where this build's source tree keeps its configs and where the shared data
// sits beside it (../shared/data, referenced in place and never copied). The
// paths are compiled into base/source_paths.cpp alone, so that no other
// object file depends on where the tree was checked out.
namespace kvsim::source_paths {

const char* config_dir();       // <source>/configs
const char* shared_data_dir();  // <source>/../shared/data

}  // namespace kvsim::source_paths

#define KVSIM_CONFIG_DIR (::kvsim::source_paths::config_dir())
#define KVSIM_SHARED_DATA_DIR (::kvsim::source_paths::shared_data_dir())
