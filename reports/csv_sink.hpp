#pragma once
// Streams requests.csv and timeline.csv while a run goes on.
#include <fstream>
#include <string>

#include "sim/engine/run_sink.hpp"

namespace kvsim {

class CsvRunSink final : public RunSink {
 public:
  CsvRunSink(const std::string& requests_path, const std::string& timeline_path);
  void request(const RequestRow& row) override;
  void timeline(const TimelineRow& row) override;
  // Flushes; throws std::filesystem::filesystem_error (the OS error, exit 2)
  // when a write failed, as on a full disk.
  void close();

 private:
  std::ofstream requests_;
  std::ofstream timeline_;
  void write_timeline_header(bool pool_of_blocks);

  std::string requests_path_, timeline_path_;
  bool timeline_header_written_ = false;
};

}  // namespace kvsim
