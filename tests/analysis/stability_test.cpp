// SPDX-License-Identifier: MIT
// Stability measures against hand-computed values.
#include "analysis/stability.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <limits>
#include <vector>

using namespace dtsim::analysis;

TEST_SUITE("analysis") {
  TEST_CASE("stability: hand-computed curve") {
    // Second half (k >= 3): 0.6, 0.8, 0.6 -> mean 2/3, std sqrt(((1/15)^2*2 + (2/15)^2)/3).
    const std::vector<double> a = {0.2, 0.5, 0.7, 0.6, 0.8, 0.6};
    const Stability s = stability(a, 2);
    CHECK(s.best_value == doctest::Approx(0.8));
    CHECK(s.final_value == doctest::Approx(0.6)); // last 10% = last point
    CHECK(s.std_second_half == doctest::Approx(std::sqrt((2.0 / 225 + 4.0 / 225) / 3)));
    CHECK(s.mean_abs_change == doctest::Approx((0.2 + 0.2) / 2));
    CHECK(s.worst_drop == doctest::Approx(0.2)); // 0.8 -> 0.6 (and 0.7 -> 0.6)
    // Windows of 2: std of a pair = |x - y| / 2.
    CHECK(s.window_std == doctest::Approx((0.3 + 0.2 + 0.1 + 0.2 + 0.2) / 2 / 5));
    // Trailing MA of 2 at k = 3, 4, 5: 0.65, 0.7, 0.7 -> deviations 0.05, 0.1, 0.1.
    CHECK(s.oscillation == doctest::Approx((0.05 + 0.1 + 0.1) / 3));
  }

  TEST_CASE("stability: a flat curve is perfectly stable, and gains are relative reductions") {
    const std::vector<double> flat(20, 0.7);
    const Stability s = stability(flat);
    CHECK(s.std_second_half == doctest::Approx(0.0));
    CHECK(s.mean_abs_change == 0);
    CHECK(s.worst_drop == 0);
    CHECK(stability_gain(0.05, 0.04) == doctest::Approx(20.0));
    CHECK(std::isnan(stability_gain(0.0, 0.01)));
  }
}

#include "analysis/run_table.hpp"

