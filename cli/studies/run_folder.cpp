#include "cli/studies/run_folder.hpp"

#include "cli/studies/run_provenance.hpp"
#include "reports/csv_sink.hpp"
#include "reports/output_dir.hpp"
#include "reports/run_html_report.hpp"
#include "reports/run_report.hpp"
#include "sim/run_scenario.hpp"

namespace kvsim {

RunFolderResult run_into_folder(const ScenarioSpec& spec, const std::string& out,
                                std::function<void(const RunProgress&)> progress, bool force,
                                const RunProvenance* provenance) {
  OutputDir dir(out, force);
  CsvRunSink sink(dir.file("requests.csv"), dir.file("timeline.csv"));
  // The engine follows the device kind (serving or on-device dialog).
  ScenarioRunResult run = run_scenario(spec, &sink, std::move(progress));
  RunFolderResult result;
  result.metrics = std::move(run.metrics);
  result.sizing = run.sizing;
  sink.close();
  if (provenance != nullptr) {
    result.metrics.provenance = *provenance;
    write_file_atomically(dir.file("scenario.resolved.yaml"),
                          resolved_scenario_file_text(*provenance));
  }
  write_file_atomically(dir.file("metrics.json"), metrics_json_text(result.metrics));
  write_file_atomically(dir.file("report.md"),
                        run_report_markdown(spec, result.metrics, result.sizing));
  write_file_atomically(dir.file("report.html"),
                        run_report_html(spec, result.metrics, result.sizing,
                                        dir.file("requests.csv"), dir.file("timeline.csv")));
  dir.commit();
  result.folder = dir.final_path();
  return result;
}

}  // namespace kvsim
