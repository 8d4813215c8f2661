#pragma once
// Which kvsim produced a file: the CMake project version and the git commit
// of the checkout it was built from ("unknown" outside a git checkout). Both
// are compiled into base/build_info.cpp alone, so a new commit rebuilds one
// object and every other object stays shareable by a compiler cache (as
// base/source_paths.cpp does for the checkout's paths).
namespace kvsim::build_info {

const char* version();  // "0.1.0"
const char* commit();   // 40 hex digits, or "unknown"

}  // namespace kvsim::build_info
