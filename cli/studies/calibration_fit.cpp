// The joint fit of a device's timing parameters (Levenberg-Marquardt on
// relative error, Eigen) and its parameter catalog; leave-one-out lives in
// calibration_cv.cpp.
#include "cli/studies/calibration_fit.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <stdexcept>

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

FitParameter efficiency(const std::string& key, double assumed, std::string why, double lo) {
  return FitParameter{key, assumed, std::move(why), lo, 1.0, true, ""};
}

struct Problem {
  const DeviceSpec& start;
  const std::vector<MeasurementRow>& rows;
  const RowPredictor& predict;
  const std::vector<FitParameter>& params;
  std::vector<bool> free;  // per parameter: varied (else held at its assumed value)
};

double to_theta(const FitParameter& p, double v) {
  return p.log_scale ? std::log(v) : v;
}
double from_theta(const FitParameter& p, double t) {
  return std::clamp(p.log_scale ? std::exp(t) : t, p.lo, p.hi);
}

DeviceSpec device_at(const Problem& pb, const Eigen::VectorXd& theta) {
  DeviceSpec d = pb.start;
  for (size_t j = 0; j < pb.params.size(); ++j)
    set_fit_parameter(d, pb.params[j].key,
                      pb.free[j] ? from_theta(pb.params[j], theta(static_cast<Eigen::Index>(j)))
                                 : pb.params[j].assumed);
  return d;
}

// Row residuals (relative errors) at theta.
Eigen::VectorXd row_residuals(const Problem& pb, const Eigen::VectorXd& theta,
                              std::vector<double>* predicted = nullptr) {
  const DeviceSpec d = device_at(pb, theta);
  Eigen::VectorXd r(static_cast<Eigen::Index>(pb.rows.size()));
  if (predicted) predicted->assign(pb.rows.size(), 0.0);
  for (size_t i = 0; i < pb.rows.size(); ++i) {
    std::optional<double> v;
    try {
      v = pb.predict(pb.rows[i], d);
    } catch (const std::exception&) {
      v.reset();
    }
    const auto k = static_cast<Eigen::Index>(i);
    r(k) = v && std::isfinite(*v) ? (*v - pb.rows[i].value) / pb.rows[i].value : kFailedRow;
    if (predicted && v) (*predicted)[i] = *v;
  }
  return r;
}

Eigen::VectorXd prior_residuals(const Problem& pb, const Eigen::VectorXd& theta) {
  Eigen::VectorXd r = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(pb.params.size()));
  for (size_t j = 0; j < pb.params.size(); ++j) {
    const auto k = static_cast<Eigen::Index>(j);
    if (pb.free[j]) r(k) = kPriorWeight * (theta(k) - to_theta(pb.params[j], pb.params[j].assumed));
  }
  return r;
}

double cost(const Problem& pb, const Eigen::VectorXd& theta) {
  return row_residuals(pb, theta).squaredNorm() + prior_residuals(pb, theta).squaredNorm();
}

// d(row residual) / d(theta) by finite differences, staying inside the bounds.
Eigen::MatrixXd jacobian(const Problem& pb, const Eigen::VectorXd& theta,
                         const Eigen::VectorXd& r0) {
  const auto n = static_cast<Eigen::Index>(pb.rows.size());
  const auto p = static_cast<Eigen::Index>(pb.params.size());
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(n, p);
  for (Eigen::Index j = 0; j < p; ++j) {
    if (!pb.free[static_cast<size_t>(j)]) continue;
    const FitParameter& fp = pb.params[static_cast<size_t>(j)];
    // Large enough that the integer-nanosecond durations do not show.
    double h = 1e-3;
    if (to_theta(fp, fp.hi) - theta(j) < 2 * h) h = -h;  // at the upper bound: step down
    Eigen::VectorXd t = theta;
    t(j) += h;
    J.col(j) = (row_residuals(pb, t) - r0) / h;
  }
  return J;
}

struct Solution {
  Eigen::VectorXd theta;
  int iterations = 0;
};

