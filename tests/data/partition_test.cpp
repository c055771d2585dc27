// SPDX-License-Identifier: MIT
// make_partition: disjoint covers, label skew as configured, seeded, clear errors.
#include "data/partition.hpp"
#include "test_params.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <numeric>

using namespace dtsim;
using dtsim::test::config_error_of;
using dtsim::test::params_of;

namespace {

// `per_class` examples of each of `classes` classes, interleaved (0,1,2,...,0,1,2,...).
std::vector<std::int32_t> cyclic_labels(int classes, int per_class) {
  std::vector<std::int32_t> y(static_cast<std::size_t>(classes * per_class));
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<std::int32_t>(i % static_cast<std::size_t>(classes));
  return y;
}

// Every index appears exactly once, the histogram matches the lists.
void check_cover(const Partition& p, std::span<const std::int32_t> labels, int classes, int nodes) {
  REQUIRE(p.node_indices.size() == static_cast<std::size_t>(nodes));
  REQUIRE(p.label_histogram.size() == static_cast<std::size_t>(nodes));
  std::vector<int> seen(labels.size(), 0);
  for (std::size_t i = 0; i < p.node_indices.size(); ++i) {
    CHECK_FALSE(p.node_indices[i].empty());
    std::vector<std::int64_t> hist(static_cast<std::size_t>(classes), 0);
    for (auto k : p.node_indices[i]) {
      REQUIRE(k < labels.size());
      ++seen[k];
      ++hist[static_cast<std::size_t>(labels[k])];
    }
    CHECK(hist == p.label_histogram[i]);
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
}

// Mean over nodes of the largest class share at that node.
double mean_max_share(const Partition& p) {
  double sum = 0.0;
  for (const auto& h : p.label_histogram) {
    const auto total = std::accumulate(h.begin(), h.end(), std::int64_t{0});
    sum += static_cast<double>(*std::max_element(h.begin(), h.end())) / static_cast<double>(total);
  }
  return sum / static_cast<double>(p.label_histogram.size());
}

} // namespace

TEST_SUITE("data") {
  TEST_CASE("Partition: every kind is a disjoint cover of all indices") {
    const auto labels = cyclic_labels(10, 301);
    for (const char* kind : {"iid", "dirichlet", "shards"}) {
      for (int nodes : {1, 7, 64}) {
        CAPTURE(kind);
        CAPTURE(nodes);
        const Partition p = make_partition(params_of({{"kind", kind}}), labels, 10, nodes, 5);
        check_cover(p, labels, 10, nodes);
      }
    }
  }

  TEST_CASE("Partition: iid sizes differ by at most one and classes are mixed") {
    const auto labels = cyclic_labels(10, 100);
    const Partition p = make_partition(params_of({}), labels, 10, 7, 1);
    std::size_t lo = labels.size(), hi = 0;
    for (const auto& v : p.node_indices) {
      lo = std::min(lo, v.size());
      hi = std::max(hi, v.size());
    }
    CHECK(hi - lo <= 1);
    CHECK(mean_max_share(p) < 0.25);
  }

  TEST_CASE("Partition: the same seed gives the same partition, another seed another") {
    const auto labels = cyclic_labels(10, 200);
    for (const char* kind : {"iid", "dirichlet", "shards"}) {
      CAPTURE(kind);
      const auto a = make_partition(params_of({{"kind", kind}}), labels, 10, 16, 42);
      const auto b = make_partition(params_of({{"kind", kind}}), labels, 10, 16, 42);
      const auto c = make_partition(params_of({{"kind", kind}}), labels, 10, 16, 43);
      CHECK(a.node_indices == b.node_indices);
      CHECK(a.label_histogram == b.label_histogram);
      CHECK(a.node_indices != c.node_indices);
    }
  }

  TEST_CASE("Partition: dirichlet alpha controls the label skew") {
    const auto labels = cyclic_labels(10, 1000);
    const auto flat =
        make_partition(params_of({{"kind", "dirichlet"}, {"alpha", "100"}}), labels, 10, 20, 3);
    const auto skewed =
        make_partition(params_of({{"kind", "dirichlet"}, {"alpha", "0.05"}}), labels, 10, 20, 3);
    // alpha = 100: every node close to 10% of each class.
    CHECK(mean_max_share(flat) < 0.2);
    for (const auto& h : flat.label_histogram)
      CHECK(std::count(h.begin(), h.end(), 0) == 0);
    // alpha = 0.05: each node dominated by one class.
    CHECK(mean_max_share(skewed) > 0.6);
    // A node stops receiving once it holds its fair share (500), so it can exceed that by at
    // most the piece of one class (1000).
    for (const auto& v : skewed.node_indices)
      CHECK(v.size() < 1500);
  }

  TEST_CASE("Partition: dirichlet respects min_size") {
    const auto labels = cyclic_labels(10, 100);
    const auto p =
        make_partition(params_of({{"kind", "dirichlet"}, {"alpha", "0.3"}, {"min_size", "20"}}),
                       labels, 10, 20, 9);
    for (const auto& v : p.node_indices)
      CHECK(v.size() >= 20);
  }

  TEST_CASE("Partition: impossible dirichlet settings fail with a clear message") {
    const auto labels = cyclic_labels(10, 50);
    SUBCASE("min_size x nodes above the training set size fails at once") {
      const std::string msg = config_error_of([&] {
        make_partition(params_of({{"kind", "dirichlet"}, {"min_size", "11"}}), labels, 10, 50, 1);
      });
      CHECK(msg.find("s.yaml:3: min_size: min_size 11 x 50 nodes needs 550 training examples, "
                     "the training set has 500") == 0);
    }
    SUBCASE("a tiny alpha exhausts the redraws") {
      const std::string msg = config_error_of([&] {
        make_partition(params_of({{"kind", "dirichlet"}, {"alpha", "0.001"}}), labels, 10, 40, 1);
      });
      CHECK(msg == "s.yaml:1: partition: dirichlet alpha=0.001 could not give every one of 40 "
                   "nodes >= 10 examples in 1000 draws; raise alpha, lower min_size or use "
                   "fewer nodes");
    }
  }

  TEST_CASE("Partition: shards aligned with classes give each node at most two classes") {
    // 10 classes x 100 examples, 5 nodes x 2 shards: every shard is exactly one class.
    const auto labels = cyclic_labels(10, 100);
    const auto p = make_partition(params_of({{"kind", "shards"}, {"shards_per_node", "2"}}), labels,
                                  10, 5, 11);
    check_cover(p, labels, 10, 5);
    for (const auto& h : p.label_histogram) {
      // Two distinct shards are two distinct classes here.
      CHECK(std::count_if(h.begin(), h.end(), [](auto x) { return x > 0; }) == 2);
      CHECK(std::accumulate(h.begin(), h.end(), std::int64_t{0}) == 200);
    }

    const std::string msg = config_error_of([&] {
      make_partition(params_of({{"kind", "shards"}, {"shards_per_node", "30"}}), labels, 10, 40, 1);
    });
    CHECK(msg.find("s.yaml:3: shards_per_node: 40 nodes x 30 shards need at least 1200") == 0);
  }

  TEST_CASE("Partition: bad node counts and unknown kinds are ConfigErrors") {
    const auto labels = cyclic_labels(2, 5);
    CHECK(config_error_of([&] {
            make_partition(params_of({}), labels, 2, 0, 1);
          }).find("s.yaml:1: partition: cannot split 10 training examples among 0 nodes") == 0);
    CHECK(config_error_of([&] {
            make_partition(params_of({}), labels, 2, 11, 1);
          }).find("cannot split 10 training examples among 11 nodes") != std::string::npos);
    CHECK(config_error_of([&] {
            make_partition(params_of({{"kind", "dirichlet"}, {"alpha", "0"}}), labels, 2, 1, 1);
          }).find("s.yaml:3: alpha: expected a number > 0") == 0);
    CHECK(config_error_of([&] {
            make_partition(params_of({{"kind", "diriclet"}}), labels, 2, 1, 1);
          }).find("did you mean 'dirichlet'") != std::string::npos);
  }

  TEST_CASE("Partition: dirichlet_qg gives equal slices of the class-ordered buckets") {
    const auto labels = cyclic_labels(10, 1000);
    for (int nodes : {7, 16}) {
      CAPTURE(nodes);
      const auto p = make_partition(params_of({{"kind", "dirichlet_qg"}, {"alpha", "0.1"}}), labels,
                                    10, nodes, 4);
      // Equal sizes floor(N/n); disjoint; the remainder unused.
      std::vector<int> seen(labels.size(), 0);
      std::vector<std::uint32_t> all;
      for (const auto& v : p.node_indices) {
        CHECK(v.size() == labels.size() / static_cast<std::size_t>(nodes));
        for (auto k : v)
          CHECK(++seen[k] == 1);
        all.insert(all.end(), v.begin(), v.end());
      }
      // Buckets are not shuffled: along the concatenation labels only fall where a new
      // bucket starts, at most once per node of the groups.
      int falls = 0;
      for (std::size_t k = 1; k < all.size(); ++k)
        falls += labels[all[k]] < labels[all[k - 1]] ? 1 : 0;
      CHECK(falls <= nodes - 1);
      CHECK(mean_max_share(p) > 0.5); // alpha = 0.1 is strongly skewed
      const auto flat = make_partition(params_of({{"kind", "dirichlet_qg"}, {"alpha", "100"}}),
                                       labels, 10, nodes, 4);
      CHECK(mean_max_share(flat) < 0.25);
    }
    // Same seed, same split; the group size changes the split.
    const auto two_classes = cyclic_labels(2, 5000); // too few classes for 10 skewed nodes
    const auto a = make_partition(params_of({{"kind", "dirichlet_qg"}}), labels, 10, 16, 8);
    const auto b = make_partition(params_of({{"kind", "dirichlet_qg"}}), labels, 10, 16, 8);
    const auto c = make_partition(params_of({{"kind", "dirichlet_qg"}, {"group_size", "16"}}),
                                  labels, 10, 16, 8);
    CHECK(a.node_indices == b.node_indices);
    CHECK(a.node_indices != c.node_indices);
    CHECK(config_error_of([&] {
            make_partition(
                params_of({{"kind", "dirichlet_qg"}, {"alpha", "0.0001"}, {"max_redraws", "3"}}),
                two_classes, 2, 16, 1);
          }).find("s.yaml:3: alpha: dirichlet_qg alpha=0.0001 could not give every node") == 0);
  }

  TEST_CASE("Partition: classes_per_node gives node i classes (i*k + j) mod C, equal sizes") {
    const auto labels = cyclic_labels(10, 100);
    const auto p = make_partition(
        params_of({{"kind", "classes_per_node"}, {"classes_per_node", "2"}}), labels, 10, 8, 3);
    // Classes 0..5 have two owners (nodes i and i+5 share 2i mod 10): 50 examples each; the
    // others one owner: 100. Every node is cut to the smallest node, 100 examples.
    for (std::size_t i = 0; i < 8; ++i) {
      CAPTURE(i);
      const auto& h = p.label_histogram[i];
      CHECK(p.node_indices[i].size() == 100);
      for (std::size_t c = 0; c < 10; ++c) {
        const bool owned = c == (2 * i) % 10 || c == (2 * i + 1) % 10;
        CHECK((h[c] > 0) == owned);
      }
    }
    CHECK(config_error_of([&] {
            make_partition(params_of({{"kind", "classes_per_node"}, {"classes_per_node", "11"}}),
                           labels, 10, 8, 3);
          }).find("s.yaml:3: classes_per_node: expected") == 0);
    // Two nodes, one class each: classes 2..9 are unused, node sizes 100.
    const auto small = make_partition(
        params_of({{"kind", "classes_per_node"}, {"classes_per_node", "1"}}), labels, 10, 2, 3);
    CHECK(small.label_histogram[0][0] == 100);
    CHECK(small.label_histogram[1][1] == 100);
  }

  TEST_CASE("Partition: the kinds are listed with help") {
    const auto kinds = partition_kinds();
    REQUIRE(kinds.size() == 5);
    CHECK(kinds[0].first == "iid");
    CHECK(kinds[1].first == "dirichlet");
    CHECK(kinds[2].first == "dirichlet_qg");
    CHECK(kinds[3].first == "shards");
    CHECK(kinds[4].first == "classes_per_node");
    for (const auto& [name, help] : kinds)
      CHECK_FALSE(help.empty());
  }
}
