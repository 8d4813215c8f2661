#include "cli/studies/failure_class.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>

namespace kvsim {
namespace {
int g_failure_fd = -1;
}

const char* failure_class_name(FailureClass c) {
  switch (c) {
    case FailureClass::invalid_configuration:
      return "invalid_configuration";
    case FailureClass::environment:
      return "environment";
    case FailureClass::internal:
      break;
  }
  return "internal";
}

void adopt_worker_parent() {
  const char* parent = std::getenv(kWorkerParentEnv);
  if (parent != nullptr && *parent != '\0') {
    const long pid = std::strtol(parent, nullptr, 10);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    // The parent may have died before the request took effect.
    if (pid > 0 && ::getppid() != static_cast<pid_t>(pid)) std::raise(SIGTERM);
  }
  const char* fd_text = std::getenv(kFailureFdEnv);
  if (fd_text != nullptr && std::strtol(fd_text, nullptr, 10) == kFailureFd &&
      ::fcntl(kFailureFd, F_GETFD) >= 0) {
    g_failure_fd = kFailureFd;
    ::fcntl(g_failure_fd, F_SETFD, FD_CLOEXEC);  // not gnuplot's
  }
  ::unsetenv(kWorkerParentEnv);
  ::unsetenv(kFailureFdEnv);
}

void tell_failure_class(FailureClass c) {
  if (g_failure_fd < 0) return;
  const char* name = failure_class_name(c);
  [[maybe_unused]] const ssize_t n = ::write(g_failure_fd, name, std::strlen(name));
}

}  // namespace kvsim
