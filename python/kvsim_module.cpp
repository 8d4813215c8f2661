// The `kvsim` Python module (SPEC 11 "Interfaces"): load a scenario from a
// path, YAML text or a dict, apply --set-style overrides, run it with the
// GIL released, and return the metrics as a dict and the per-request and
// timeline rows as columns (dicts of lists, which pandas.DataFrame takes).
// It runs the same loader and engine as `kvsim run`, and checks the
// scenario's `expect` block as it does; it writes no files.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/build_info.hpp"
#include "base/diagnostics.hpp"
#include "base/source_paths.hpp"
#include "cli/studies/run_provenance.hpp"
#include "sim/core/metrics.hpp"
#include "sim/engine/run_sink.hpp"
#include "sim/scenario/expect.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/scenario/scenario.hpp"

namespace py = pybind11;

namespace kvsim::python {
namespace {

// Rows as columns while the run streams them: one vector per column, so a
// long run holds numbers, not Python objects, until it returns.
struct ColumnSink final : RunSink {
  struct {
    std::vector<uint64_t> id, session;
    std::vector<std::string> status;
    std::vector<int32_t> turn, preemptions;
    std::vector<double> arrival_ms, first_token_ms, finish_ms, ttft_ms, tpot_ms, e2e_ms;
    std::vector<int64_t> prompt_tokens, output_tokens, cached_tokens;
  } req;
  struct {
    std::vector<double> time_ms, step_ms;
    std::vector<int64_t> running, waiting, swapped, blocks_used, kv_used_bytes, tokens_held,
        step_tokens;
  } tl;

  static double ms(TimeNs t) { return static_cast<double>(t) / 1e6; }
  // A time that did not happen (a rejected request's first token) is NaN,
  // as pandas expects a missing float.
  static double ms_or_nan(TimeNs t) { return t < 0 ? std::nan("") : ms(t); }

  void request(const RequestRow& r) override {
    const bool done = r.status == "completed";
    req.id.push_back(r.id);
    req.status.emplace_back(r.status);
    req.session.push_back(r.session);
    req.turn.push_back(r.turn);
    req.arrival_ms.push_back(ms(r.arrival));
    req.first_token_ms.push_back(ms_or_nan(r.first_token));
    req.finish_ms.push_back(ms_or_nan(r.finished));
    req.prompt_tokens.push_back(r.prompt_tokens);
    req.output_tokens.push_back(r.output_tokens);
    req.cached_tokens.push_back(r.cached_tokens);
    req.preemptions.push_back(r.preemptions);
    req.ttft_ms.push_back(done ? ms_or_nan(r.first_token - r.arrival) : std::nan(""));
    req.tpot_ms.push_back(done && r.output_tokens > 1 ? ms(r.finished - r.first_token) /
                                                            static_cast<double>(r.output_tokens - 1)
                                                      : std::nan(""));
    req.e2e_ms.push_back(done ? ms(r.finished - r.arrival) : std::nan(""));
  }
  void timeline(const TimelineRow& r) override {
    tl.time_ms.push_back(ms(r.time));
    tl.running.push_back(r.running);
    tl.waiting.push_back(r.waiting);
    tl.swapped.push_back(r.swapped);
    tl.blocks_used.push_back(r.blocks_used);
    tl.kv_used_bytes.push_back(r.kv_used_bytes);
    tl.tokens_held.push_back(r.tokens_held);
    tl.step_tokens.push_back(r.step_tokens);
    tl.step_ms.push_back(ms(r.step_latency));
  }

