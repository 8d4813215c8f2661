#pragma once
// How a component writes its own part of metrics.json (SPEC 9). Each
// component that measures something (the run as a whole, the serving
// engine's paged pool, the dialog engine's Genie buffers and VTCM, the
// chunk_lru policy) owns one MetricsSection beside its code; metrics_to_json
// runs them in order and knows no family's fields. A section places each key
// relative to a key an earlier section wrote, so the file's key order stays
// what SPEC 9 lists (add, don't rename; never reorder). Every section writes
// its keys for every run, zeros when its component did not take part (its
// part is absent: MetricsParts::get_or_zero), so that files of different
// runs compare key for key.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace kvsim {

struct RunMetrics;

// Writes keys into one object of the document at a cursor: at the end, or
// just before / after a key already there. Each put() advances the cursor,
// so consecutive puts keep their order.
class MetricsObject {
 public:
  explicit MetricsObject(nlohmann::ordered_json& object);
  // Throws std::logic_error when `key` is not in the object (a section
  // anchored on a key no earlier section wrote).
  MetricsObject& before(std::string_view key);
  MetricsObject& after(std::string_view key);
  MetricsObject& at_end();
  MetricsObject& put(const std::string& key, nlohmann::ordered_json value);

 private:
  size_t index_of(std::string_view key) const;

  nlohmann::ordered_json& object_;
  size_t cursor_;  // insertion index; object_.size() means the end
};

// The object at top-level `key` of `doc` (created at the end when absent).
MetricsObject metrics_object(nlohmann::ordered_json& doc, const std::string& key);

struct MetricsSection {
  std::string_view owner;  // the component: "run", "serving", "genie", "chunk_lru"
  void (*write)(const RunMetrics& m, nlohmann::ordered_json& doc);
};

// Each component declares its section beside its part (the struct of its
// counters); the assembly lists them in the order they write
// (sim/scenario/metrics_document.cpp).
MetricsSection run_metrics_section();         // sim/core/metrics.cpp
MetricsSection goodput_metrics_section();     // sim/core/metrics.cpp
MetricsSection provenance_metrics_section();  // sim/core/metrics.cpp; always the last

}  // namespace kvsim
