// SPDX-License-Identifier: MIT
// The stability protocol end to end: evaluation tied to progress, strict keys, the stated
// statistics, tuning inside a sweep, and `dtsim report`.
#include "run_cli.hpp"
#include "sim/trace/hdf5_trace_sink.hpp"
#include "sim/trace/trace_reader.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace dtsim;
using testing::run_cli;

namespace {

std::string temp_dir() {
  return testing::process_temp_dir("dtsim_protocol_test_");
}

std::string write_file(const std::string& name, const std::string& text) {
  return testing::write_temp_file(temp_dir(), name, text);
}

// No `eval:` block: the default evaluation rule applies.
const char* kSynthetic = R"(name: protocol
seed: 1
nodes: 8
data:
  dataset: synthetic
  synthetic: {features: 12, classes: 3, train: 1920, test: 300}
  partition: {kind: iid}
  batch_size: 8
model: {kind: softmax}
topology: {kind: ring}
algorithm: {name: dsgd, mode: sync, lr: 0.1}
system: {compute: {dist: exponential, mean_s: 0.01}}
stop: {epochs: 1}
)";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The cells of the Markdown table row that starts with `first`.
std::vector<std::string> markdown_row(const std::string& table, const std::string& first) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::istringstream parts(line);
    std::string cell;
    std::getline(parts, cell, '|'); // before the first bar
    while (std::getline(parts, cell, '|')) {
      const auto b = cell.find_first_not_of(' ');
      const auto e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    if (!cells.empty() && cells[0] == first)
      return cells;
  }
  return {};
}

bool one_line(const std::string& output) {
  return output.find('\n') == output.size() - 1;
}

} // namespace

