// SPDX-License-Identifier: MIT
// IdxReader: valid files round-trip; missing, foreign, truncated and corrupt files are named.
#include "data/idx_reader.hpp"
#include "test_params.hpp"

#include <cstdio>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <zlib.h>

using namespace dtsim;
using dtsim::test::config_error_of;

namespace {

// A scratch directory per process (ctest runs the cases in parallel), removed at the end.
class TempDir {
public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("dtsim_idx_reader_test_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
  std::filesystem::path path_;
};

std::vector<unsigned char> idx_bytes(std::uint32_t magic, const std::vector<std::uint32_t>& dims,
                                     std::size_t payload) {
  std::vector<unsigned char> b;
  auto put32 = [&](std::uint32_t x) {
    for (int s = 24; s >= 0; s -= 8)
      b.push_back(static_cast<unsigned char>(x >> s));
  };
  put32(magic);
  for (auto d : dims)
    put32(d);
  for (std::size_t i = 0; i < payload; ++i)
    b.push_back(static_cast<unsigned char>(i * 7 % 256));
  return b;
}

std::string write_gz(const TempDir& dir, const std::string& name,
                     const std::vector<unsigned char>& bytes) {
  const std::string file = dir.file(name);
  gzFile f = gzopen(file.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  gzclose(f);
  return file;
}

std::vector<char> file_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_raw(const std::string& file, const std::vector<char>& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace

TEST_SUITE("data") {
  TEST_CASE("IdxReader: a valid gzip IDX file gives its dimensions and bytes") {
    const TempDir dir;
    const auto file = write_gz(dir, "ok.gz", idx_bytes(0x803, {5, 3, 4}, 60));
    const IdxArray a = read_idx(file, 3, "s.yaml:3: data.path");
    CHECK(a.dims == std::vector<std::uint32_t>{5, 3, 4});
    REQUIRE(a.bytes.size() == 60);
    CHECK(a.bytes[0] == 0);
    CHECK(a.bytes[59] == 59 * 7 % 256);
  }

  TEST_CASE("IdxReader: a missing file names the file and the config location") {
    const TempDir dir;
    const std::string file = dir.file("absent.gz");
    const std::string msg = config_error_of([&] { read_idx(file, 1, "s.yaml:3: data.path"); });
    CHECK(msg == "s.yaml:3: data.path: " + file + ": not found");
  }

  TEST_CASE("IdxReader: a wrong magic number or dimension count is rejected") {
    const TempDir dir;
    SUBCASE("not unsigned bytes") {
      const auto file = write_gz(dir, "float.gz", idx_bytes(0xD01, {4}, 4));
      const std::string msg = config_error_of([&] { read_idx(file, 1, "w"); });
      CHECK(msg.find("w: " + file + ": not an IDX file") == 0);
      CHECK(msg.find("0x00000801 expected, got 0x00000d01") != std::string::npos);
    }
    SUBCASE("labels where images are expected") {
      const auto file = write_gz(dir, "labels.gz", idx_bytes(0x801, {4}, 4));
      const std::string msg = config_error_of([&] { read_idx(file, 3, "w"); });
      CHECK(msg.find("0x00000803 expected, got 0x00000801") != std::string::npos);
    }
  }

  TEST_CASE("IdxReader: truncated data, trailing bytes and a cut gzip stream are rejected") {
    const TempDir dir;
    SUBCASE("fewer bytes than the header announces") {
      const auto file = write_gz(dir, "short.gz", idx_bytes(0x803, {10, 28, 28}, 1000));
      const std::string msg = config_error_of([&] { read_idx(file, 3, "w"); });
      CHECK(msg.find("w: " + file + ": truncated") == 0);
    }
    SUBCASE("more bytes than the header announces") {
      const auto file = write_gz(dir, "long.gz", idx_bytes(0x801, {3}, 4));
      const std::string msg = config_error_of([&] { read_idx(file, 1, "w"); });
      CHECK(msg.find("w: " + file + ": has bytes after") == 0);
    }
    SUBCASE("gzip stream cut in the middle") {
      const auto file = write_gz(dir, "cut.gz", idx_bytes(0x803, {100, 28, 28}, 100 * 28 * 28));
      auto bytes = file_bytes(file);
      bytes.resize(bytes.size() / 2);
      write_raw(file, bytes);
      const std::string msg = config_error_of([&] { read_idx(file, 3, "w"); });
      CHECK(msg.find("w: " + file + ": ") == 0);
      CHECK(
          (msg.find("truncated") != std::string::npos || msg.find("corrupt") != std::string::npos));
    }
    SUBCASE("damaged gzip checksum") {
      const auto file = write_gz(dir, "crc.gz", idx_bytes(0x801, {50}, 50));
      auto bytes = file_bytes(file);
      bytes[bytes.size() - 6] = static_cast<char>(bytes[bytes.size() - 6] ^ 0x5a); // CRC32
      write_raw(file, bytes);
      const std::string msg = config_error_of([&] { read_idx(file, 1, "w"); });
      CHECK(msg.find("w: " + file + ": corrupt gzip data") == 0);
    }
    SUBCASE("a trailer announcing more than deflate can expand to") {
      // The fuzzer's input: 18 bytes whose trailer claims 2 GiB; the size was allocated.
      const std::string file = dir.file("huge.gz");
      std::vector<char> bytes = {'\x1f', '\x8b', '\x8b', '\x8b', '\x21', '\xa1',
                                 '\x21', '\x21', '\x21', '\xff', '\x91', 0,
                                 0,      0,      0,      0,      0,      '\x80'};
      write_raw(file, bytes);
      const std::string msg = config_error_of([&] { read_idx(file, 1, "w"); });
      CHECK(msg == "w: " + file +
                       ": corrupt gzip data (its trailer announces 2147483648 bytes, more than "
                       "its 18 bytes can hold)");
    }
    SUBCASE("empty file") {
      const std::string file = dir.file("empty.gz");
      write_raw(file, {});
      const std::string msg = config_error_of([&] { read_idx(file, 1, "w"); });
      CHECK(msg.find("w: " + file + ": truncated") == 0);
    }
  }
}
