#pragma once
// Why a run failed, as a sweep or search records it for each variant (SPEC
// 11 "Studies"): only an invalid configuration is "rejected" (the variant
// cannot run as written, and --resume keeps the verdict); a broken
// environment (a full disk, a folder another process holds, no memory) or an
// internal error is "failed", and --resume runs the variant again.
//
// A variant runs as a child `kvsim run` process; the parent passes it two
// environment variables: KVSIM_WORKER_PARENT (the parent's pid: the child
// asks the kernel for SIGTERM when that parent dies, so a killed sweep takes
// its workers with it) and KVSIM_FAILURE_FD (a pipe the child's main writes
// its failure class to, one word, before it exits non-zero).
#include <string>

namespace kvsim {

enum class FailureClass { invalid_configuration, environment, internal };

// "invalid_configuration", "environment", "internal".
const char* failure_class_name(FailureClass c);

constexpr const char* kWorkerParentEnv = "KVSIM_WORKER_PARENT";
constexpr const char* kFailureFdEnv = "KVSIM_FAILURE_FD";
constexpr int kFailureFd = 3;  // the descriptor the child finds the pipe on

// In a child started by a sweep: dies with the parent (PR_SET_PDEATHSIG),
// keeps the failure pipe from its own children, and forgets the variables.
// Does nothing in a process the user started.
void adopt_worker_parent();

// Tells the parent, when there is one, why this process is about to exit
// non-zero. Async-signal-safe (one write()).
void tell_failure_class(FailureClass c);

}  // namespace kvsim
