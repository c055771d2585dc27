// SPDX-License-Identifier: MIT
// make_topology: graph kinds, mixing rules, spectral gaps against closed forms, errors.
#include "sim/core/errors.hpp"
#include "topologies/make_topology.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <doctest/doctest.h>
#include <memory>
#include <numbers>

using namespace dtsim;

namespace {

// A `topology:` section of file s.yaml at line 2, its keys on lines 3, 4, ...
Params section(const std::vector<std::pair<std::string, std::string>>& keys) {
  auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
  ParamNode t = ParamNode::make_map(2);
  int line = 3;
  for (const auto& [k, v] : keys)
    t.fields.emplace_back(k, ParamNode::make_scalar(v, line++));
  root->fields.emplace_back("topology", std::move(t));
  return Params(root, "s.yaml").child("topology");
}

Topology build(const std::vector<std::pair<std::string, std::string>>& keys, int nodes,
               std::uint64_t seed = 1) {
  return make_topology(section(keys), nodes, seed);
}

std::string error_of(const std::vector<std::pair<std::string, std::string>>& keys, int nodes,
                     std::uint64_t seed = 1) {
  try {
    make_topology(section(keys), nodes, seed);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

Eigen::VectorXd sorted_eigenvalues(const Eigen::MatrixXd& w) {
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(w, Eigen::EigenvaluesOnly).eigenvalues();
}

Eigen::VectorXd sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return Eigen::Map<Eigen::VectorXd>(v.data(), static_cast<Eigen::Index>(v.size()));
}

void check_doubly_stochastic(const Topology& t) {
  const Eigen::MatrixXd& w = t.mixing_matrix();
  CHECK((w - w.transpose()).cwiseAbs().maxCoeff() == 0.0);
  CHECK((w.rowwise().sum().array() - 1.0).abs().maxCoeff() < 1e-12);
  CHECK((w.colwise().sum().array() - 1.0).abs().maxCoeff() < 1e-12);
  CHECK(w.minCoeff() >= 0.0);
}

// max(|lambda_2|, |lambda_n|) by power iteration on W - 11^T/n, independent of Eigen's
// solver: the norm ratio converges to the spectral radius of the deflated matrix.
double power_iteration_radius(const Eigen::MatrixXd& w) {
  const Eigen::Index n = w.rows();
  const Eigen::MatrixXd m = w - Eigen::MatrixXd::Constant(n, n, 1.0 / static_cast<double>(n));
  Eigen::VectorXd x(n);
  for (Eigen::Index i = 0; i < n; ++i)
    x(i) = std::sin(static_cast<double>(i) + 1.0) + 0.1 * static_cast<double>(i);
  double radius = 0.0;
  for (int it = 0; it < 5000; ++it) {
    const Eigen::VectorXd y = m * x;
    radius = y.norm() / x.norm();
    x = y / y.norm();
  }
  return radius;
}

} // namespace

TEST_SUITE("topologies") {
  TEST_CASE("Ring: mixing matrix is doubly stochastic with 1/3 weights") {
    const Topology t = build({{"kind", "ring"}}, 16);
    CHECK(t.name() == "ring");
    check_doubly_stochastic(t);
    for (int i = 0; i < 16; ++i) {
      CAPTURE(i);
      REQUIRE(t.neighbors(i).size() == 2);
      const int lo = std::min((i + 15) % 16, (i + 1) % 16),
                hi = std::max((i + 15) % 16, (i + 1) % 16);
      CHECK(t.neighbors(i)[0] == lo);
      CHECK(t.neighbors(i)[1] == hi);
      CHECK(t.weights(i)[0] == doctest::Approx(1.0 / 3).epsilon(1e-15));
      CHECK(t.weights(i)[1] == doctest::Approx(1.0 / 3).epsilon(1e-15));
      CHECK(t.self_weight(i) == doctest::Approx(1.0 / 3).epsilon(1e-15));
    }
  }

  TEST_CASE("Ring: spectrum is (1 + 2 cos(2 pi k / n)) / 3") {
    for (int n : {3, 7, 16, 25}) {
      CAPTURE(n);
      const Topology t = build({}, n); // kind and mixing default to ring, metropolis
      std::vector<double> expected;
      for (int k = 0; k < n; ++k)
        expected.push_back((1.0 + 2.0 * std::cos(2.0 * std::numbers::pi * k / n)) / 3.0);
      CHECK((sorted_eigenvalues(t.mixing_matrix()) - sorted(expected)).cwiseAbs().maxCoeff() <
            1e-12);
      const double lambda2 = (1.0 + 2.0 * std::cos(2.0 * std::numbers::pi / n)) / 3.0;
      const double lambdan = (1.0 + 2.0 * std::cos(2.0 * std::numbers::pi * (n / 2) / n)) / 3.0;
      CHECK(t.spectral_gap() ==
            doctest::Approx(1.0 - std::max(lambda2, std::fabs(lambdan))).epsilon(1e-12));
      CHECK(t.min_eigenvalue() == doctest::Approx(lambdan).epsilon(1e-12));
    }
    CHECK(build({}, 8).min_eigenvalue() == doctest::Approx(-1.0 / 3.0).epsilon(1e-12));
  }

  TEST_CASE("Ring: 16 nodes have degree 2, diameter 8 and gap 0.050747") {
    const Topology t = build({{"kind", "ring"}}, 16);
    CHECK(t.min_degree() == 2);
    CHECK(t.max_degree() == 2);
    CHECK(t.diameter() == 8);
    CHECK(t.num_edges() == 16);
    const double gap = 1.0 - (1.0 + 2.0 * std::cos(2.0 * std::numbers::pi / 16)) / 3.0;
    CHECK(t.spectral_gap() == doctest::Approx(gap).epsilon(1e-12));
    char printed[32];
    std::snprintf(printed, sizeof printed, "%.6f", t.spectral_gap());
    CHECK(std::string(printed) == "0.050747");
  }

  TEST_CASE("Ring: 1 node is W = 1 and 2 nodes a single edge") {
    const Topology one = build({{"kind", "ring"}}, 1);
    CHECK(one.num_edges() == 0);
    CHECK(one.self_weight(0) == 1.0);
    CHECK(one.spectral_gap() == 1.0);
    CHECK(one.diameter() == 0);
    const Topology two = build({{"kind", "ring"}}, 2);
    CHECK(two.num_edges() == 1);
    CHECK(two.weights(0)[0] == 0.5);
    CHECK(two.self_weight(1) == 0.5);
    CHECK(two.diameter() == 1);
    CHECK(two.spectral_gap() == doctest::Approx(1.0));
  }

  TEST_CASE("Complete: W = 11^T/n, gap 1, degree n-1, diameter 1") {
    for (const std::string mixing : {"metropolis", "uniform"}) {
      CAPTURE(mixing);
      const Topology t = build({{"kind", "complete"}, {"mixing", mixing}}, 10);
      CHECK((t.mixing_matrix().array() - 0.1).abs().maxCoeff() < 1e-15);
      CHECK(t.spectral_gap() == doctest::Approx(1.0).epsilon(1e-12));
      CHECK(t.min_degree() == 9);
      CHECK(t.max_degree() == 9);
      CHECK(t.diameter() == 1);
      CHECK(t.num_edges() == 45);
    }
  }

  TEST_CASE("Torus: 4x4 uniform mixing has spectrum (1 + 2cos(2 pi a/4) + 2cos(2 pi b/4))/5") {
    const Topology t = build({{"kind", "torus"}, {"mixing", "uniform"}}, 16);
    check_doubly_stochastic(t);
    CHECK((t.mixing_matrix().diagonal().array() - 0.2).abs().maxCoeff() < 1e-15);
    std::vector<double> expected;
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b)
        expected.push_back((1.0 + 2.0 * std::cos(2.0 * std::numbers::pi * a / 4) +
                            2.0 * std::cos(2.0 * std::numbers::pi * b / 4)) /
                           5.0);
    CHECK((sorted_eigenvalues(t.mixing_matrix()) - sorted(expected)).cwiseAbs().maxCoeff() < 1e-12);
    // Second eigenvalue 3/5 and smallest -3/5.
    CHECK(t.spectral_gap() == doctest::Approx(0.4).epsilon(1e-12));
    CHECK(t.min_degree() == 4);
    CHECK(t.max_degree() == 4);
    CHECK(t.diameter() == 4);
    CHECK(t.num_edges() == 32);
  }

