// SPDX-License-Identifier: MIT
#include "topologies/spectrum.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/SparseCore>
#include <Spectra/SymEigsSolver.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace dtsim {
namespace {

using SparseW = Eigen::SparseMatrix<double, Eigen::RowMajor>;

SparseW sparse_mixing(const std::vector<std::vector<int>>& neighbors,
                      const std::vector<std::vector<double>>& weights,
                      std::span<const double> self_weights) {
  const auto n = static_cast<Eigen::Index>(neighbors.size());
  std::vector<Eigen::Triplet<double>> entries;
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    entries.emplace_back(i, i, self_weights[u]);
    for (std::size_t k = 0; k < neighbors[u].size(); ++k)
      entries.emplace_back(i, neighbors[u][k], weights[u][k]);
  }
  SparseW w(n, n);
  w.setFromTriplets(entries.begin(), entries.end());
  return w;
}

// x -> W x, or with `deflate` x -> P W P x (P = I - 11^T / n): W on the complement of the
// all-ones vector, W's eigenvector of eigenvalue 1, which P W P maps to 0 instead.
class MixingOp {
public:
  using Scalar = double;
  MixingOp(const SparseW& w, bool deflate) : w_(w), deflate_(deflate), x_(w.rows()) {}
  Eigen::Index rows() const { return w_.rows(); }
  Eigen::Index cols() const { return w_.cols(); }
  void perform_op(const double* in, double* out) const {
    const Eigen::Map<const Eigen::VectorXd> x(in, rows());
    Eigen::Map<Eigen::VectorXd> y(out, rows());
    if (!deflate_) {
      y.noalias() = w_ * x;
      return;
    }
    x_ = x.array() - x.mean();
    y.noalias() = w_ * x_;
    y.array() -= y.mean();
  }

private:
  const SparseW& w_;
  bool deflate_;
  mutable Eigen::VectorXd x_;
};

MixingSpectrum from_eigenvalues(double lambda_2, double lambda_n) {
  return {1.0 - std::max(std::fabs(lambda_2), std::fabs(lambda_n)), lambda_n};
}

MixingSpectrum dense_spectrum(const SparseW& w) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(Eigen::MatrixXd(w),
                                                              Eigen::EigenvaluesOnly);
  if (solver.info() != Eigen::Success)
    throw std::runtime_error("eigenvalues of the mixing matrix did not converge");
  const Eigen::VectorXd& ev = solver.eigenvalues(); // ascending; the largest is 1
  const Eigen::Index n = ev.size();
  return from_eigenvalues(ev(n - 2), ev(0));
}

// One end of the spectrum of `op` by restarted Lanczos (Spectra).
double lanczos_end(MixingOp& op, Spectra::SortRule end) {
  const Eigen::Index n = op.rows();
  // Room for several Ritz vectors: the top of a ring's spectrum is a cluster of near-equal
  // pairs (lambda_2 = lambda_3 ~ 1 - c / n^2), slow to separate with a small subspace.
  const Eigen::Index ncv = std::min<Eigen::Index>(n - 1, 64);
  Spectra::SymEigsSolver<MixingOp> solver(op, 1, ncv);
  // A fixed, mean-free start: deterministic, and no component along the all-ones vector.
  Eigen::VectorXd start(n);
  for (Eigen::Index i = 0; i < n; ++i)
    start(i) = std::sin(1.0 + 0.7 * static_cast<double>(i)) +
               0.1 * std::cos(0.013 * static_cast<double>(i * i));
  start.array() -= start.mean();
  solver.init(start.data());
  solver.compute(end, /*maxit=*/20000, /*tol=*/1e-12);
  if (solver.info() != Spectra::CompInfo::Successful)
    throw std::runtime_error("Lanczos iterations for the spectrum of the " + std::to_string(n) +
                             "-node mixing matrix did not converge");
  return solver.eigenvalues()(0);
}

