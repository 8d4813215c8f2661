// The prefill_decode_csv trace reader, streamed as a run replays it (fuzz_trace.hpp).
#include "fuzz/fuzz_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvsim::fuzz::replay_trace("prefill_decode_csv", data, size);
}
