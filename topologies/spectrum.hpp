// SPDX-License-Identifier: MIT
// The spectrum of a mixing matrix that matters for gossip: its spectral gap and smallest
// eigenvalue.
#pragma once

#include <Eigen/Core>
#include <span>
#include <vector>

namespace dtsim {

struct MixingSpectrum {
  double gap = 1.0;        // 1 - max(|lambda_2|, |lambda_n|)
  double lambda_min = 1.0; // lambda_n
};

enum class SpectrumMethod {
  automatic, // dense up to kDenseSpectrumMaxNodes; above, closed form if W is circulant,
             // else Lanczos
  dense,     // every eigenvalue of W (O(n^3) time, O(n^2) memory): exact, for small graphs
  lanczos,   // the two ends of W's spectrum off the all-ones vector, by Lanczos iterations on
             // the sparse W (Spectra): O(edges) per iteration
  circulant, // closed form lambda_k = sum_s w_s cos(2 pi k s / n) of a circulant W (ring,
             // exponential graph): O(n * degree); throws std::invalid_argument otherwise
};

inline constexpr int kDenseSpectrumMaxNodes = 512;

// requires: W symmetric and doubly stochastic with W_ij != 0 only for j in neighbors[i] or
// j == i; weights[i][k] = W(i, neighbors[i][k]), self_weights[i] = W(i, i).
// Throws std::runtime_error when the iterations do not converge.
MixingSpectrum mixing_spectrum(const std::vector<std::vector<int>>& neighbors,
                               const std::vector<std::vector<double>>& weights,
                               std::span<const double> self_weights,
                               SpectrumMethod method = SpectrumMethod::automatic);

} // namespace dtsim