  py::dict request_columns() const {
    py::dict d;
    d["id"] = req.id;
    d["status"] = req.status;
    d["session"] = req.session;
    d["turn"] = req.turn;
    d["arrival_ms"] = req.arrival_ms;
    d["first_token_ms"] = req.first_token_ms;
    d["finish_ms"] = req.finish_ms;
    d["prompt_tokens"] = req.prompt_tokens;
    d["output_tokens"] = req.output_tokens;
    d["cached_tokens"] = req.cached_tokens;
    d["preemptions"] = req.preemptions;
    d["ttft_ms"] = req.ttft_ms;
    d["tpot_ms"] = req.tpot_ms;
    d["e2e_ms"] = req.e2e_ms;
    return d;
  }
  py::dict timeline_columns() const {
    py::dict d;
    d["time_ms"] = tl.time_ms;
    d["running"] = tl.running;
    d["waiting"] = tl.waiting;
    d["swapped"] = tl.swapped;
    d["blocks_used"] = tl.blocks_used;
    d["kv_used_bytes"] = tl.kv_used_bytes;
    d["tokens_held"] = tl.tokens_held;
    d["step_tokens"] = tl.step_tokens;
    d["step_ms"] = tl.step_ms;
    return d;
  }
};

// A scenario given as a dict is written as JSON, which is YAML; a string
// naming an existing file is a path; any other string is YAML text.
struct LoadedScenario {
  ScenarioSpec spec;
  RunProvenance provenance;
};

LoadedScenario load(const py::object& scenario, const std::vector<std::string>& overrides,
                    const std::string& configs_dir) {
  LoadedScenario out;
  if (py::isinstance<py::str>(scenario)) {
    const std::string text = scenario.cast<std::string>();
    std::error_code ec;
    if (text.find('\n') == std::string::npos && std::filesystem::is_regular_file(text, ec)) {
      out.spec = load_scenario(text, overrides);
      out.provenance = describe_scenario(text, overrides);
      return out;
    }
    out.spec = load_scenario_text(text, "<python>", configs_dir, overrides);
    return out;
  }
  if (py::isinstance<py::dict>(scenario)) {
    const std::string text =
        py::module_::import("json").attr("dumps")(scenario).cast<std::string>();
    out.spec = load_scenario_text(text, "<python dict>", configs_dir, overrides);
    return out;
  }
  throw py::type_error("scenario: a path, YAML text or a dict");
}

// Raised by run() when the scenario's `expect` block fails, as `kvsim run`
// exits 1: a failed expectation is never a silent success.
// A plain pointer: the module holds the reference, and nothing is released
// after the interpreter has gone.
PyObject*& expect_failed_type() {
  static PyObject* type = nullptr;
  return type;
}

py::dict run(const py::object& scenario, const std::vector<std::string>& overrides,
             const std::string& configs_dir_arg, bool check_expect) {
  const std::string configs_dir = configs_dir_arg.empty() ? KVSIM_CONFIG_DIR : configs_dir_arg;
  LoadedScenario loaded = load(scenario, overrides, configs_dir);
  ColumnSink sink;
  std::string metrics_text;
  std::vector<std::string> failures;
  {
    // The simulation touches no Python object: other threads run meanwhile.
    py::gil_scoped_release release;
    ScenarioRunResult result = run_scenario(loaded.spec, &sink);
    result.metrics.provenance = loaded.provenance;
    const auto metrics = metrics_to_json(result.metrics);
    metrics_text = metrics.dump();
    failures = check_expectations(loaded.spec.expect, metrics);
  }
  if (check_expect && !failures.empty()) {
    std::string text;
    for (const auto& f : failures) text += (text.empty() ? "" : "\n") + f;
    PyErr_SetString(expect_failed_type(), text.c_str());
    throw py::error_already_set();
  }
  py::dict out;
  out["metrics"] = py::module_::import("json").attr("loads")(metrics_text);
  out["requests"] = sink.request_columns();
  out["timeline"] = sink.timeline_columns();
  out["expect_failures"] = failures;
  return out;
}

}  // namespace
}  // namespace kvsim::python

PYBIND11_MODULE(kvsim, m) {
  m.doc() = "kvsim: KV-cache simulator for NPUs. kvsim.run(scenario, overrides=[...])";
  // Input errors surface as ValueError with kvsim's file:line:col message.
  py::register_exception<kvsim::config::ConfigError>(m, "ConfigError", PyExc_ValueError);
  kvsim::python::expect_failed_type() =
      PyErr_NewException("kvsim.ExpectFailed", PyExc_AssertionError, nullptr);
  m.attr("ExpectFailed") = py::reinterpret_borrow<py::object>(kvsim::python::expect_failed_type());
  m.def("run", &kvsim::python::run, py::arg("scenario"),
        py::arg("overrides") = std::vector<std::string>{}, py::arg("configs_dir") = std::string(),
        py::arg("check_expect") = true,
        "Run a scenario (a path, YAML text or a dict) with `overrides` like --set "
        "(['kv_cache.block_size=64']); returns {'metrics': dict, 'requests': columns, "
        "'timeline': columns, 'expect_failures': [lines]}. A failed `expect` raises "
        "kvsim.ExpectFailed (an AssertionError) unless check_expect=False. device: and model: "
        "names resolve in `configs_dir` (default: the configs/ of the source tree kvsim was "
        "built from).");
  m.def("version", [] { return std::string(kvsim::build_info::version()); });
  m.def("commit", [] { return std::string(kvsim::build_info::commit()); });
}
