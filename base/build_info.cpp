#include "base/build_info.hpp"

namespace kvsim::build_info {

const char* version() {
  return KVSIM_BUILD_VERSION;
}

const char* commit() {
  return KVSIM_BUILD_COMMIT;
}

}  // namespace kvsim::build_info
