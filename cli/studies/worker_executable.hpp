#pragma once
// The executable a sweep or search spawns per variant (`kvsim run ...`,
// cli/studies/sweep_runner.hpp): this process's own, unless an embedding
// that is not kvsim (the Python module, inside python3) names the kvsim
// binary it was built with.
#include <string>

namespace kvsim {

std::string worker_executable();
// An empty path restores the default (this process's executable).
void set_worker_executable(std::string path);

}  // namespace kvsim
