// The joint fit of a device family's timing parameters (Levenberg-Marquardt
// on relative error, Eigen); the parameter catalog lives in
// calibration_catalog.cpp, leave-one-out in calibration_cv.cpp.
#include "cli/studies/calibration_fit.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace kvsim {
namespace {

// Weight of the prior that pulls a parameter toward its assumed value, per
// unit of log(value): as much as a 1% error on one row per factor e. It only
// decides what the rows leave open.
constexpr double kPriorWeight = 0.01;
// Measurement noise assumed when the fit is closer than this (relative):
// published figures are rounded and vary run to run by a few percent.
constexpr double kNoiseFloor = 0.02;
// A parameter counts as constrained when the rows narrow its posterior
// standard deviation (log units) below this; its prior's is 1 (a factor e).
constexpr double kConstrainedStd = 0.25;
// Holding a parameter the rows leave open must not worsen the fit by more
// than this (rms relative error, per row); else it stays fitted.
constexpr double kHoldTolerance = 0.03;
// What a row that cannot be priced at a trial point costs (relative error).
constexpr double kFailedRow = 10.0;

// One fitted number: a catalog parameter of one device, or of every device
// of the family (device == kShared).
constexpr int kShared = -1;
struct Slot {
  FitParameter param;
  int device = kShared;
};

struct Problem {
  std::vector<DeviceSpec> starts;  // each at its assumed values
  std::vector<MeasurementRow> rows;
  std::vector<int> row_device;  // index into starts
  const RowPredictor& predict;
  std::vector<Slot> slots;
  std::vector<bool> free;  // per slot: varied (else held at its assumed value)
  // Threads that price rows at once (1: the caller's only); `predict` must
  // then be safe to call from several threads.
  int threads = 1;
};

double to_theta(const FitParameter& p, double v) {
  return p.log_scale ? std::log(v) : v;
}
double from_theta(const FitParameter& p, double t) {
  return std::clamp(p.log_scale ? std::exp(t) : t, p.lo, p.hi);
}

DeviceSpec device_at(const Problem& pb, const Eigen::VectorXd& theta, int device) {
  DeviceSpec d = pb.starts[static_cast<size_t>(device)];
  for (size_t j = 0; j < pb.slots.size(); ++j) {
    const Slot& s = pb.slots[j];
    if (s.device != kShared && s.device != device) continue;
    set_fit_parameter(
        d, s.param.key,
        pb.free[j] ? from_theta(s.param, theta(static_cast<Eigen::Index>(j))) : s.param.assumed);
  }
  return d;
}

// Runs task(0) .. task(n - 1) on up to `threads` threads (the caller's
// one of them), each index exactly once; the tasks write only their own
// index's results, so what they leave does not depend on the threads.
template <class Task>
void for_each_index(size_t n, int threads, const Task& task) {
  if (n == 0) return;
  const size_t extra = std::min(static_cast<size_t>(std::max(threads, 1)), n) - 1;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) task(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < extra; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had: the ones started (and this one) do it all
    }
  }
  work();
  for (std::thread& t : pool) t.join();
}

// Row residuals (relative errors) at theta. With `base`, only the rows of
// device `changed` are priced again (a per-device parameter moved).
Eigen::VectorXd row_residuals(const Problem& pb, const Eigen::VectorXd& theta,
                              std::vector<double>* predicted = nullptr,
                              const Eigen::VectorXd* base = nullptr, int changed = kShared) {
  // The devices at theta first, then every row to price (on pb.threads
  // threads: each row's price is its own), then the residuals in row order.
  std::vector<std::optional<DeviceSpec>> devices(pb.starts.size());
  std::vector<size_t> todo;
  for (size_t i = 0; i < pb.rows.size(); ++i) {
    const int dev = pb.row_device[i];
    if (base != nullptr && changed != kShared && dev != changed) continue;
    auto& d = devices[static_cast<size_t>(dev)];
    if (!d) d = device_at(pb, theta, dev);
    todo.push_back(i);
  }
  std::vector<std::optional<double>> value(pb.rows.size());
  for_each_index(todo.size(), pb.threads, [&](size_t t) {
    const size_t i = todo[t];
    try {
      value[i] = pb.predict(pb.rows[i], *devices[static_cast<size_t>(pb.row_device[i])]);
    } catch (const std::exception&) {
      value[i].reset();
    }
  });
  Eigen::VectorXd r(static_cast<Eigen::Index>(pb.rows.size()));
  if (predicted) predicted->assign(pb.rows.size(), 0.0);
  for (size_t i = 0; i < pb.rows.size(); ++i) {
    const auto k = static_cast<Eigen::Index>(i);
    const int dev = pb.row_device[i];
    if (base != nullptr && changed != kShared && dev != changed) {
      r(k) = (*base)(k);
      continue;
    }
    const std::optional<double>& v = value[i];
    r(k) = v && std::isfinite(*v) ? (*v - pb.rows[i].value) / pb.rows[i].value : kFailedRow;
    if (predicted && v) (*predicted)[i] = *v;
  }
  return r;
}

