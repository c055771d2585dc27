// SPDX-License-Identifier: MIT
// Fuzzes the CIFAR-10/100 binary readers. The first byte picks the format (CIFAR-10, or
// CIFAR-100 with fine or coarse labels); the rest is split in two: the training file(s) and
// the test file. CIFAR-10's five training files share the first half (one record each is
// the common case: the size checks, label range and standardisation all run).
#include "data/cifar.hpp"
#include "fuzz_input.hpp"
#include "sim/core/errors.hpp"

#include <filesystem>
#include <fstream>

namespace {

void write(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1)
    return 0;
  const int format = data[0] % 3;
  const std::uint8_t* rest = data + 1;
  const std::size_t half = (size - 1) / 2;
  const std::string dir = dtsim::fuzz::scratch_path("_cifar");
  std::filesystem::create_directories(dir);
  try {
    if (format == 0) {
      for (int k = 1; k <= 5; ++k)
        write(dir + "/data_batch_" + std::to_string(k) + ".bin", rest, half);
      write(dir + "/test_batch.bin", rest + half, size - 1 - half);
      dtsim::load_cifar10(dir, "fuzz");
    } else {
      write(dir + "/train.bin", rest, half);
      write(dir + "/test.bin", rest + half, size - 1 - half);
      dtsim::load_cifar100(dir, format == 1 ? dtsim::CifarLabels::Fine : dtsim::CifarLabels::Coarse,
                           "fuzz");
    }
  } catch (const dtsim::ConfigError&) {
  }
  return 0;
}
