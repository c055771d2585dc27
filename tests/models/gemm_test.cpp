// SPDX-License-Identifier: MIT
// gemm: every transpose combination and C initialisation against Eigen's own product.
#include "models/gemm.hpp"
#include "sim/core/rng.hpp"

#include <doctest/doctest.h>
#include <stdexcept>

using namespace dtsim;

namespace {

Eigen::MatrixXf random_matrix(Eigen::Index rows, Eigen::Index cols, Rng& rng) {
  Eigen::MatrixXf m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    m.data()[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  return m;
}

// A view of the top-left rows x cols of `storage` (leading dimension storage.rows()).
ConstMatMap view(const Eigen::MatrixXf& storage, Eigen::Index rows, Eigen::Index cols) {
  return mat_map(storage.data(), rows, cols, storage.rows());
}

} // namespace

TEST_SUITE("models") {
  TEST_CASE("gemm: Eigen's cache sizes are pinned, not the CPU's, so blocking is the same on "
            "every machine") {
    CHECK(Eigen::l1CacheSize() == 32 * 1024);
    CHECK(Eigen::l2CacheSize() == 1024 * 1024);
    CHECK(Eigen::l3CacheSize() == 32 * 1024 * 1024);
  }

  TEST_CASE("gemm: matches Eigen for all transposes, inits and strided views") {
    Rng rng(11);
    // Sizes straddle Eigen's register blocks (24 x 4) and its cache blocks (k > 300).
    const int shapes[][3] = {{1, 1, 1}, {3, 5, 2}, {37, 45, 300}, {256, 33, 784}, {10, 128, 7}};
    for (const auto& s : shapes) {
      const Eigen::Index m = s[0], n = s[1], k = s[2];
      for (int t = 0; t < 4; ++t) {
        const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(ta);
        CAPTURE(tb);
        // Storage with 3 spare rows, so that every operand has a leading dimension > rows.
        const Eigen::MatrixXf a = random_matrix((ta ? k : m) + 3, ta ? m : k, rng);
        const Eigen::MatrixXf b = random_matrix((tb ? n : k) + 3, tb ? k : n, rng);
        const Eigen::MatrixXf c0 = random_matrix(m + 3, n, rng);
        const Eigen::VectorXf bias = random_matrix(m, 1, rng);
        const ConstMatMap av = view(a, ta ? k : m, ta ? m : k);
        const ConstMatMap bv = view(b, tb ? n : k, tb ? k : n);
        Eigen::MatrixXd ab = (ta ? Eigen::MatrixXd(av.transpose().cast<double>())
                                 : Eigen::MatrixXd(av.cast<double>())) *
                             (tb ? Eigen::MatrixXd(bv.transpose().cast<double>())
                                 : Eigen::MatrixXd(bv.cast<double>()));
        GemmScratch scratch;
        scratch.reserve(m, n, k);
        const double tol = 1e-5 * static_cast<double>(k);

        Eigen::MatrixXf c = c0;
        MatMap cv = mat_map(c.data(), m, n, c.rows());
        gemm(ta, av, tb, bv, cv, GemmInit::Zero, nullptr, scratch);
        CHECK((cv.cast<double>() - ab).cwiseAbs().maxCoeff() < tol);
        // The spare rows below C are not touched.
        CHECK(c.bottomRows(3) == c0.bottomRows(3));

        c = c0;
        gemm(ta, av, tb, bv, cv, GemmInit::Bias, bias.data(), scratch);
        CHECK((cv.cast<double>() - (ab.colwise() + bias.cast<double>())).cwiseAbs().maxCoeff() <
              tol);

        c = c0;
        gemm(ta, av, tb, bv, cv, GemmInit::Accumulate, nullptr, scratch);
        CHECK((cv.cast<double>() - (ab + c0.topRows(m).cast<double>())).cwiseAbs().maxCoeff() <
              tol);
      }
    }
  }

  TEST_CASE("gemm: an unreserved scratch is an internal error, not a buffer overrun") {
    const Eigen::MatrixXf a = Eigen::MatrixXf::Ones(64, 64);
    Eigen::MatrixXf c(64, 64);
    GemmScratch scratch;
    CHECK_THROWS_AS(gemm(false, mat_map(a.data(), 64, 64, 64), false, mat_map(a.data(), 64, 64, 64),
                         mat_map(c.data(), 64, 64, 64), GemmInit::Zero, nullptr, scratch),
                    std::logic_error);
  }
}
