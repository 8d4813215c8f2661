#include "cli/studies/run_folder.hpp"

#include <fmt/format.h>

#include <memory>

#include "cli/studies/run_provenance.hpp"
#include "reports/csv_sink.hpp"
#include "reports/output_dir.hpp"
#include "reports/run_html_report.hpp"
#include "reports/run_report.hpp"
#include "reports/trace_writer.hpp"
#include "sim/scenario/run_scenario.hpp"

namespace kvsim {

RunFolderResult run_into_folder(const ScenarioSpec& spec, const std::string& out,
                                std::function<void(const RunProgress&)> progress, bool force,
                                const RunProvenance* provenance, const std::string& trace_path) {
  if (!trace_path.empty()) {
    // The folder is replaced whole at the end: a trace inside it would go too.
    const OutputTarget folder = output_target("--out", out, OutputShape::folder, force);
    const OutputTarget trace = output_target("--trace", trace_path, OutputShape::file, force);
    if (trace.path == folder.path || trace.path.string().rfind(folder.path.string() + "/", 0) == 0)
      throw OutputRefused(fmt::format(
          "--trace {}: is inside --out {}, which is replaced whole ({})", trace.path.string(),
          folder.path.string(), "a trace path outside the output folder"));
  }
  OutputDir dir(out, force);
  RunFolderResult result;
  CsvRunSink csv(dir.file("requests.csv"), dir.file("timeline.csv"));
  LoadVerdictSink load;
  std::vector<RunSink*> sinks = {&csv, &result.series, &load};
  std::unique_ptr<TraceRunSink> trace;
  if (!trace_path.empty()) {
    trace = std::make_unique<TraceRunSink>(trace_path, spec.name, TraceRunSink::kDefaultMaxEvents,
                                           force);
    sinks.push_back(trace.get());
  }
  FanOutRunSink sink(sinks);
  // gnuplot starts now and waits on its script while the run goes on: its
  // start-up is off the run's tail (reports/gnuplot_chart.hpp).
  ChartRenderer charts;
  // The engine follows the device kind (serving or on-device dialog).
  ScenarioRunResult run = run_scenario(spec, &sink, std::move(progress));
  result.metrics = std::move(run.metrics);
  result.load = load.verdict();
  const std::string warning = overload_warning(result.load);
  result.sizing = run.sizing;
  csv.close();
  if (trace) trace->close();
  if (provenance != nullptr) {
    result.metrics.provenance = *provenance;
    write_file_atomically(dir.file("scenario.resolved.yaml"),
                          resolved_scenario_file_text(*provenance));
  }
  write_file_atomically(dir.file("metrics.json"), metrics_json_text(result.metrics));
  write_file_atomically(dir.file("report.md"),
                        run_report_markdown(spec, result.metrics, result.sizing, warning));
  write_file_atomically(
      dir.file("report.html"),
      run_report_html(spec, result.metrics, result.sizing, result.series, &charts, warning));
  dir.commit();
  result.folder = dir.final_path();
  return result;
}

}  // namespace kvsim