Solution levenberg_marquardt(const Problem& pb, Eigen::VectorXd theta) {
  const auto p = static_cast<Eigen::Index>(pb.params.size());
  auto clamp_theta = [&](Eigen::VectorXd& t) {
    for (Eigen::Index j = 0; j < p; ++j) {
      const FitParameter& fp = pb.params[static_cast<size_t>(j)];
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
      if (!pb.free[static_cast<size_t>(j)]) {
        A.row(j).setZero();
        A.col(j).setZero();
        A(j, j) = 1.0;
        g(j) = 0.0;
        continue;
      }
      const double w2 = kPriorWeight * kPriorWeight;
      A(j, j) += w2;
      g(j) += w2 * (theta(j) - to_theta(pb.params[static_cast<size_t>(j)],
                                        pb.params[static_cast<size_t>(j)].assumed));
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

}  // namespace

std::vector<FitParameter> fit_parameters(const DeviceSpec& device) {
  if (device.kind == "htp") {
    return {
        efficiency("efficiency.gemm.memory", 0.7,
                   "A: LPDDR weight streaming at ~70% of peak, as phone SoCs sustain", 0.3),
        efficiency("efficiency.attention.memory", 0.7,
                   "A: KV columns stream like weights, ~70% of LPDDR peak", 0.05),
        efficiency("efficiency.gemm.compute", 0.4,
                   "A: HMX nominal rate is no vendor figure; 0.4 of it as a first guess", 0.01),
        efficiency("efficiency.attention.compute", 0.1,
                   "A: masked attention over the whole cache buffer runs far below the GEMMs",
                   0.002),
        efficiency("efficiency.elementwise.compute", 0.5,
                   "A: HVX softmax/norm kernels at half the nominal rate", 0.01),
        FitParameter{"matrix_tokens_exponent", 0.0,
                     "A: no pass-shape dependence until rows at two pass sizes show one", -1.0, 1.0,
                     false, ""},
        FitParameter{"step_overhead", 0.5,
                     "A: one Genie graph execution (several context-binary parts) ~0.5 ms", 0.01,
                     50.0, true, "ms"},
    };
  }
  return {
      efficiency("efficiency.gemm.memory", 0.8,
                 "A: weight streaming in decode reaches ~80% of HBM peak on NPUs and GPUs", 0.3),
      efficiency("efficiency.attention.memory", 0.7,
                 "A: paged KV reads gather blocks, below streaming efficiency", 0.05),
      efficiency("efficiency.gemm.compute", 0.7, "A: large GEMMs on a cube reach 60-80% of peak",
                 0.1),
      efficiency("efficiency.attention.compute", 0.5,
                 "A: FlashAttention-style kernels reach about half of cube peak", 0.05),
      FitParameter{"matrix_tokens_exponent", 0.0,
                   "A: no batch-shape dependence until rows at two batch sizes show one", -1.0, 1.0,
                   false, ""},
      FitParameter{"step_overhead", 1.0,
                   "A: per step host work (scheduling, input preparation) ~1 ms in vLLM-style "
                   "servers",
                   0.01, 100.0, true, "ms"},
  };
}

double get_fit_parameter(const DeviceSpec& d, const std::string& key) {
  for (size_t c = 0; c < kOpClassCount; ++c) {
    const std::string base = fmt::format("efficiency.{}.", op_class_name(static_cast<OpClass>(c)));
    if (key == base + "compute") return d.compute_efficiency[c];
    if (key == base + "memory") return d.memory_efficiency[c];
  }
  if (key == "matrix_tokens_exponent") return d.matrix_tokens_exponent;
  if (key == "step_overhead") return static_cast<double>(d.step_overhead) / 1e6;
  throw std::logic_error("not a fit parameter: " + key);
}

void set_fit_parameter(DeviceSpec& d, const std::string& key, double value) {
  for (size_t c = 0; c < kOpClassCount; ++c) {
    const std::string base = fmt::format("efficiency.{}.", op_class_name(static_cast<OpClass>(c)));
    if (key == base + "compute") {
      d.compute_efficiency[c] = value;
      return;
    }
    if (key == base + "memory") {
      d.memory_efficiency[c] = value;
      return;
    }
  }
  if (key == "matrix_tokens_exponent") {
    d.matrix_tokens_exponent = value;
    return;
  }
  if (key == "step_overhead") {
    d.step_overhead = static_cast<TimeNs>(std::llround(value * 1e6));
    return;
  }
  throw std::logic_error("not a fit parameter: " + key);
}

DeviceFit fit_device(const DeviceSpec& start, const std::vector<MeasurementRow>& all_rows,
                     const RowPredictor& predict, const std::vector<FitParameter>& params) {
  DeviceFit fit;
  fit.device = start.name;
  // Rows the predictor handles at the assumed values; the rest are left out.
  DeviceSpec assumed = start;
  for (const auto& p : params) set_fit_parameter(assumed, p.key, p.assumed);
  std::vector<MeasurementRow> rows;
  for (const MeasurementRow& r : all_rows) {
    std::optional<double> v;
    try {
      v = predict(r, assumed);
    } catch (const std::exception&) {
      v.reset();
    }
    if (v) rows.push_back(r);
  }
  Problem pb{assumed, rows, predict, params, std::vector<bool>(params.size(), !rows.empty())};
  const auto np = static_cast<Eigen::Index>(params.size());
  Eigen::VectorXd theta(np);
  for (Eigen::Index j = 0; j < np; ++j)
    theta(j) = to_theta(params[static_cast<size_t>(j)], params[static_cast<size_t>(j)].assumed);

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
  // The posterior covariance at theta (log units; prior std 1) and whether
  // each varied parameter's spread is below kConstrainedStd.
  auto posterior = [&](const Eigen::VectorXd& t, Eigen::MatrixXd& c) {
    r = row_residuals(pb, t);
    J = jacobian(pb, t, r);
    const double rms = rows.empty() ? 0.0 : std::sqrt(r.squaredNorm() / r.size());
    const double sigma = std::max(rms, kNoiseFloor);
    Eigen::MatrixXd precision = J.transpose() * J / (sigma * sigma);
    for (Eigen::Index j = 0; j < np; ++j) precision(j, j) += 1.0;
    c = precision.inverse();
  };
  Solution sol = levenberg_marquardt(pb, theta);
  theta = sol.theta;
  fit.iterations += sol.iterations;
  double best = cost(pb, theta);
  std::vector<bool> tried(params.size(), false);
  for (;;) {
    posterior(theta, cov);
    // The open parameter the rows see least at the assumed values, not yet
    // found to be needed.
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
    t(pick) = to_theta(params[u], params[u].assumed);
    const Solution s2 = levenberg_marquardt(held, t);
    fit.iterations += s2.iterations;
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
  fit.fitted = device_at(pb, theta);
  fit.rms_relative_error = rows.empty() ? 0.0 : std::sqrt(r.squaredNorm() / r.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    fit.row_ids.push_back(rows[i].id);
    fit.published.push_back(rows[i].value);
    fit.predicted.push_back(predicted[i]);
  }
  // Sensitivities of every parameter, held ones included (why they are held).
  Problem all_free = pb;
  all_free.free.assign(params.size(), !rows.empty());
  const Eigen::MatrixXd J_all = jacobian(all_free, theta, r);
  for (Eigen::Index j = 0; j < np; ++j) {
    FittedParameter f;
    f.param = params[static_cast<size_t>(j)];
    f.constrained = pb.free[static_cast<size_t>(j)];
    f.value = get_fit_parameter(fit.fitted, f.param.key);
    f.relative_std = f.constrained ? std::sqrt(std::max(cov(j, j), 0.0)) : 0.0;
    f.sensitivity = J_all.rows() > 0 ? J_all.col(j).norm() : 0.0;
    fit.params.push_back(std::move(f));
  }
  fit.covariance.assign(static_cast<size_t>(np), std::vector<double>(static_cast<size_t>(np), 0));
  for (Eigen::Index a = 0; a < np; ++a)
    for (Eigen::Index b = 0; b < np; ++b)
      if (pb.free[static_cast<size_t>(a)] && pb.free[static_cast<size_t>(b)])
        fit.covariance[static_cast<size_t>(a)][static_cast<size_t>(b)] = cov(a, b);
  return fit;
}

}  // namespace kvsim