TEST_SUITE("analysis") {
  TEST_CASE("run_table: groups in natural order, numbers by value") {
    using Key = std::vector<std::string>;
    CHECK(natural_less(Key{"4", "random"}, Key{"16", "cd-grab"}));
    CHECK_FALSE(natural_less(Key{"16", "cd-grab"}, Key{"4", "random"}));
    CHECK(natural_less(Key{"16", "cd-grab"}, Key{"16", "random"}));
    CHECK(natural_less(Key{"0.1"}, Key{"1e0"}));
    CHECK(natural_less(Key{"16"}, Key{"4x"})); // numbers before text
    CHECK(natural_less(Key{"2"}, Key{"1x"}));  // even when the text sorts first by characters
    CHECK_FALSE(natural_less(Key{"1x"}, Key{"2"}));
    CHECK(natural_less(Key{"dsgd"}, Key{"gsgm"}));
    CHECK_FALSE(natural_less(Key{"8"}, Key{"8"}));
    std::vector<RunRow> rows;
    for (const char* n : {"16", "4", "64", "8"})
      rows.push_back(
          RunRow{"", "completed", "", {n}, std::vector<double>(run_columns().size(), 1.0), {}});
    const auto groups = group_rows(rows);
    REQUIRE(groups.size() == 4);
    CHECK(groups[0].group == Key{"4"});
    CHECK(groups[1].group == Key{"8"});
    CHECK(groups[2].group == Key{"16"});
    CHECK(groups[3].group == Key{"64"});
  }

  TEST_CASE("format_cell: std only with several values, (k/n) when some runs lack one") {
    CHECK(format_cell(0.5, 0.01, 3, 3) == "0.5000 ± 0.0100");
    CHECK(format_cell(0.5, 0.0, 1, 1) == "0.5000");
    CHECK(format_cell(7.25, 1.5, 2, 3) == "7.2500 ± 1.5000 (2/3)");
    CHECK(format_cell(22.0, 0.0, 1, 3) == "22.0000 (1/3)");
    CHECK(format_cell(std::numeric_limits<double>::quiet_NaN(), 0, 0, 3) == "-");
    CHECK(format_cell(4540175740.0, 12.0, 3, 3) == "4540175740 ± 12");
  }

  TEST_CASE("run_table: per-epoch figures (train loss, herding bound, order bytes)") {
    dtsim::TraceContents t;
    t.text_attributes["status"] = "completed";
    t.number_attributes["order_bytes"] = 1234;
    t.epochs["train_loss"] = {0.9, 0.5, 0.4, 0.2, 0.6};
    t.epochs["test_accuracy"] = {0.6, 0.7, 0.75};
    t.epochs["herding_bound"] = {4.0, 2.0, 3.0};
    const RunRow r = summarize_run("e.h5", t, 0.8);
    const auto& cols = run_columns();
    auto value = [&](const std::string& name) {
      return r.values[static_cast<std::size_t>(std::find(cols.begin(), cols.end(), name) -
                                               cols.begin())];
    };
    CHECK(value("epoch_train_loss") == 0.6);
    CHECK(value("epoch_train_loss_2nd_half") == doctest::Approx(0.4)); // epochs 3..5
    CHECK(value("epoch_test_acc") == 0.75);
    CHECK(value("herding_bound") == 3.0);
    CHECK(value("herding_bound_mean") == doctest::Approx(2.5)); // epochs 2 and 3
    CHECK(value("order_bytes") == 1234);
    // A trace without /epochs leaves them NaN.
    const RunRow plain = summarize_run("p.h5", dtsim::TraceContents{}, 0.8);
    CHECK(std::isnan(plain.values[static_cast<std::size_t>(
        std::find(cols.begin(), cols.end(), "herding_bound") - cols.begin())]));
    // Nor has a run without evaluations any stability measure (not 0, "perfectly stable").
    for (const char* measure : {"final_acc", "acc_std_2nd_half", "acc_window_std",
                                "acc_mean_abs_change", "acc_oscillation", "acc_worst_drop"}) {
      CAPTURE(measure);
      CHECK(std::isnan(plain.values[static_cast<std::size_t>(
          std::find(cols.begin(), cols.end(), measure) - cols.begin())]));
    }
  }

  TEST_CASE("run_table: figures from a synthetic trace and grouping over seeds") {
    dtsim::TraceContents t;
    t.text_attributes["status"] = "completed";
    t.number_attributes["wall_seconds"] = 2.0;
    t.number_attributes["sim_time_s"] = 10.0;
    t.metrics["test_accuracy"] = {0.1, 0.5, 0.8, 0.7};
    t.metrics["sim_time_s"] = {0, 2, 4, 6};
    t.metrics["updates"] = {0, 10, 20, 30};
    t.metrics["bytes_sent"] = {0, 100, 300, 600};
    t.nodes["idle_s"] = {1.0, 2.0};
    t.nodes["compute_s"] = {4.0, 8.0};
    t.staleness_histogram = {1, 1, 2}; // mean (0 + 1 + 4) / 4
    RunRow r = summarize_run("a.h5", t, 0.75);
    const auto& cols = run_columns();
    auto value = [&](const RunRow& row, const std::string& name) {
      return row.values[static_cast<std::size_t>(std::find(cols.begin(), cols.end(), name) -
                                                 cols.begin())];
    };
    CHECK(value(r, "best_acc") == doctest::Approx(0.8));
    CHECK(value(r, "time_to_target_s") == doctest::Approx(4.0));
    CHECK(value(r, "updates_to_target") == doctest::Approx(20.0));
    // Four evaluations are too few for any stability window: missing, with the reason.
    CHECK(std::isnan(value(r, "acc_worst_drop")));
    CHECK(std::isnan(value(r, "acc_std_2nd_half")));
    CHECK(r.missing[static_cast<std::size_t>(std::find(cols.begin(), cols.end(), "acc_worst_drop") -
                                             cols.begin())] == "<10 pts");
    {
      // Ten: enough for the whole-curve measures, not for the second half (five points).
      dtsim::TraceContents longer = t;
      longer.metrics["test_accuracy"] = {0.1, 0.5, 0.8, 0.7, 0.75, 0.8, 0.8, 0.8, 0.8, 0.8};
      const RunRow l = summarize_run("l.h5", longer, 0.75);
      CHECK(value(l, "acc_worst_drop") == doctest::Approx(0.1));
      CHECK(std::isnan(value(l, "acc_std_2nd_half")));
    }
    CHECK(value(r, "staleness_mean") == doctest::Approx(1.25));
    CHECK(value(r, "staleness_p95") == 2.0); // 2 of 4 updates at 0-1, all 4 by 2
    CHECK(value(r, "sim_per_wall") == doctest::Approx(5.0));
    CHECK(value(r, "diverged") == 0.0);
    CHECK(value(r, "bytes_to_target") == 300.0);
    CHECK(value(r, "idle_per_compute") == doctest::Approx(0.25));
    CHECK(value(r, "sim_s") == 10.0);
    // acc_at_time: linear between the evaluations around the time, exact on one, missing
    // when not asked for or past the last evaluation (6 s).
    CHECK(std::isnan(value(r, "acc_at_time")));
    CHECK(value(summarize_run("a.h5", t, 0.75, 3.0), "acc_at_time") == doctest::Approx(0.65));
    CHECK(value(summarize_run("a.h5", t, 0.75, 4.0), "acc_at_time") == doctest::Approx(0.8));
    CHECK(value(summarize_run("a.h5", t, 0.75, 0.0), "acc_at_time") == doctest::Approx(0.1));
    CHECK(std::isnan(value(summarize_run("a.h5", t, 0.75, 6.5), "acc_at_time")));
    CHECK(std::isnan(value(r, "bits_per_coord")));
    {
      // A diverged run has no accuracy to average with the others: counted in `diverged`.
      dtsim::TraceContents diverged = t;
      diverged.text_attributes["status"] = "diverged";
      const RunRow d = summarize_run("d.h5", diverged, 0.75, 3.0);
      CHECK(value(d, "diverged") == 1.0);
      for (const char* measure : {"final_acc", "best_acc", "time_to_target_s", "acc_at_time"}) {
        CAPTURE(measure);
        CHECK(std::isnan(value(d, measure)));
        CHECK(d.missing[static_cast<std::size_t>(std::find(cols.begin(), cols.end(), measure) -
                                                 cols.begin())] == "diverged");
      }
      CHECK(value(d, "sim_s") == 10.0); // what it cost is still a figure
    }

    RunRow r2 = r;
    r2.values[0] = r.values[0] + 0.2;
    r.group = r2.group = {"gsgm"};
    RunRow other = r;
    other.group = {"asgd"};
    const auto groups = group_rows({r, r2, other});
    REQUIRE(groups.size() == 2);
    CHECK(groups[0].group == std::vector<std::string>{"asgd"}); // sorted, not as they came
    CHECK(groups[1].runs == 2);
    CHECK(groups[1].mean[0] == doctest::Approx(r.values[0] + 0.1));
    // Sample std (divisor k - 1) of {x, x + 0.2}: sqrt(0.02); the population std would be 0.1.
    CHECK(groups[1].std[0] == doctest::Approx(0.1414213562));
    // 95% CI half-width: t(0.975, 1) = 12.7062047 times std / sqrt(2) = 0.1.
    CHECK(groups[1].ci95[0] == doctest::Approx(1.27062047));
    CHECK(groups[1].counted[0] == 2);
    // A column only some runs have (here: one of two) counts only those.
    const std::size_t t_col = static_cast<std::size_t>(
        std::find(cols.begin(), cols.end(), "time_to_target_s") - cols.begin());
    RunRow missed = r;
    missed.values[t_col] = std::numeric_limits<double>::quiet_NaN();
    const auto partial = group_rows({r, missed});
    REQUIRE(partial.size() == 1);
    CHECK(partial[0].runs == 2);
    CHECK(partial[0].counted[t_col] == 1);
    CHECK(partial[0].mean[t_col] == doctest::Approx(4.0));
  }
}