  TEST_CASE("Torus: rows and cols default to the most square factorisation") {
    const Params p = section({{"kind", "torus"}});
    const Topology t = make_topology(p, 12, 1);
    REQUIRE(p.node().find("rows") != nullptr);
    CHECK(p.node().find("rows")->scalar == "3");
    CHECK(p.node().find("cols")->scalar == "4");
    CHECK(t.diameter() == 1 + 2); // floor(3/2) + floor(4/2)
    CHECK(t.min_degree() == 4);
    // One side given: the other follows from nodes.
    const Params q = section({{"kind", "torus"}, {"cols", "3"}});
    CHECK(make_topology(q, 15, 1).diameter() == 2 + 1);
    CHECK(q.node().find("rows")->scalar == "5");
  }

  TEST_CASE("Torus: sizes that are not rows x cols with both >= 3 are refused") {
    const std::string need = "torus needs nodes = rows x cols with rows, cols >= 3";
    SUBCASE("no factorisation") {
      const std::string e = error_of({{"kind", "torus"}}, 8);
      CHECK(e.rfind("s.yaml:3: topology.kind: " + need, 0) == 0);
    }
    SUBCASE("prime") {
      CHECK(contains(error_of({{"kind", "torus"}}, 13), need));
    }
    SUBCASE("rows x cols != nodes") {
      const std::string e = error_of({{"kind", "torus"}, {"rows", "3"}, {"cols", "4"}}, 16);
      CHECK(e == "s.yaml:4: topology.rows: " + need + ", got rows = 3, cols = 4 for nodes = 16");
    }
    SUBCASE("rows does not divide nodes") {
      CHECK(contains(error_of({{"kind", "torus"}, {"rows", "5"}}, 16), need));
    }
    SUBCASE("cols leaves fewer than 3 rows") {
      CHECK(contains(error_of({{"kind", "torus"}, {"cols", "8"}}, 16), need));
    }
    SUBCASE("a side below 3") {
      CHECK(contains(error_of({{"kind", "torus"}, {"rows", "2"}, {"cols", "8"}}, 16),
                     "topology.rows: expected a number in [3, 100000], got 2"));
    }
  }

