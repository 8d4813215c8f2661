#pragma once
// Streams requests.csv and timeline.csv while a run goes on. A cluster's
// timeline.csv is in long format: at each row time one row per instance and
// one for the cluster (instance "cluster"), with the instance's group and
// role, so that pandas pivots it on (time_ms, instance).
#include <fmt/format.h>

#include <fstream>
#include <string>
#include <vector>

#include "sim/engine/run_sink.hpp"

namespace kvsim {

class CsvRunSink final : public RunSink {
 public:
  CsvRunSink(const std::string& requests_path, const std::string& timeline_path);
  void request(const RequestRow& row) override;
  void timeline(const TimelineRow& row) override;
  void cluster_started(const std::vector<ClusterInstanceInfo>& instances) override;
  void cluster_timeline(const ClusterTimelineRow& row) override;
  // Flushes; throws std::filesystem::filesystem_error (the OS error, exit 2)
  // when a write failed, as on a full disk.
  void close();

 private:
  std::ofstream requests_;
  std::ofstream timeline_;
  void write_timeline_header(bool pool_of_blocks);

  std::string requests_path_, timeline_path_;
  bool timeline_header_written_ = false;
  std::vector<ClusterInstanceInfo> instances_;  // a cluster's
  Bytes cluster_capacity_ = 0;
  fmt::memory_buffer cluster_rows_;  // not yet written
  void flush_cluster_rows();
};

}  // namespace kvsim