Eigen::VectorXd prior_residuals(const Problem& pb, const Eigen::VectorXd& theta) {
  Eigen::VectorXd r = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(pb.slots.size()));
  for (size_t j = 0; j < pb.slots.size(); ++j) {
    const auto k = static_cast<Eigen::Index>(j);
    const FitParameter& p = pb.slots[j].param;
    if (pb.free[j]) r(k) = kPriorWeight * (theta(k) - to_theta(p, p.assumed));
  }
  return r;
}

double cost(const Problem& pb, const Eigen::VectorXd& theta) {
  return row_residuals(pb, theta).squaredNorm() + prior_residuals(pb, theta).squaredNorm();
}

// d(row residual) / d(theta) by finite differences, staying inside the bounds.
// `all` prices every slot (held ones too: their sensitivity is reported).
Eigen::MatrixXd jacobian(const Problem& pb, const Eigen::VectorXd& theta, const Eigen::VectorXd& r0,
                         bool all = false) {
  const auto n = static_cast<Eigen::Index>(pb.rows.size());
  const auto p = static_cast<Eigen::Index>(pb.slots.size());
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(n, p);
  Problem varied = pb;
  if (all) varied.free.assign(pb.slots.size(), true);
  for (Eigen::Index j = 0; j < p; ++j) {
    const auto u = static_cast<size_t>(j);
    if (!varied.free[u]) continue;
    const FitParameter& fp = pb.slots[u].param;
    // Large enough that the integer-nanosecond durations do not show.
    double h = 1e-3;
    if (to_theta(fp, fp.hi) - theta(j) < 2 * h) h = -h;  // at the upper bound: step down
    Eigen::VectorXd t = theta;
    t(j) += h;
    J.col(j) = (row_residuals(varied, t, nullptr, &r0, pb.slots[u].device) - r0) / h;
  }
  return J;
}

struct Solution {
  Eigen::VectorXd theta;
  int iterations = 0;
};

Solution levenberg_marquardt(const Problem& pb, Eigen::VectorXd theta) {
  const auto p = static_cast<Eigen::Index>(pb.slots.size());
  auto clamp_theta = [&](Eigen::VectorXd& t) {
    for (Eigen::Index j = 0; j < p; ++j) {
      const FitParameter& fp = pb.slots[static_cast<size_t>(j)].param;
      t(j) = std::clamp(t(j), to_theta(fp, fp.lo), to_theta(fp, fp.hi));
    }
  };
  double mu = 1e-3;
  double current = cost(pb, theta);
  Solution s;
  for (; s.iterations < 30; ++s.iterations) {
    const Eigen::VectorXd r = row_residuals(pb, theta);
    const Eigen::MatrixXd J = jacobian(pb, theta, r);
    Eigen::MatrixXd A = J.transpose() * J;
    Eigen::VectorXd g = J.transpose() * r;
    for (Eigen::Index j = 0; j < p; ++j) {
      const auto u = static_cast<size_t>(j);
      if (!pb.free[u]) {
        A.row(j).setZero();
        A.col(j).setZero();
        A(j, j) = 1.0;
        g(j) = 0.0;
        continue;
      }
      const double w2 = kPriorWeight * kPriorWeight;
      A(j, j) += w2;
      g(j) += w2 * (theta(j) - to_theta(pb.slots[u].param, pb.slots[u].param.assumed));
    }
    bool improved = false;
    for (int tries = 0; tries < 10 && !improved; ++tries) {
      Eigen::MatrixXd damped = A;
      for (Eigen::Index j = 0; j < p; ++j) damped(j, j) += mu * (A(j, j) + 1e-9);
      Eigen::VectorXd step = damped.ldlt().solve(-g);
      Eigen::VectorXd trial = theta + step;
      clamp_theta(trial);
      const double c = cost(pb, trial);
      if (c < current) {
        const double gain = current - c;
        theta = trial;
        mu = std::max(mu / 3.0, 1e-9);
        improved = true;
        if (gain < 1e-4 * std::max(current, 1e-12) || step.norm() < 1e-4) {
          s.theta = theta;
          return s;
        }
        current = c;
      } else {
        mu *= 4.0;
      }
    }
    if (!improved) break;
  }
  s.theta = theta;
  return s;
}

