// SPDX-License-Identifier: MIT
// CIFAR binary files: fixed-size records of label bytes and three 32x32 colour planes.
#include "data/cifar.hpp"

#include "sim/core/errors.hpp"
#include "sim/core/huge_pages.hpp"

#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace dtsim {
namespace {

constexpr int kSide = 32;
constexpr int kPlane = kSide * kSide;
constexpr int kPixels = 3 * kPlane;

// One variant of the format: its files, label bytes per record and normalisation.
struct CifarFormat {
  std::string name;               // dataset name, "cifar10" / "cifar100"
  std::string title;              // "CIFAR-10" / "CIFAR-100"
  std::vector<std::string> train; // training files in order
  std::string test;               // test file
  int label_bytes = 1;            // label bytes before the pixels of a record
  int label_index = 0;            // which of them is the class
  int classes = 10;
  std::array<float, 3> mean{}; // per channel, pixels scaled to [0, 1]
  std::array<float, 3> stddev{};
  std::string expected_files() const; // for error messages
};

std::string CifarFormat::expected_files() const {
  std::string s = "the " + title + " binary version (";
  s += train.size() > 1 ? train.front() + " ... " + train.back() : train.front();
  s += ", " + test + " from " + name.substr(0, 5) + "-" + name.substr(5) + "-binary.tar.gz)";
  return s;
}

std::vector<unsigned char> read_file(const std::string& file, const std::string& where) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw ConfigError(where + ": " + file + ": cannot be opened");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every record of `files`, in order, as one dataset.
Dataset read_records(const CifarFormat& f, const std::vector<std::string>& files,
                     const std::string& dir, const std::string& where) {
  const std::size_t record = static_cast<std::size_t>(f.label_bytes) + kPixels;
  std::vector<std::vector<unsigned char>> contents;
  std::size_t count = 0;
  for (const std::string& name : files) {
    const std::string file = std::filesystem::path(dir) / name;
    contents.push_back(read_file(file, where));
    const std::size_t size = contents.back().size();
    if (size == 0 || size % record != 0)
      throw ConfigError(where + ": " + file + ": " + std::to_string(size) +
                        " bytes is not a whole number of " + std::to_string(record) +
                        "-byte records; expected " + f.expected_files());
    count += size / record;
  }

  Dataset d;
  d.name = f.name;
  d.num_classes = f.classes;
  d.shape = {3, kSide, kSide};
  d.features.resize(kPixels, static_cast<Eigen::Index>(count));
  advise_huge_pages(d.features.data(), count * kPixels * sizeof(float));
  d.labels.resize(count);
  // The record's pixel order is the feature order (channel planes), so each channel is one
  // pass through a 256-entry table.
  std::array<std::array<float, 256>, 3> table{};
  for (std::size_t c = 0; c < 3; ++c)
    for (int b = 0; b < 256; ++b)
      table[c][static_cast<std::size_t>(b)] =
          (static_cast<float>(b) / 255.0f - f.mean[c]) / f.stddev[c];
  std::size_t n = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::vector<unsigned char>& bytes = contents[i];
    for (std::size_t r = 0; r < bytes.size() / record; ++r, ++n) {
      const unsigned char* rec = bytes.data() + r * record;
      const int label = rec[f.label_index];
      if (label >= f.classes)
        throw ConfigError(where + ": " + (std::filesystem::path(dir) / files[i]).string() +
                          ": label " + std::to_string(label) + " of record " + std::to_string(r) +
                          " is not in [0, " + std::to_string(f.classes - 1) + "]");
      d.labels[n] = label;
      float* col = d.features.col(static_cast<Eigen::Index>(n)).data();
      const unsigned char* px = rec + f.label_bytes;
      for (std::size_t c = 0; c < 3; ++c)
        for (std::size_t p = 0; p < kPlane; ++p)
          col[c * kPlane + p] = table[c][px[c * kPlane + p]];
    }
  }
  return d;
}

DataSplit load(const CifarFormat& f, const std::string& dir, const std::string& where) {
  // Every file is checked before any is read, so that the message names the first missing.
  std::vector<std::string> all = f.train;
  all.push_back(f.test);
  for (const std::string& name : all) {
    const std::string file = std::filesystem::path(dir) / name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
      throw ConfigError(where + ": " + file + " not found; expected " + f.expected_files() +
                        " in " + dir);
  }
  return {read_records(f, f.train, dir, where), read_records(f, {f.test}, dir, where)};
}

} // namespace

DataSplit load_cifar10(const std::string& dir, const std::string& where) {
  CifarFormat f;
  f.name = "cifar10";
  f.title = "CIFAR-10";
  for (int i = 1; i <= 5; ++i)
    f.train.push_back("data_batch_" + std::to_string(i) + ".bin");
  f.test = "test_batch.bin";
  f.mean = {0.4914f, 0.4822f, 0.4465f};
  f.stddev = {0.2470f, 0.2435f, 0.2616f};
  return load(f, dir, where);
}

DataSplit load_cifar100(const std::string& dir, CifarLabels labels, const std::string& where) {
  CifarFormat f;
  f.name = "cifar100";
  f.title = "CIFAR-100";
  f.train = {"train.bin"};
  f.test = "test.bin";
  f.label_bytes = 2;
  f.label_index = labels == CifarLabels::Coarse ? 0 : 1;
  f.classes = labels == CifarLabels::Coarse ? 20 : 100;
  f.mean = {0.5071f, 0.4865f, 0.4409f};
  f.stddev = {0.2673f, 0.2564f, 0.2762f};
  return load(f, dir, where);
}

} // namespace dtsim
