// One sweep variant in a child process (cli/studies/sweep_runner.hpp): the
// child is `kvsim run BASE --set ... --quiet --out FOLDER`, started by
// posix_spawn with the failure pipe on descriptor 3 and told to die with
// this process (cli/studies/failure_class.hpp).
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/cancellation.hpp"
#include "cli/studies/failure_class.hpp"
#include "cli/studies/sweep_runner.hpp"
#include "reports/output_rule.hpp"

extern char** environ;

namespace kvsim {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// The last non-empty line of a child's stderr, without the "kvsim: " prefix.
std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  for (const char* prefix : {"kvsim: error: ", "kvsim: internal error: ", "kvsim: "}) {
    if (last.rfind(prefix, 0) == 0) return last.substr(std::string(prefix).size());
  }
  return last;
}

// The parent's environment plus the two worker variables.
std::vector<std::string> worker_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view v(*e);
    if (v.rfind(std::string(kWorkerParentEnv) + "=", 0) == 0 ||
        v.rfind(std::string(kFailureFdEnv) + "=", 0) == 0)
      continue;
    env.emplace_back(v);
  }
  env.push_back(fmt::format("{}={}", kWorkerParentEnv, ::getpid()));
  env.push_back(fmt::format("{}={}", kFailureFdEnv, kFailureFd));
  return env;
}

// What the child wrote on the failure pipe (it has exited: no waiting).
std::string read_failure_class(int fd) {
  std::string text;
  char buffer[64];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  return text;
}

// Signals that end a process from outside (a user, the OOM killer, a
// launcher): the environment; any other is a crash of kvsim itself.
bool signal_from_outside(int sig) {
  return sig == SIGKILL || sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT ||
         sig == SIGPIPE || sig == SIGXFSZ || sig == SIGXCPU || sig == SIGUSR1 || sig == SIGUSR2 ||
         sig == SIGALRM;
}

// Returns when the child has exited, or has been sent SIGTERM because a
// stop was asked for (base/cancellation.hpp): its descriptor (pidfd) wakes
// the wait at once when it exits, and a stop is seen within 100 ms. Where
// the kernel gives no pidfd the caller's waitpid alone waits, as before.
void wait_for_child_or_cancel(pid_t pid) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready > 0) break;
    if (ready < 0 && errno != EINTR) break;
    if (cancel_requested()) {
      ::kill(pid, SIGTERM);
      break;
    }
  }
  ::close(fd);
}

}  // namespace

VariantOutcome run_variant_process(const VariantTask& task, const PoolOptions& options) {
  VariantOutcome o;
  o.index = task.index;
  o.label = task.label;
  o.sets = task.sets;
  o.devices = task.devices;
  std::vector<std::string> args = {options.kvsim_binary, "run", options.base, "--quiet", "--out",
                                   task.folder};
  for (const auto& s : task.sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = worker_environment();
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string log = task.folder + ".log";

  int pipe_fds[2] = {-1, -1};
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    o.status = "failed";
    o.reason = failure_class_name(FailureClass::environment);
    o.exit_code = -1;
    o.message = fmt::format("cannot make a pipe for the worker: {}", std::strerror(errno));
    return o;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], kFailureFd);
  pid_t pid = 0;
  const int rc =
      posix_spawn(&pid, options.kvsim_binary.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    o.status = "failed";
    o.reason = failure_class_name(FailureClass::environment);
    o.exit_code = -1;
    o.message = fmt::format("cannot start {}: {}", options.kvsim_binary, std::strerror(rc));
    return o;
  }
  register_child_process(pid);
  wait_for_child_or_cancel(pid);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  unregister_child_process(pid);
  ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  const std::string told = read_failure_class(pipe_fds[0]);
  ::close(pipe_fds[0]);
  int signal = 0;
  if (WIFEXITED(wstatus)) {
    o.exit_code = WEXITSTATUS(wstatus);
  } else {
    signal = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
    o.exit_code = 128 + signal;
  }
  const std::string metrics_path = task.folder + "/metrics.json";
  std::error_code ec;
  if ((o.exit_code == 0 || o.exit_code == 1) && fs::is_regular_file(metrics_path, ec)) {
    o.status = o.exit_code == 0 ? "ok" : "expect_failed";
    std::ifstream in(metrics_path);
    o.metrics = Json::parse(in);
    o.metrics["sim"].erase("wall_s");  // the host's time: not part of a reproducible sweep
    if (o.exit_code == 1) o.message = last_line(log);
    return o;
  }
  // Rejected only on the child's word that its configuration is invalid; an
  // exit 2 without it (the log could not even be written) is the
  // environment's, never a verdict on the variant.
  if (told == failure_class_name(FailureClass::invalid_configuration)) {
    o.status = "rejected";
    o.reason = told;
  } else {
    o.status = "failed";
    if (told == failure_class_name(FailureClass::internal) || o.exit_code == 3 ||
        (signal != 0 && !signal_from_outside(signal)))
      o.reason = failure_class_name(FailureClass::internal);
    else
      o.reason = failure_class_name(FailureClass::environment);
  }
  o.message = last_line(log);
  if (o.message.empty())
    o.message = signal != 0 ? fmt::format("ended by signal {} ({})", signal, strsignal(signal))
                            : fmt::format("exit status {}", o.exit_code);
  return o;
}

}  // namespace kvsim
