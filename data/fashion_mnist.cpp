// SPDX-License-Identifier: MIT
// Fashion-MNIST (Xiao et al., arXiv:1708.07747) from the Debian package's IDX files.
#include "data/fashion_mnist.hpp"

#include "data/idx_reader.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/huge_pages.hpp"

#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>

namespace dtsim {
namespace {

constexpr int kSide = 28;
constexpr int kClasses = 10;
// Per-pixel mean and standard deviation of the training set after scaling to [0, 1].
constexpr float kMean = 0.2860F;
constexpr float kStd = 0.3530F;

Dataset load_part(const std::string& dir, const std::string& stem, const std::string& where) {
  const std::string images_file = (std::filesystem::path(dir) / (stem + "-images-idx3-ubyte.gz"));
  const std::string labels_file = (std::filesystem::path(dir) / (stem + "-labels-idx1-ubyte.gz"));
  for (const std::string& f : {images_file, labels_file}) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(f, ec))
      throw ConfigError(where + ": " + f +
                        " not found; install the Debian package dataset-fashion-mnist "
                        "(apt-get install dataset-fashion-mnist) or set data.path");
  }
  const IdxArray images = read_idx(images_file, 3, where);
  const IdxArray labels = read_idx(labels_file, 1, where);
  if (images.dims[1] != kSide || images.dims[2] != kSide)
    throw ConfigError(where + ": " + images_file + ": expected 28x28 images, got " +
                      std::to_string(images.dims[1]) + "x" + std::to_string(images.dims[2]));
  if (images.dims[0] != labels.dims[0])
    throw ConfigError(where + ": " + labels_file + ": holds " + std::to_string(labels.dims[0]) +
                      " labels but " + images_file + " holds " + std::to_string(images.dims[0]) +
                      " images");

  Dataset d;
  d.name = "fashion-mnist";
  d.num_classes = kClasses;
  d.shape = {1, kSide, kSide};
  const Eigen::Index n = images.dims[0];
  d.features.resize(kSide * kSide, n);
  advise_huge_pages(d.features.data(), images.bytes.size() * sizeof(float));
  // One column per example in column-major storage is exactly the IDX byte order, so the
  // conversion is one linear pass. Computed, not looked up: the same float operations as a
  // table would hold, but they vectorise (a gather per byte does not).
  // In parallel chunks: most of the cost is the kernel providing fresh zeroed pages, which
  // each thread does for the pages it touches first.
  float* out = d.features.data();
  const std::uint8_t* in = images.bytes.data();
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, images.bytes.size(), std::size_t{1} << 22),
                    [&](const tbb::blocked_range<std::size_t>& r) {
                      for (std::size_t i = r.begin(); i < r.end(); ++i)
                        out[i] = (static_cast<float>(in[i]) / 255.0F - kMean) / kStd;
                    });

  d.labels.resize(labels.bytes.size());
  for (std::size_t i = 0; i < labels.bytes.size(); ++i) {
    if (labels.bytes[i] >= kClasses)
      throw ConfigError(where + ": " + labels_file + ": label " + std::to_string(labels.bytes[i]) +
                        " of example " + std::to_string(i) + " is not in [0, 9]");
    d.labels[i] = labels.bytes[i];
  }
  return d;
}

} // namespace

std::shared_ptr<const DataSplit> load_fashion_mnist(const std::string& dir,
                                                    const std::string& where) {
  // Decoded once per process: a sweep validates and runs many points on the same files, and
  // decoding is most of a small run's start-up. Keyed by folder and file times, so a changed
  // file is read again.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const DataSplit>> decoded;
  std::string key = std::filesystem::absolute(dir).lexically_normal().string();
  for (const char* f : {"train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"}) {
    std::error_code ec;
    const auto t = std::filesystem::last_write_time(std::filesystem::path(dir) / f, ec);
    key += '|'; // appended apart: "|" + string trips GCC 12's -Wrestrict false positive
    key += std::to_string(ec ? 0 : t.time_since_epoch().count());
  }
  const std::lock_guard lock(mutex);
  auto& entry = decoded[key];
  if (!entry) {
    // Both parts at once; should both fail, the training set's error is the one reported,
    // whichever thread finished first.
    DataSplit split;
    std::exception_ptr train_error, test_error;
    tbb::parallel_invoke(
        [&] {
          try {
            split.train = load_part(dir, "train", where);
          } catch (...) {
            train_error = std::current_exception();
          }
        },
        [&] {
          try {
            split.test = load_part(dir, "t10k", where);
          } catch (...) {
            test_error = std::current_exception();
          }
        });
    if (train_error)
      std::rethrow_exception(train_error);
    if (test_error)
      std::rethrow_exception(test_error);
    entry = std::make_shared<const DataSplit>(std::move(split));
  }
  return entry;
}

} // namespace dtsim
