#pragma once
// `scheduler.session_retention:`, the serving engine's session KV retention
// (sim/serve/session_retention.hpp): its keys and its reader.
#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

config::ComponentInfo session_retention_info();
// The section under `scheduler` (`scheduler` is the reader of that map);
// off when absent.
SessionRetentionConfig read_session_retention(config::MapReader& scheduler);

}  // namespace kvsim
