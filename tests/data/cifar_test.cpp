// SPDX-License-Identifier: MIT
// CIFAR-10/100 readers on tiny files written in the binary format, and their errors.
#include "data/cifar.hpp"
#include "data/load_dataset.hpp"
#include "support/config_error.hpp"
#include "support/params_helper.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace dtsim;
using namespace dtsim::testing;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system's temporary directory, unique per process and test,
// removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("dtsim-cifar-test-" + std::to_string(getpid()) + "-" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
};

// Pixel byte of record `id` at channel c, row y, column x: a pattern that differs per record.
unsigned char pixel(int id, int c, int y, int x) {
  return static_cast<unsigned char>((37 * id + 11 * c + 5 * y + 3 * x) % 256);
}

// Writes records with the given label bytes (one vector of label bytes per record); record
// ids continue from `first_id`.
void write_records(const fs::path& file, const std::vector<std::vector<int>>& labels,
                   int first_id) {
  std::ofstream out(file, std::ios::binary);
  for (std::size_t r = 0; r < labels.size(); ++r) {
    for (int l : labels[r])
      out.put(static_cast<char>(l));
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x)
          out.put(static_cast<char>(pixel(first_id + static_cast<int>(r), c, y, x)));
  }
}

// CIFAR-10 layout: five training batches with 2, 1, 3, 1, 2 records, a test batch with 2.
void write_cifar10(const fs::path& dir) {
  const std::vector<int> sizes{2, 1, 3, 1, 2};
  int id = 0;
  for (int b = 0; b < 5; ++b) {
    std::vector<std::vector<int>> labels;
    for (int r = 0; r < sizes[static_cast<std::size_t>(b)]; ++r)
      labels.push_back({(id + r) % 10});
    write_records(dir / ("data_batch_" + std::to_string(b + 1) + ".bin"), labels, id);
    id += sizes[static_cast<std::size_t>(b)];
  }
  write_records(dir / "test_batch.bin", {{7}, {3}}, 100);
}

float standardised(unsigned char b, float mean, float stddev) {
  return (static_cast<float>(b) / 255.0f - mean) / stddev;
}

} // namespace

