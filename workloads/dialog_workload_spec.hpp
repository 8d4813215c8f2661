#pragma once
// `kind: dialog` (SPEC 5, seed 002): one user's turns on a phone NPU.
// Filled in by the on-device issue (issue 4).
#include <cstdint>

namespace kvsim {

struct DialogWorkloadSpec {};

}  // namespace kvsim