TEST_SUITE("app") {
  TEST_CASE("default evaluation: 8 and 32 nodes get the same number of evaluations per epoch") {
    const std::string scenario = write_file("p.yaml", kSynthetic);
    std::size_t rows[2] = {0, 0};
    int k = 0;
    for (const char* nodes : {"8", "32"}) {
      const std::string out = temp_dir() + "/n" + nodes + ".h5";
      const auto r = run_cli("run " + scenario + " --quiet -o " + out + " --set nodes=" + nodes);
      REQUIRE(r.exit_code == 0);
      CHECK(r.output.find("warning") == std::string::npos);
      rows[k++] = read_trace(out).metrics.at("test_accuracy").size();
    }
    // 20 per epoch plus the one before training, whatever n.
    CHECK(rows[0] >= 20);
    CHECK(std::abs(static_cast<long>(rows[0]) - static_cast<long>(rows[1])) <= 1);

    // Fewer than 20 evaluations: a warning on the terminal and in the trace.
    const std::string sparse = temp_dir() + "/sparse.h5";
    const auto r =
        run_cli("run " + scenario + " --quiet -o " + sparse + " --set 'eval={every_epochs: 0.25}'");
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("warning: ") != std::string::npos);
    const TraceContents t = read_trace(sparse);
    CHECK(t.metrics.at("test_accuracy").size() < 20);
    CHECK(t.text_attributes.at("warnings").find("evaluations") != std::string::npos);
    // analyze shows the stability measures of that run as missing, with the reason.
    const auto a = run_cli("analyze " + sparse + " --columns final_acc,acc_std_2nd_half");
    CHECK(a.exit_code == 0);
    CHECK(a.output.find("- (<10 pts)") != std::string::npos);

    // Exactly one rule.
    const auto two =
        run_cli("validate " + scenario + " --set 'eval={every_s: 1, every_updates: 5}'");
    CHECK(two.exit_code == 2);
    CHECK(two.output.find("every_") != std::string::npos);
  }

  TEST_CASE("analyze: unknown --by keys and --baseline values exit 2 with one line") {
    const std::string dir = temp_dir() + "/strict";
    std::filesystem::create_directories(dir);
    const std::string scenario = write_file("s.yaml", kSynthetic);
    REQUIRE(run_cli("run " + scenario + " --quiet -o " + dir + "/a.h5").exit_code == 0);
    const auto typo = run_cli("analyze " + dir + " --by nodes,algorithm.nam");
    CHECK(typo.exit_code == 2);
    CHECK(one_line(typo.output));
    CHECK(typo.output.find("did you mean 'algorithm.name'") != std::string::npos);
    const auto base =
        run_cli("analyze " + dir + " --by algorithm.name --baseline algorithm.name=dsdg");
    CHECK(base.exit_code == 2);
    CHECK(one_line(base.output));
    CHECK(base.output.find("did you mean 'dsgd'") != std::string::npos);
  }

  TEST_CASE("analyze: group std is the sample std and the CI is Student t, from the runs") {
    const std::string dir = temp_dir() + "/stats";
    std::filesystem::create_directories(dir);
    const std::string scenario = write_file("st.yaml", kSynthetic);
    for (const char* seed : {"1", "2", "3"})
      REQUIRE(
          run_cli("run " + scenario + " --quiet -o " + dir + "/s" + seed + ".h5 --set seed=" + seed)
              .exit_code == 0);
    // Per run, from the CSV; then by hand: mean, std with divisor k - 1, t(0.975, 2) s / sqrt 3.
    REQUIRE(run_cli("analyze " + dir + " --csv " + dir + "/runs.csv").exit_code == 0);
    std::ifstream csv(dir + "/runs.csv");
    std::string line;
    std::getline(csv, line);
    REQUIRE(line.rfind("trace,status,final_acc,", 0) == 0);
    std::vector<double> x;
    while (std::getline(csv, line))
      x.push_back(std::stod(line.substr(line.find(',', line.find(',') + 1) + 1)));
    REQUIRE(x.size() == 3);
    const double mean = (x[0] + x[1] + x[2]) / 3;
    double ss = 0;
    for (double v : x)
      ss += (v - mean) * (v - mean);
    const double std = std::sqrt(ss / 2);
    REQUIRE(std > 0);
    const double ci = 4.302652730 * std / std::sqrt(3.0);

    const auto g =
        run_cli("analyze " + dir + " --by algorithm.name --columns final_acc --markdown");
    REQUIRE(g.exit_code == 0);
    const auto row = markdown_row(g.output, "dsgd");
    REQUIRE(row.size() >= 4);
    CHECK(row[1] == "3");
    const auto pm = row[2].find(" ± ");
    REQUIRE(pm != std::string::npos);
    CHECK(std::stod(row[2].substr(0, pm)) == doctest::Approx(mean).epsilon(1e-3));
    CHECK(std::stod(row[2].substr(pm + 4)) == doctest::Approx(std).epsilon(1e-3));
    REQUIRE(row[3].rfind("±", 0) == 0);
    CHECK(std::stod(row[3].substr(2)) == doctest::Approx(ci).epsilon(1e-3));
    CHECK(g.output.find("sample std") != std::string::npos);
  }

  TEST_CASE("sweep tune: choices per group recorded, evaluation runs use them, and the report") {
    const std::string dir = temp_dir() + "/tune";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/base.yaml") << kSynthetic;
    // lr 0.001 barely moves in one epoch; 0.3 learns: the tuning must pick 0.3 in each group.
    std::ofstream(dir + "/sweep.yaml")
        << "name: tiny\nbase: base.yaml\noutput: " << dir
        << "/out\ngrid:\n  nodes: [4, 8]\n  seed: [1, 2]\n"
           "points:\n  - {label: D-PSGD}\n"
           "tune: {key: algorithm.lr, values: [0.001, 0.3], seeds: [11]}\n";
    // Tuning seeds must not be evaluation seeds.
    std::ofstream(dir + "/overlap.yaml")
        << "name: tiny\nbase: base.yaml\noutput: " << dir
        << "/o2\ngrid:\n  seed: [1, 2]\ntune: {key: algorithm.lr, values: [0.1], seeds: [2]}\n";
    const auto overlap = run_cli("sweep " + dir + "/overlap.yaml");
    CHECK(overlap.exit_code == 2);
    CHECK(one_line(overlap.output));

    const auto s = run_cli("sweep " + dir + "/sweep.yaml --jobs 2");
    REQUIRE(s.exit_code == 0);
    const std::string tuning = read_text(dir + "/out/tuning.csv");
    CHECK(tuning.rfind("group,key,value,seeds,diverged,score,chosen\n", 0) == 0);
    CHECK(tuning.find("nodes=4_label=D-PSGD,algorithm.lr,0.3,1,0,") != std::string::npos);
    CHECK(tuning.find("nodes=8_label=D-PSGD,algorithm.lr,0.3,1,0,") != std::string::npos);
    std::istringstream lines(tuning);
    int chosen = 0;
    for (std::string line; std::getline(lines, line);)
      if (line.size() > 2 && line.substr(line.size() - 2) == ",1") {
        ++chosen;
        CHECK(line.find(",0.3,") != std::string::npos);
      }
    CHECK(chosen == 2);
    const std::string index = read_text(dir + "/out/index.csv");
    CHECK(index.find(",tuned,") != std::string::npos);
    int tuned_rows = 0;
    for (std::size_t at = 0; (at = index.find("algorithm.lr=0.3", at)) != std::string::npos; ++at)
      ++tuned_rows;
    CHECK(tuned_rows >= 4);
    const TraceContents t = read_trace(dir + "/out/nodes=8_seed=2_label=D-PSGD.h5");
    CHECK(t.text_attributes.at("scenario").find("lr: 0.3") != std::string::npos);
    CHECK(std::filesystem::exists(dir + "/out/tune/nodes=8_label=D-PSGD_lr=0.001_seed=11.h5"));
    CHECK(std::filesystem::exists(dir + "/out/sweep-info.yaml"));

    // A new grid changes the choice: --resume reruns the evaluation runs it affects, not
    // keeping traces of the old value, and reuses the tuning runs it still has.
    {
      std::ofstream(dir + "/sweep2.yaml")
          << "name: tiny\nbase: base.yaml\noutput: " << dir
          << "/out\ngrid:\n  nodes: [4, 8]\n  seed: [1, 2]\n"
             "points:\n  - {label: D-PSGD}\n"
             "tune: {key: algorithm.lr, values: [0.001, 0.2], seeds: [11]}\n";
      const auto again = run_cli("sweep " + dir + "/sweep2.yaml --resume --jobs 2");
      REQUIRE(again.exit_code == 0);
      CHECK(again.output.find("tuning: 2 to run, 2 already done") != std::string::npos);
      CHECK(again.output.find("evaluation: 4 to run, 0 already done (4 traces rerun") !=
            std::string::npos);
      const TraceContents u = read_trace(dir + "/out/nodes=8_seed=2_label=D-PSGD.h5");
      CHECK(u.text_attributes.at("scenario").find("lr: 0.2") != std::string::npos);
    }

    // The report: Markdown with tables, the tuning choices, provenance, and its figures.
    const std::string md = dir + "/report/report.md";
    const auto r = run_cli("report " + dir + "/out -o " + md + " --by label --vs nodes");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const std::string text = read_text(md);
    CHECK(text.find("D-PSGD") != std::string::npos);
    CHECK(text.find("95% CI") != std::string::npos);
    CHECK(text.find("## Tuning") != std::string::npos);
    CHECK(text.find("## Provenance") != std::string::npos);
    // A build tree's dtsim draws with its own source tree's script, never an installed one.
    CHECK(text.find("| figures drawn by | `'/usr/bin/python3' '" DTSIM_SOURCE_DIR
                    "/analysis/plot.py'` |") != std::string::npos);
    CHECK(text.find("report-img/curves.png") != std::string::npos);
    CHECK(std::filesystem::file_size(dir + "/report/report-img/curves.png") > 1000);
    CHECK(std::filesystem::file_size(dir + "/report/report-img/vs-nodes.png") > 1000);
    // Tuning runs are not results: the table counts the 4 evaluation runs only.
    CHECK(text.find("4 finished evaluation runs") != std::string::npos);
    CHECK(text.find("Unfinished runs") == std::string::npos);

    // A run still writing its trace (a .partial, status running) is listed apart, not
    // averaged with the finished ones.
    {
      const TraceContents done = read_trace(dir + "/out/nodes=8_seed=2_label=D-PSGD.h5");
      RunHeader header;
      header.name = "still-running";
      header.scenario_yaml = done.text_attributes.at("scenario");
      header.seed = 9;
      Hdf5TraceSink running(dir + "/out/still-running.h5", EventLevel::None);
      running.begin(header);
      running.metrics(MetricsRow{{{"sim_time_s", 0.0}, {"test_accuracy", 0.1}}}, 0.0);
      // Destroyed unfinished: its .partial stays, with status `running`.
    }
    REQUIRE(std::filesystem::exists(dir + "/out/still-running.h5.partial"));
    const auto partial = run_cli("report " + dir + "/out -o " + md + " --by label --vs nodes");
    REQUIRE(partial.exit_code == 0);
    const std::string with_partial = read_text(md);
    CHECK(with_partial.find("4 finished evaluation runs in") != std::string::npos);
    CHECK(with_partial.find("(and 1 unfinished, left out") != std::string::npos);
    CHECK(with_partial.find("still-running.h5.partial`: running") != std::string::npos);
    std::filesystem::remove(dir + "/out/still-running.h5.partial");
    const auto bad = run_cli("report " + dir + "/out -o " + md + " --by lable");
    CHECK(bad.exit_code == 2);
    CHECK(one_line(bad.output));
  }
}
