#include "sim/serve/session_retention_spec.hpp"

#include <fmt/format.h>

namespace kvsim {
namespace {
// A day: longer than any tool call or think time a session waits through.
constexpr TimeNs kMaxTtl = 24 * 3600 * kNsPerS;
}  // namespace

config::ComponentInfo session_retention_info() {
  using namespace config;
  return {
      "section",
      "scheduler.session_retention",
      "a finished call whose session sends another keeps its KV blocks pinned (not evictable) "
      "until that call is admitted or the TTL runs out (Continuum, arXiv 2511.02230; SGLang's "
      "TTL prefix pin); absent: off, finished calls' blocks are evictable at once (vLLM)",
      {duration_param("ttl", std::nullopt, 1, kMaxTtl,
                      "how long a pin waits for its session's next call, from the call's end"),
       choice_param("on_pressure", "evict_oldest", {"evict_oldest", "keep"},
                    "when an admission, swap-in or growth finds no free block: evict_oldest "
                    "releases the oldest pins first (soft retention, SGLang's retention_seconds, "
                    "LMCache's retention TTL); keep never releases a pin early (SGLang's hard "
                    "TTL pin): new work waits or running work is preempted"),
       own_reader(number_param("max_pinned_fraction", 1.0, 0.0, 1.0, "fraction of the pool",
                               "most of the pool's blocks pins may hold, in (0, 1]; a pin "
                               "beyond it releases older pins (evict_oldest) or is not made "
                               "(keep), as SGLang's max pinned ratio refuses it"))}};
}

SessionRetentionConfig read_session_retention(config::MapReader& scheduler) {
  SessionRetentionConfig c;
  const config::Node node = scheduler.child("session_retention");
  if (!node.defined()) return c;
  config::MapReader r(node);
  const config::ComponentInfo info = session_retention_info();
  const config::ParamValues v = config::read_params(r, info);
  c.on = true;
  c.ttl = v.integer("ttl");
  c.on_pressure = v.string("on_pressure") == "keep"
                      ? SessionRetentionConfig::OnPressure::keep
                      : SessionRetentionConfig::OnPressure::evict_oldest;
  const config::Node fraction = r.child("max_pinned_fraction");
  if (fraction.defined()) {
    const auto f = fraction.as_double(-1e9, 1e9);
    if (f && (*f <= 0 || *f > 1))
      fraction.error(fmt::format("must be in (0, 1], got {}", fraction.raw().Scalar()),
                     "a fraction of the pool's blocks in (0, 1], e.g. 0.5");
    else if (f)
      c.max_pinned_fraction = *f;
  }
  r.finish();
  return c;
}

}  // namespace kvsim