  TEST_CASE("Star: metropolis weights and gap 1/n match the hand derivation") {
    // Hub degree n-1, leaves degree 1: every edge weighs 1/n, so W = I - L/n with the star
    // Laplacian's spectrum {0, 1 (n-2 times), n}: W has {1, 1 - 1/n (n-2 times), 0}.
    const int n = 9;
    const Topology t = build({{"kind", "star"}}, n);
    check_doubly_stochastic(t);
    CHECK(t.self_weight(0) == doctest::Approx(1.0 / n).epsilon(1e-15));
    for (int i = 1; i < n; ++i) {
      REQUIRE(t.neighbors(i).size() == 1);
      CHECK(t.neighbors(i)[0] == 0);
      CHECK(t.weights(i)[0] == doctest::Approx(1.0 / n).epsilon(1e-15));
      CHECK(t.self_weight(i) == doctest::Approx(1.0 - 1.0 / n).epsilon(1e-15));
    }
    CHECK(t.spectral_gap() == doctest::Approx(1.0 / n).epsilon(1e-12));
    CHECK(1.0 - power_iteration_radius(t.mixing_matrix()) ==
          doctest::Approx(1.0 / n).epsilon(1e-9));
    CHECK(t.min_degree() == 1);
    CHECK(t.max_degree() == n - 1);
    CHECK(t.diameter() == 2);
  }

  TEST_CASE("Star: uniform mixing is refused because the graph is not regular") {
    const std::string e = error_of({{"kind", "star"}, {"mixing", "uniform"}}, 6);
    CHECK(e == "s.yaml:4: topology.mixing: uniform mixing needs a regular graph, but this star "
               "has degrees 1..5; use metropolis");
  }

