// The C++ half of the `kvsim` Python package (SPEC 11 "Interfaces"): it runs
// the command line's own commands (cli/cmd_*.cpp, the very functions `kvsim
// <command>` runs, parsed from the same options) in this process, and says
// how each ended as `kvsim` would: its exit code and what it printed. The
// package's Python half (python/kvsim/*.py) turns arguments into the
// options, reads the files the command wrote and raises kvsim.Error.
//
// A command runs on a thread of its own with the GIL released; the calling
// thread checks for signals every 50 ms and, on Ctrl-C, asks the command to
// stop (base/cancellation.hpp), waits for it and raises KeyboardInterrupt.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/build_info.hpp"
#include "base/cancellation.hpp"
#include "base/checked_math.hpp"
#include "base/diagnostics.hpp"
#include "base/source_paths.hpp"
#include "cli/commands.hpp"
#include "cli/studies/run_folder.hpp"
#include "cli/studies/worker_executable.hpp"
#include "reports/output_rule.hpp"
#include "sim/scenario/expect.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/serve/step_observer.hpp"

namespace py = pybind11;

namespace kvsim::python {
namespace {

// How a command ended, as main() would have ended the process.
struct Outcome {
  int exit_code = 0;
  std::string out, err;  // what it printed on stdout and stderr
  // "" (exit 0 or a failed expectation), "config", "input", "check",
  // "memory", "internal" or "cancelled".
  std::string kind;
  std::string message;  // the error's text without the "kvsim: error: " prefix
  std::vector<config::Diagnostic> diagnostics;
};

// Commands print with std::cout/std::cerr: while one runs both go to
// strings, so one command runs at a time in this process.
std::mutex& command_mutex() {
  static std::mutex m;
  return m;
}

struct CapturedStreams {
  std::ostringstream out, err;
  std::streambuf* old_out;
  std::streambuf* old_err;
  CapturedStreams()
      : old_out(std::cout.rdbuf(out.rdbuf())), old_err(std::cerr.rdbuf(err.rdbuf())) {}
  ~CapturedStreams() {
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
  }
};

// The exception ladder of cli/main.cpp, each case with its exit code and
// the text main() prints.
template <class Body>
Outcome guarded(Body&& body) {
  std::lock_guard lock(command_mutex());
  Outcome o;
  CapturedStreams streams;
  const auto fail = [&](int code, const char* kind, std::string message, const char* prefix) {
    o.exit_code = code;
    o.kind = kind;
    o.message = std::move(message);
    std::cerr << prefix << o.message << "\n";
  };
  try {
    o.exit_code = body();
  } catch (const Cancelled&) {
    o.exit_code = -1;
    o.kind = "cancelled";
  } catch (const CLI::ParseError& e) {
    fail(cli::kExitBadInput, "input", e.what(), "kvsim: error: ");
  } catch (const config::ConfigError& e) {
    cli::print_config_error(e);
    o.exit_code = cli::kExitBadInput;
    o.kind = "config";
    o.diagnostics = e.diagnostics();
    for (const auto& d : e.diagnostics()) o.message += (o.message.empty() ? "" : "\n") + d.format();
  } catch (const CheckFailed& e) {
    fail(cli::kExitExpect, "check", e.what(), "kvsim: check failed: ");
  } catch (const OutputRefused& e) {
    fail(cli::kExitBadInput, "input", e.what(), "kvsim: error: ");
  } catch (const std::filesystem::filesystem_error& e) {
    fail(cli::kExitBadInput, "input", e.path1().string() + ": " + e.code().message(),
         "kvsim: error: ");
  } catch (const UnrepresentableQuantity& e) {
    fail(cli::kExitBadInput, "input", e.what(), "kvsim: error: ");
  } catch (const std::bad_alloc&) {
    fail(cli::kExitBadInput, "memory", "out of memory (free memory, or make the run smaller)",
         "kvsim: error: ");
  } catch (const std::exception& e) {
    fail(cli::kExitInternal, "internal", e.what(), "kvsim: internal error: ");
  }
  o.out = streams.out.str();
  o.err = streams.err.str();
  // A command that printed its own error and returned non-zero (capacity's
  // flag checks, a sweep with failed variants): its lines are the message.
  if (o.kind.empty() && o.exit_code != 0) {
    o.kind = o.exit_code == cli::kExitBadInput ? "input"
             : o.exit_code == cli::kExitExpect ? ""
                                               : "internal";
    std::istringstream lines(o.err);
    for (std::string line; std::getline(lines, line);) {
      for (const char* prefix : {"kvsim: error: ", "kvsim: internal error: "})
        if (line.rfind(prefix, 0) == 0) line = line.substr(std::string(prefix).size());
      if (!line.empty()) o.message += (o.message.empty() ? "" : "\n") + line;
    }
  }
  return o;
}

// Runs `work` on a thread of its own, the GIL released, while this thread
// checks for signals: a KeyboardInterrupt asks the work to stop and is
// raised once it has.
Outcome cancellable(std::function<Outcome()> work) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  Outcome result;
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      result = work();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(m);
    done = true;
    cv.notify_all();
  });
  bool interrupted = false;
  for (;;) {
    {
      py::gil_scoped_release release;
      std::unique_lock lock(m);
      if (cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) break;
    }
    // Python runs its signal handlers here (in the main thread only); a
    // KeyboardInterrupt stays set while the work winds down.
    if (!interrupted && PyErr_CheckSignals() != 0) {
      interrupted = true;
      request_cancel();
    }
  }
  {
    py::gil_scoped_release release;
    worker.join();
  }
  if (interrupted) {
    clear_cancel();
    throw py::error_already_set();
  }
  if (error) std::rethrow_exception(error);
  return result;
}

