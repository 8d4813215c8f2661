#include "sim/core/metrics_section.hpp"

#include <stdexcept>

namespace kvsim {

MetricsObject::MetricsObject(nlohmann::ordered_json& object)
    : object_(object), cursor_(object.size()) {
  if (!object_.is_object()) object_ = nlohmann::ordered_json::object();
  cursor_ = object_.size();
}

size_t MetricsObject::index_of(std::string_view key) const {
  size_t i = 0;
  for (auto it = object_.begin(); it != object_.end(); ++it, ++i)
    if (it.key() == key) return i;
  throw std::logic_error("metrics section anchored on '" + std::string(key) +
                         "', which no earlier section wrote");
}

MetricsObject& MetricsObject::before(std::string_view key) {
  cursor_ = index_of(key);
  return *this;
}

MetricsObject& MetricsObject::after(std::string_view key) {
  cursor_ = index_of(key) + 1;
  return *this;
}

MetricsObject& MetricsObject::at_end() {
  cursor_ = object_.size();
  return *this;
}

MetricsObject& MetricsObject::put(const std::string& key, nlohmann::ordered_json value) {
  if (cursor_ >= object_.size()) {
    object_[key] = std::move(value);
    cursor_ = object_.size();
    return *this;
  }
  // ordered_json keeps insertion order and cannot insert in the middle: the
  // object is rebuilt (a few dozen keys, once per metrics.json).
  nlohmann::ordered_json rebuilt = nlohmann::ordered_json::object();
  size_t i = 0;
  for (auto it = object_.begin(); it != object_.end(); ++it, ++i) {
    if (i == cursor_) rebuilt[key] = std::move(value);
    rebuilt[it.key()] = std::move(it.value());
  }
  object_ = std::move(rebuilt);
  ++cursor_;
  return *this;
}

MetricsObject metrics_object(nlohmann::ordered_json& doc, const std::string& key) {
  return MetricsObject(doc[key]);
}

}  // namespace kvsim