  TEST_CASE("Erdos-Renyi: the graph is a function of the seed") {
    const std::vector<std::pair<std::string, std::string>> keys{{"kind", "erdos_renyi"}};
    const Topology a = build(keys, 40, 11);
    const Topology b = build(keys, 40, 11);
    const Topology c = build(keys, 40, 12);
    CHECK(a.mixing_matrix() == b.mixing_matrix());
    CHECK(a.mixing_matrix() != c.mixing_matrix());
    // p defaults to 0.3: 780 pairs give 234 +- 12.8 edges.
    CHECK(a.num_edges() > 170);
    CHECK(a.num_edges() < 300);
    check_doubly_stochastic(a);
    // Eigen's gap agrees with an independent power iteration.
    CHECK(a.spectral_gap() ==
          doctest::Approx(1.0 - power_iteration_radius(a.mixing_matrix())).epsilon(1e-9));
    // p = 1 is the complete graph.
    CHECK(build({{"kind", "erdos_renyi"}, {"p", "1"}}, 12, 5).num_edges() == 66);
  }

  TEST_CASE("Erdos-Renyi: a disconnected draw is refused, naming n, p, seed") {
    const std::string e = error_of({{"kind", "erdos_renyi"}, {"p", "0.01"}}, 32, 7);
    CHECK(e.rfind("s.yaml:4: topology.p: erdos_renyi graph with n=32, p=0.01 is disconnected (",
                  0) == 0);
    CHECK(contains(e, " components) for seed 7; raise p or change the seed"));
    CHECK(contains(error_of({{"kind", "erdos_renyi"}, {"p", "0"}}, 8),
                   "expected a number in (0, 1]"));
  }

  TEST_CASE("make_topology: nodes outside 1..1000000 are refused, dense kinds above 4096") {
    for (int nodes : {0, -3, 1000001}) {
      CAPTURE(nodes);
      CHECK(error_of({{"kind", "ring"}}, nodes) ==
            "s.yaml:2: topology: expected nodes in [1, 1000000], got " + std::to_string(nodes));
    }
    for (const char* kind : {"complete", "erdos_renyi", "random_pairs"}) {
      CAPTURE(kind);
      CHECK(contains(error_of({{"kind", kind}}, 4097),
                     "has O(n^2) edges; expected nodes <= 4096 for it, got 4097"));
    }
  }

  TEST_CASE("make_topology: a 100,000-node ring is sparse, with its gap in closed form") {
    const Topology t = build({{"kind", "ring"}}, 100000);
    CHECK(t.num_edges() == 100000);
    CHECK(!t.diameter_exact());
    CHECK(t.diameter() == 50000); // a double sweep finds a ring's diameter exactly
    // Metropolis weights 1/3: lambda_k = 1/3 + 2/3 cos(2 pi k / n).
    const double pi = std::acos(-1.0);
    CHECK(t.spectral_gap() ==
          doctest::Approx(2.0 / 3.0 * (1.0 - std::cos(2 * pi / 100000))).epsilon(1e-6));
    CHECK(t.min_eigenvalue() == doctest::Approx(-1.0 / 3.0).epsilon(1e-12));
  }

  TEST_CASE("make_topology: unknown names suggest the closest") {
    CHECK(contains(error_of({{"kind", "rnig"}}, 8), "did you mean 'ring'?"));
    CHECK(contains(error_of({{"mixing", "metropolis_hastings"}}, 8), "topology.mixing"));
  }

  TEST_CASE("make_topology: defaults are written back and other kinds' keys left unread") {
    const Params p = section({{"rows", "4"}});
    make_topology(p, 8, 1);
    CHECK(p.node().find("kind")->scalar == "ring");
    CHECK(p.node().find("mixing")->scalar == "metropolis");
    CHECK_FALSE(p.node().find("rows")->used); // so reject_unused reports it
    CHECK_THROWS_AS(p.reject_unused(), ConfigError);
    const Params q = section({{"kind", "erdos_renyi"}});
    make_topology(q, 10, 3);
    CHECK(q.node().find("p")->scalar == "0.3");
  }

  TEST_CASE("topology_kinds: every kind with one line of help") {
    const auto kinds = topology_kinds();
    std::vector<std::string> names;
    for (const auto& [name, help] : kinds) {
      names.push_back(name);
      CHECK_FALSE(help.empty());
      CHECK(help.find('\n') == std::string::npos);
    }
    CHECK(names == std::vector<std::string>{"ring", "torus", "complete", "star", "erdos_renyi",
                                            "hypercube", "exponential", "social", "edges",
                                            "one_peer_exponential", "random_pairs"});
  }
}