TEST_SUITE("data") {
  TEST_CASE("Cifar10: tiny binary files load in order, standardised per channel") {
    const TempDir dir("c10");
    write_cifar10(dir.path);
    const DataSplit s =
        *load_dataset(make_params({{"dataset", "cifar10"}, {"path", dir.str()}}), 1);
    CHECK(s.train.name == "cifar10");
    CHECK(s.train.num_classes == 10);
    CHECK(s.train.shape == std::vector<int>{3, 32, 32});
    CHECK(s.train.num_features() == 3072);
    REQUIRE(s.train.size() == 9);
    REQUIRE(s.test.size() == 2);
    for (int n = 0; n < 9; ++n)
      CHECK(s.train.labels[static_cast<std::size_t>(n)] == n % 10);
    CHECK(s.test.labels == std::vector<std::int32_t>{7, 3});
    const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, stddev[3] = {0.2470f, 0.2435f, 0.2616f};
    for (int n : {0, 4, 8})
      for (int c = 0; c < 3; ++c)
        for (int y : {0, 13, 31})
          for (int x : {0, 20, 31})
            CHECK(s.train.features(c * 1024 + y * 32 + x, n) ==
                  standardised(pixel(n, c, y, x), mean[c], stddev[c]));
    CHECK(s.test.features(2 * 1024 + 5 * 32 + 6, 1) ==
          standardised(pixel(101, 2, 5, 6), mean[2], stddev[2]));
  }

  TEST_CASE("Cifar100: fine labels by default, coarse on request") {
    const TempDir dir("c100");
    write_records(dir.path / "train.bin", {{3, 71}, {19, 99}, {0, 5}}, 0);
    write_records(dir.path / "test.bin", {{12, 42}}, 10);
    const Params fine = make_params({{"dataset", "cifar100"}, {"path", dir.str()}});
    const DataSplit f = *load_dataset(fine, 1);
    CHECK(f.train.name == "cifar100");
    CHECK(f.train.num_classes == 100);
    CHECK(f.train.labels == std::vector<std::int32_t>{71, 99, 5});
    CHECK(f.test.labels == std::vector<std::int32_t>{42});
    REQUIRE(fine.node().find("labels") != nullptr); // the default is written back
    CHECK(fine.node().find("labels")->scalar == "fine");
    CHECK(f.train.features(1024 + 33, 2) == standardised(pixel(2, 1, 1, 1), 0.4865f, 0.2564f));

    const DataSplit c = *load_dataset(
        make_params({{"dataset", "cifar100"}, {"path", dir.str()}, {"labels", "coarse"}}), 1);
    CHECK(c.train.num_classes == 20);
    CHECK(c.train.labels == std::vector<std::int32_t>{3, 19, 0});
    CHECK(c.test.labels == std::vector<std::int32_t>{12});
  }

  TEST_CASE("Cifar: missing directories and files name the key and the expected files") {
    CHECK(config_error_of([] {
            load_dataset(make_params({{"dataset", "cifar10"}, {"path", "/nonexistent/c10"}}), 1);
          }) == "test.yaml:3: path: /nonexistent/c10/data_batch_1.bin not found; expected the "
                "CIFAR-10 binary version (data_batch_1.bin ... data_batch_5.bin, "
                "test_batch.bin from cifar-10-binary.tar.gz) in /nonexistent/c10");
    CHECK(config_error_of([] {
            load_dataset(make_params({{"dataset", "cifar100"}, {"path", "/nonexistent/c100"}}), 1);
          }) == "test.yaml:3: path: /nonexistent/c100/train.bin not found; expected the "
                "CIFAR-100 binary version (train.bin, test.bin from cifar-100-binary.tar.gz) in "
                "/nonexistent/c100");
    CHECK(config_error_of([] {
            load_dataset(make_params({{"dataset", "cifar10"}}), 1);
          }) == "test.yaml:1: path: expected the directory of the CIFAR-10 binary files "
                "(data_batch_1.bin ... data_batch_5.bin, test_batch.bin)");
    const TempDir dir("missing4");
    write_cifar10(dir.path);
    fs::remove(dir.path / "data_batch_4.bin");
    const std::string msg = config_error_of([&] {
      load_dataset(make_params({{"dataset", "cifar10"}, {"path", dir.str()}}), 1);
    });
    CHECK(msg.find("data_batch_4.bin not found; expected the CIFAR-10 binary version") !=
          std::string::npos);
  }

  TEST_CASE("Cifar: truncated files and out-of-range labels are refused") {
    const TempDir dir("bad");
    write_cifar10(dir.path);
    {
      std::ofstream out(dir.path / "test_batch.bin", std::ios::binary | std::ios::app);
      out.put('x'); // one byte too many
    }
    const Params p = make_params({{"dataset", "cifar10"}, {"path", dir.str()}});
    CHECK(config_error_of([&] { load_dataset(p, 1); }) ==
          "test.yaml:3: path: " + (dir.path / "test_batch.bin").string() +
              ": 6147 bytes is not a whole number of 3073-byte records; expected the CIFAR-10 "
              "binary version (data_batch_1.bin ... data_batch_5.bin, test_batch.bin from "
              "cifar-10-binary.tar.gz)");
    write_records(dir.path / "test_batch.bin", {{7}, {10}}, 0);
    CHECK(config_error_of([&] { load_dataset(p, 1); }) ==
          "test.yaml:3: path: " + (dir.path / "test_batch.bin").string() +
              ": label 10 of record 1 is not in [0, 9]");
  }

  TEST_CASE("Cifar: labels is a cifar100 key only, so cifar10 leaves it unread") {
    const TempDir dir("labels");
    write_cifar10(dir.path);
    const Params p =
        make_params({{"dataset", "cifar10"}, {"path", dir.str()}, {"labels", "coarse"}});
    load_dataset(p, 1);
    CHECK_THROWS_AS(p.reject_unused(), ConfigError);
  }
}
