// The mooncake trace reader, streamed as a run replays it (fuzz_trace.hpp).
#include "fuzz/fuzz_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvsim::fuzz::replay_trace("mooncake", data, size);
}
