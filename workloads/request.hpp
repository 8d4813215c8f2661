#pragma once
// A request as the workload produces it and the engine consumes it.
#include <cstdint>
#include <optional>
#include <vector>

#include "base/units.hpp"
#include "workloads/token_content.hpp"

namespace kvsim {

struct Request {
  uint64_t id = 0;      // arrival order, 0-based, unique in a run
  TimeNs arrival = 0;   // when it reaches the server
  TokenContent prompt;  // token ids (real content: hashes are computed on them)
  // Token ids the model "generates"; size() is the number of output tokens.
  // Deterministic so that a chat's next turn, which carries this reply in its
  // history, hashes to the same blocks.
  TokenContent output;
  uint64_t session = 0;  // chat session id (0 for single-shot requests)
  int32_t turn = 0;      // 0-based turn (call) within the session
  // The session this one branched from (an agent's sub-agent shares its
  // parent's context), 0 when none.
  uint64_t parent_session = 0;
  // The session sends another call after this one completes: what a server
  // that retains a session's KV between calls keys on (an agent framework
  // knows whether its loop goes on). False for single-shot requests.
  bool session_continues = false;
  int32_t prefix_group = -1;  // shared-prefix group, -1 when none
  // The llama-server slot the request names (its `id_slot`), -1: the
  // server picks one (sim/cache/llama_cells_pool.hpp).
  int32_t id_slot = -1;
  // Prompt tokens whose KV arrives with the request (a decode instance of a
  // prefill/decode split receives it from the prefill instance): the
  // scheduler reserves room for them but does not compute them. 0 for a
  // request from a workload.
  int64_t kv_ready_tokens = 0;
  // llama-bench runs (kind: llama_bench) on the dialog engine: the cache is
  // cleared first (llama_memory_clear before every repetition), the reply's
  // last token is not fed to the next run (llama-bench decodes no sampled
  // token), and `bench_test` >= 0 marks the timed run of that test.
  bool bench = false;
  bool clear_context = false;
  int32_t bench_test = -1;
};

// A stream of requests in arrival order. Streams are pulled: the engine asks
// for the next arrival time and takes requests as the clock reaches them, so
// memory does not grow with the length of the workload.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // Arrival time of the next request that is known now, or nullopt when none
  // is known yet (a closed-loop source learns of its next request only when
  // an earlier one completes) or the source is exhausted.
  virtual std::optional<TimeNs> next_arrival() const = 0;
  // Takes the next request. Precondition: next_arrival() has a value.
  virtual Request take() = 0;
  // A request finished at `now`; sources whose future depends on completions
  // (chat turns) react here. May make next_arrival() earlier.
  virtual void on_complete(const Request& request, TimeNs now) {
    (void)request;
    (void)now;
  }
  // True when no request will ever come again.
  virtual bool exhausted() const = 0;
  // Input records dropped as malformed (trace readers with on_error: skip).
  virtual int64_t skipped_records() const { return 0; }
};

}  // namespace kvsim
