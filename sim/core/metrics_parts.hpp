#pragma once
// The counters of a run's components (SPEC 9, DESIGN "counters belong to
// components"): each component that measures something (the serving
// engine's pool, the genie engine's buffers and VTCM, chunk_lru's chunk
// pool, llama_cells' cells, the tiers, a cluster, a pipeline) defines a
// struct of its own beside its code and keeps it here, by type. Its
// metrics section (sim/core/metrics_section.hpp) writes it; a run without
// the component reads zeros (get_or_zero), so files of different runs still
// compare key for key.
#include <memory>
#include <typeindex>
#include <utility>
#include <vector>

namespace kvsim {

class MetricsParts {
 public:
  MetricsParts() = default;
  MetricsParts(const MetricsParts& other) { *this = other; }
  MetricsParts& operator=(const MetricsParts& other) {
    if (this == &other) return *this;
    parts_.clear();
    for (const auto& [type, held] : other.parts_) parts_.emplace_back(type, held->clone());
    return *this;
  }
  MetricsParts(MetricsParts&&) noexcept = default;
  MetricsParts& operator=(MetricsParts&&) noexcept = default;

  // The part of type T, made (value-initialised) on first use.
  template <class T>
  T& get() {
    if (T* found = find_mutable<T>()) return *found;
    auto held = std::make_unique<Of<T>>();
    T& value = held->value;
    parts_.emplace_back(std::type_index(typeid(T)), std::move(held));
    return value;
  }
  // The part of type T, or nullptr when no component wrote one.
  template <class T>
  const T* find() const {
    return const_cast<MetricsParts*>(this)->find_mutable<T>();
  }
  // The part, or a T of zeros when no component wrote one.
  template <class T>
  const T& get_or_zero() const {
    static const T zeros{};
    const T* found = find<T>();
    return found != nullptr ? *found : zeros;
  }
  template <class T>
  bool has() const {
    return find<T>() != nullptr;
  }

 private:
  struct Holder {
    virtual ~Holder() = default;
    virtual std::unique_ptr<Holder> clone() const = 0;
  };
  template <class T>
  struct Of final : Holder {
    T value{};
    std::unique_ptr<Holder> clone() const override { return std::make_unique<Of<T>>(*this); }
  };
  template <class T>
  T* find_mutable() {
    for (auto& [type, held] : parts_)
      if (type == std::type_index(typeid(T))) return &static_cast<Of<T>*>(held.get())->value;
    return nullptr;
  }

  std::vector<std::pair<std::type_index, std::unique_ptr<Holder>>> parts_;
};

}  // namespace kvsim