MixingSpectrum lanczos_spectrum(const SparseW& w) {
  // lambda_2: the top of P W P. Should every eigenvalue but 1 be negative, this gives the
  // deflated 0 instead, which does not change the gap (|lambda_n| >= |lambda_2| then).
  MixingOp deflated(w, /*deflate=*/true);
  const double lambda_2 = lanczos_end(deflated, Spectra::SortRule::LargestAlge);
  // lambda_n: the bottom of W itself (1 is its top, never its bottom when n > 1); with P W P
  // the deflated 0 would pose as lambda_n whenever every eigenvalue is positive.
  MixingOp plain(w, /*deflate=*/false);
  const double lambda_n = lanczos_end(plain, Spectra::SortRule::SmallestAlge);
  return from_eigenvalues(lambda_2, lambda_n);
}

// A circulant W (node i's neighbours are i + s mod n for one set of offsets s, with the same
// weight per offset and the same self weight at every node: rings, exponential graphs and
// any regular circulant under Metropolis or uniform weights) has the eigenvalues
// lambda_k = w_0 + sum_s w_s cos(2 pi k s / n), k = 0..n-1, in closed form: O(n * degree)
// time and exact to rounding, where Lanczos would need ever more iterations as the gap
// (about 1/n^2 on a ring) vanishes. Empty when W is not circulant.
std::optional<MixingSpectrum> circulant_spectrum(const std::vector<std::vector<int>>& neighbors,
                                                 const std::vector<std::vector<double>>& weights,
                                                 std::span<const double> self_weights) {
  const auto n = static_cast<int>(neighbors.size());
  std::vector<std::pair<int, double>> offsets; // (offset, weight), sorted by offset
  for (std::size_t k = 0; k < neighbors[0].size(); ++k)
    offsets.emplace_back(neighbors[0][k], weights[0][k]);
  std::vector<std::pair<int, double>> row;
  for (int i = 1; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (neighbors[u].size() != offsets.size() || self_weights[u] != self_weights[0])
      return std::nullopt;
    row.clear();
    for (std::size_t k = 0; k < neighbors[u].size(); ++k)
      row.emplace_back((neighbors[u][k] - i + n) % n, weights[u][k]);
    std::sort(row.begin(), row.end());
    if (row != offsets)
      return std::nullopt;
  }
  const double two_pi_over_n = 2.0 * std::acos(-1.0) / n;
  double lambda_2 = -1.0, lambda_n = 1.0;
  for (int k = 1; k < n; ++k) {
    double lambda = self_weights[0];
    for (const auto& [offset, w] : offsets)
      // k * offset mod n keeps the angle small, so cos is evaluated where it is most exact.
      lambda += w * std::cos(two_pi_over_n *
                             static_cast<double>((static_cast<std::int64_t>(k) * offset) % n));
    lambda_2 = std::max(lambda_2, lambda);
    lambda_n = std::min(lambda_n, lambda);
  }
  return from_eigenvalues(lambda_2, lambda_n);
}

} // namespace

MixingSpectrum mixing_spectrum(const std::vector<std::vector<int>>& neighbors,
                               const std::vector<std::vector<double>>& weights,
                               std::span<const double> self_weights, SpectrumMethod method) {
  const auto n = static_cast<int>(neighbors.size());
  if (n == 1)
    return {1.0, 1.0};
  if (method == SpectrumMethod::automatic && n > kDenseSpectrumMaxNodes)
    if (const auto closed = circulant_spectrum(neighbors, weights, self_weights))
      return *closed;
  if (method == SpectrumMethod::circulant) {
    if (const auto closed = circulant_spectrum(neighbors, weights, self_weights))
      return *closed;
    throw std::invalid_argument("mixing_spectrum: the mixing matrix is not circulant");
  }
  const SparseW w = sparse_mixing(neighbors, weights, self_weights);
  if (method == SpectrumMethod::automatic)
    method = n <= kDenseSpectrumMaxNodes ? SpectrumMethod::dense : SpectrumMethod::lanczos;
  // Lanczos needs room for its subspace; a tiny graph is dense work anyway.
  if (method == SpectrumMethod::dense || n < 8)
    return dense_spectrum(w);
  return lanczos_spectrum(w);
}

} // namespace dtsim
