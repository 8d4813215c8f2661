// The llama2.c checkpoint reader: a header of seven int32, then the tensors
// it sizes. A damaged header must be refused before anything is allocated.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "kernels/attention.hpp"
#include "kernels/llama2_model.hpp"

// The paged attention kernels (run by generation, never by the reader)
// dispatch on CPU features clang 14 cannot name, so the harness links these
// stand-ins and builds without them.
namespace kvsim::kernels {
void paged_varlen_attention(const KvPool&, int64_t, const float*, std::span<const int32_t>,
                            std::span<const int32_t>, std::span<const std::span<const int32_t>>,
                            int64_t, float, float*) {
  std::abort();
}
void paged_decode_attention(const KvPool&, int64_t, const float*, std::span<const int32_t>,
                            std::span<const std::span<const int32_t>>, int64_t, float, float*) {
  std::abort();
}
}  // namespace kvsim::kernels

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kvsim::fuzz::MemoryFile file(data, size);
  try {
    (void)kvsim::kernels::load_llama2_checkpoint(file.path());
  } catch (const std::runtime_error&) {
  }
  return 0;
}