py::dict to_dict(const Outcome& o) {
  py::dict d;
  d["exit_code"] = o.exit_code;
  d["stdout"] = o.out;
  d["stderr"] = o.err;
  d["kind"] = o.kind;
  d["message"] = o.message;
  py::list diagnostics;
  for (const auto& x : o.diagnostics) {
    py::dict item;
    item["file"] = x.where.file;
    item["line"] = x.where.line;
    item["col"] = x.where.col;
    item["key_path"] = x.key_path;
    item["problem"] = x.problem;
    item["allowed"] = x.allowed;
    diagnostics.append(item);
  }
  d["diagnostics"] = diagnostics;
  return d;
}

using AddCommand = cli::Command (*)(CLI::App&);

AddCommand command_named(const std::string& name) {
  if (name == "run") return cli::add_run_command;
  if (name == "compare") return cli::add_compare_command;
  if (name == "capacity") return cli::add_capacity_command;
  if (name == "sweep") return cli::add_sweep_command;
  if (name == "search") return cli::add_search_command;
  if (name == "calibrate") return cli::add_calibrate_command;
  if (name == "hitcurve") return cli::add_hitcurve_command;
  if (name == "generate") return cli::add_generate_command;
  if (name == "validate") return cli::add_validate_command;
  throw py::value_error("kvsim: no command '" + name + "' in the Python module");
}

// `kvsim ARGS...` in this process: ARGS[0] names the command.
py::dict command(const std::vector<std::string>& args) {
  if (args.empty()) throw py::value_error("command: the command's name first");
  const AddCommand add = command_named(args[0]);
  return to_dict(cancellable([add, args] {
    return guarded([&] {
      CLI::App app{"kvsim"};
      app.require_subcommand(1);
      const cli::Command cmd = add(app);
      std::vector<std::string> argv_text = {"kvsim"};
      argv_text.insert(argv_text.end(), args.begin(), args.end());
      std::vector<const char*> argv;
      for (const auto& a : argv_text) argv.push_back(a.c_str());
      app.parse(static_cast<int>(argv.size()), argv.data());
      return cmd.run();
    });
  }));
}

// `kvsim run` of a scenario given as YAML text (a Python string or dict):
// the same loader on the text, the same run folder, the same check of its
// `expect` block (exit 1 when one fails), without --from or a provenance.
py::dict run_text(const std::string& text, const std::string& source,
                  const std::string& configs_dir, const std::vector<std::string>& overrides,
                  const std::string& out, bool force, const std::string& trace) {
  return to_dict(cancellable([=] {
    return guarded([&] {
      const ScenarioSpec spec = load_scenario_text(
          text, source, configs_dir.empty() ? KVSIM_CONFIG_DIR : configs_dir, overrides);
      const RunFolderResult result = run_into_folder(spec, out, {}, force, nullptr, trace);
      const auto failures = check_expectations(spec.expect, metrics_to_json(result.metrics));
      for (const auto& f : failures) std::cerr << "kvsim: expect failed: " << f << "\n";
      return failures.empty() ? cli::kExitOk : cli::kExitExpect;
    });
  }));
}

}  // namespace
}  // namespace kvsim::python

PYBIND11_MODULE(_kvsim, m) {
  m.doc() =
      "The C++ half of the kvsim package: runs kvsim's commands in this process. Use the "
      "`kvsim` package's functions instead.";
  kvsim::set_worker_executable(KVSIM_PYTHON_WORKER_BINARY);
  m.def("command", &kvsim::python::command, py::arg("args"),
        "Runs `kvsim ARGS...` (ARGS[0] the command) in this process, the GIL released; returns "
        "{'exit_code', 'stdout', 'stderr', 'kind', 'message', 'diagnostics'}. Ctrl-C stops it and "
        "raises KeyboardInterrupt.");
  m.def("run_text", &kvsim::python::run_text, py::arg("text"), py::arg("source"),
        py::arg("configs_dir"), py::arg("overrides"), py::arg("out"), py::arg("force"),
        py::arg("trace"),
        "`kvsim run` of a scenario given as YAML text, into the run folder `out`; returns what "
        "command() returns.");
  m.def(
      "set_worker_executable",
      [](const std::string& path) {
        kvsim::set_worker_executable(path.empty() ? KVSIM_PYTHON_WORKER_BINARY : path);
      },
      py::arg("path"),
      "The kvsim executable sweeps and searches spawn per variant (default: the one built with "
      "this module; an empty path restores it).");
  m.def(
      "worker_executable", [] { return kvsim::worker_executable(); },
      "The kvsim executable sweeps and searches spawn per variant.");
  m.def(
      "version", [] { return std::string(kvsim::build_info::version()); }, "kvsim's version.");
  m.def(
      "commit", [] { return std::string(kvsim::build_info::commit()); },
      "The commit kvsim was built from.");
}