// The slots of a family: each shared parameter once (its assumed value and
// source from the first device), then each device's own.
std::vector<Slot> family_slots(const std::vector<std::vector<FitParameter>>& params) {
  std::vector<Slot> slots;
  if (params.empty()) return slots;
  for (const FitParameter& p : params[0])
    if (p.shared) slots.push_back(Slot{p, kShared});
  for (size_t d = 0; d < params.size(); ++d) {
    if (params[d].size() != params[0].size())
      throw std::logic_error("fit_family: devices of one family need the same catalog");
    for (size_t j = 0; j < params[d].size(); ++j) {
      if (params[d][j].key != params[0][j].key || params[d][j].shared != params[0][j].shared)
        throw std::logic_error("fit_family: devices of one family need the same catalog");
      if (!params[d][j].shared) slots.push_back(Slot{params[d][j], static_cast<int>(d)});
    }
  }
  return slots;
}

}  // namespace

DeviceFit fit_device(const DeviceSpec& start, const std::vector<MeasurementRow>& rows,
                     const RowPredictor& predict, const std::vector<FitParameter>& params,
                     int threads) {
  return fit_family({start}, {rows}, predict, {params}, threads).front();
}

std::vector<DeviceFit> fit_family(const std::vector<DeviceSpec>& starts,
                                  const std::vector<std::vector<MeasurementRow>>& all_rows,
                                  const RowPredictor& predict,
                                  const std::vector<std::vector<FitParameter>>& params,
                                  int threads) {
  const std::vector<Slot> slots = family_slots(params);
  std::vector<DeviceSpec> assumed = starts;
  for (size_t d = 0; d < assumed.size(); ++d)
    for (const Slot& s : slots)
      if (s.device == kShared || s.device == static_cast<int>(d))
        set_fit_parameter(assumed[d], s.param.key, s.param.assumed);
  // Rows the predictor handles at the assumed values; the rest are left out.
  std::vector<const MeasurementRow*> candidates;
  std::vector<int> candidate_device;
  for (size_t d = 0; d < starts.size(); ++d) {
    for (const MeasurementRow& r : all_rows[d]) {
      candidates.push_back(&r);
      candidate_device.push_back(static_cast<int>(d));
    }
  }
  std::vector<char> handled(candidates.size(), 0);
  for_each_index(candidates.size(), threads, [&](size_t i) {
    try {
      handled[i] =
          predict(*candidates[i], assumed[static_cast<size_t>(candidate_device[i])]) ? 1 : 0;
    } catch (const std::exception&) {
      handled[i] = 0;
    }
  });
  std::vector<MeasurementRow> rows;
  std::vector<int> row_device;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!handled[i]) continue;
    rows.push_back(*candidates[i]);
    row_device.push_back(candidate_device[i]);
  }
  // A device without rows leaves its own parameters assumed.
  std::vector<bool> has_rows(starts.size(), false);
  for (const int d : row_device) has_rows[static_cast<size_t>(d)] = true;
  std::vector<bool> free(slots.size());
  for (size_t j = 0; j < slots.size(); ++j)
    free[j] =
        slots[j].device == kShared ? !rows.empty() : has_rows[static_cast<size_t>(slots[j].device)];
  Problem pb{assumed, rows, row_device, predict, slots, free, threads};
  const auto np = static_cast<Eigen::Index>(slots.size());
  Eigen::VectorXd theta(np);
  for (Eigen::Index j = 0; j < np; ++j) {
    const FitParameter& p = slots[static_cast<size_t>(j)].param;
    theta(j) = to_theta(p, p.assumed);
  }

  // Fit, then hold at its assumed value a parameter the rows leave open, and
  // fit again, until every varied parameter is pinned. One at a time: of two
  // parameters the rows only see together, holding one pins the other. Of
  // those left open, the one the rows are least sensitive to AT THE ASSUMED
  // VALUES is held first: a prefill row does not see the weight-streaming
  // efficiency until it has been driven far from any plausible value, so the
  // compute efficiency, which the row sees from the start, is the one fitted.
  // Ties go to the later in the catalog (the less physical).
  const Eigen::MatrixXd J0 = jacobian(pb, theta, row_residuals(pb, theta));
  Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(np, np);
  Eigen::MatrixXd J;
  Eigen::VectorXd r;
  // The posterior covariance at theta (log units; prior std 1).
  auto posterior = [&](const Eigen::VectorXd& t, Eigen::MatrixXd& c) {
    r = row_residuals(pb, t);
    J = jacobian(pb, t, r);
    const double rms = rows.empty() ? 0.0 : std::sqrt(r.squaredNorm() / r.size());
    const double sigma = std::max(rms, kNoiseFloor);
    Eigen::MatrixXd precision = J.transpose() * J / (sigma * sigma);
    for (Eigen::Index j = 0; j < np; ++j) precision(j, j) += 1.0;
    c = precision.inverse();
  };
  int iterations = 0;
  Solution sol = levenberg_marquardt(pb, theta);
  theta = sol.theta;
  iterations += sol.iterations;
  double best = cost(pb, theta);
  std::vector<bool> tried(slots.size(), false);
  for (;;) {
    posterior(theta, cov);
    Eigen::Index pick = -1;
    double least_seen = 0;
    for (Eigen::Index j = 0; j < np; ++j) {
      const auto u = static_cast<size_t>(j);
      if (!pb.free[u] || tried[u]) continue;
      if (std::sqrt(std::max(cov(j, j), 0.0)) <= kConstrainedStd) continue;
      const double seen = J0.col(j).norm();
      if (pick < 0 || seen <= least_seen * (1 + 1e-6)) {
        pick = j;
        least_seen = seen;
      }
    }
    if (pick < 0) break;
    const auto u = static_cast<size_t>(pick);
    tried[u] = true;
    // Hold it and refit; keep the hold unless the rows then fit worse (by
    // more than kHoldTolerance rms): a parameter the fit needs stays fitted,
    // pinned together with the ones it is correlated with.
    Problem held = pb;
    held.free[u] = false;
    Eigen::VectorXd t = theta;
    t(pick) = to_theta(slots[u].param, slots[u].param.assumed);
    const Solution s2 = levenberg_marquardt(held, t);
    iterations += s2.iterations;
    const double c2 = cost(held, s2.theta);
    const double allowed = kHoldTolerance * kHoldTolerance * static_cast<double>(rows.size());
    if (c2 <= best + allowed) {
      pb.free = held.free;
      theta = s2.theta;
      best = c2;
    }
  }
  posterior(theta, cov);

  std::vector<double> predicted;
  r = row_residuals(pb, theta, &predicted);
  const Eigen::MatrixXd J_all = jacobian(pb, theta, r, /*all=*/true);
  std::vector<DeviceFit> fits;
  for (size_t d = 0; d < starts.size(); ++d) {
    DeviceFit fit;
    fit.device = starts[d].name;
    fit.family = calibration_family(starts[d]);
    fit.iterations = iterations;
    fit.fitted = device_at(pb, theta, static_cast<int>(d));
    double squares = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      fit.family_row_ids.push_back(rows[i].id);
      if (row_device[i] != static_cast<int>(d)) continue;
      fit.row_ids.push_back(rows[i].id);
      fit.published.push_back(rows[i].value);
      fit.predicted.push_back(predicted[i]);
      squares += r(static_cast<Eigen::Index>(i)) * r(static_cast<Eigen::Index>(i));
    }
    fit.rms_relative_error =
        fit.row_ids.empty() ? 0.0 : std::sqrt(squares / static_cast<double>(fit.row_ids.size()));
    // This device's slots, in its catalog's order.
    std::vector<Eigen::Index> mine;
    for (const FitParameter& p : params[d]) {
      for (size_t j = 0; j < slots.size(); ++j) {
        if (slots[j].param.key != p.key) continue;
        if (slots[j].device != kShared && slots[j].device != static_cast<int>(d)) continue;
        mine.push_back(static_cast<Eigen::Index>(j));
      }
    }
    for (const Eigen::Index j : mine) {
      const auto u = static_cast<size_t>(j);
      FittedParameter f;
      f.param = slots[u].param;
      f.constrained = pb.free[u];
      f.value = get_fit_parameter(fit.fitted, f.param.key);
      f.relative_std = f.constrained ? std::sqrt(std::max(cov(j, j), 0.0)) : 0.0;
      // Over the rows this number prices: the device's own, or the family's.
      double s2 = 0;
      for (size_t i = 0; i < rows.size(); ++i)
        if (slots[u].device == kShared || row_device[i] == static_cast<int>(d))
          s2 += J_all(static_cast<Eigen::Index>(i), j) * J_all(static_cast<Eigen::Index>(i), j);
      f.sensitivity = std::sqrt(s2);
      fit.params.push_back(std::move(f));
    }
    const size_t m = mine.size();
    fit.covariance.assign(m, std::vector<double>(m, 0));
    for (size_t a = 0; a < m; ++a)
      for (size_t b = 0; b < m; ++b)
        if (pb.free[static_cast<size_t>(mine[a])] && pb.free[static_cast<size_t>(mine[b])])
          fit.covariance[a][b] = cov(mine[a], mine[b]);
    fits.push_back(std::move(fit));
  }
  return fits;
}

}  // namespace kvsim
