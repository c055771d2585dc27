// SPDX-License-Identifier: MIT
// ComputeTimeModel: means of each distribution, speeds, stragglers.
#include "sim/core/errors.hpp"
#include "sim/system/compute_time_model.hpp"
#include "support/params_helper.hpp"

#include <doctest/doctest.h>

using namespace dtsim;
using testing::make_params;

namespace {
double mean_time(ComputeTimeModel& m, int node, int draws) {
  double s = 0;
  for (int i = 0; i < draws; ++i)
    s += m.sample(node).seconds();
  return s / draws;
}
} // namespace

TEST_SUITE("system") {
  TEST_CASE("ComputeTimeModel: every distribution has the configured mean") {
    for (const char* dist : {"constant", "normal", "lognormal", "exponential", "gamma"}) {
      CAPTURE(dist);
      ComputeTimeModel m(make_params({{"dist", dist}, {"mean_s", "0.2"}}), 2, 1);
      CHECK(mean_time(m, 0, 40000) == doctest::Approx(0.2).epsilon(0.02));
    }
  }

  TEST_CASE("ComputeTimeModel: permanent stragglers are round(fraction*n) nodes, slowed down") {
    auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
    root->fields.emplace_back("mean_s", ParamNode::make_scalar("0.1", 2));
    ParamNode st = ParamNode::make_map(3);
    st.fields.emplace_back("fraction", ParamNode::make_scalar("0.25", 3));
    st.fields.emplace_back("slowdown", ParamNode::make_scalar("4", 3));
    root->fields.emplace_back("stragglers", st);
    ComputeTimeModel m(Params(root, "s.yaml"), 8, 1);
    int slow = 0;
    for (int i = 0; i < 8; ++i) {
      const double t = m.sample(i).seconds();
      if (m.permanent_straggler(i)) {
        ++slow;
        CHECK(t == doctest::Approx(0.4));
        CHECK(m.effective_factor(i) == 4.0); // what /nodes/effective_slowdown records
      } else {
        CHECK(t == doctest::Approx(0.1));
        CHECK(m.effective_factor(i) == 1.0);
      }
    }
    CHECK(slow == 2);
  }

  TEST_CASE("ComputeTimeModel: per-node speed factors and their validation") {
    auto root = std::make_shared<ParamNode>(ParamNode::make_map(1));
    ParamNode list;
    list.kind = ParamNode::Kind::List;
    list.line = 2;
    list.items = {ParamNode::make_scalar("1"), ParamNode::make_scalar("2")};
    root->fields.emplace_back("speed_factors", list);
    ComputeTimeModel m(Params(root, "s.yaml"), 2, 1);
    CHECK(m.sample(1).seconds() == doctest::Approx(0.1));
    CHECK_THROWS_WITH(ComputeTimeModel(Params(root, "s.yaml"), 3, 1),
                      "s.yaml:2: speed_factors: expected 3 values (one per node), got 2");
  }

  TEST_CASE("ComputeTimeModel: each node has its own reproducible stream") {
    ComputeTimeModel a(make_params({{"dist", "exponential"}}), 2, 9);
    ComputeTimeModel b(make_params({{"dist", "exponential"}}), 2, 9);
    const auto a1 = a.sample(1);
    b.sample(0); // draws of node 0 must not shift node 1's stream
    CHECK(b.sample(1) == a1);
  }
}
