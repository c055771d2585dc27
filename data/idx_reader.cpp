// SPDX-License-Identifier: MIT
// Reader of IDX files of unsigned bytes (the MNIST format), gzip-compressed or plain.
#include "data/idx_reader.hpp"

#include "sim/core/errors.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <zlib.h>

namespace dtsim {
namespace {

// Owns a gzFile so that every error path closes it.
class GzFile {
public:
  explicit GzFile(const std::string& file) : f_(gzopen(file.c_str(), "rb")) {}
  ~GzFile() {
    if (f_)
      gzclose(f_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  gzFile get() const { return f_; }

private:
  gzFile f_;
};

std::string hex32(std::uint32_t x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", x);
  return buf;
}

std::uint32_t big_endian32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

} // namespace

IdxArray read_idx(const std::string& file, int num_dims, const std::string& where) {
  const std::string prefix = where + ": " + file + ": ";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw ConfigError(prefix + "not found");
  GzFile gz(file);
  if (!gz.get())
    throw ConfigError(prefix + "cannot be opened");
  // A large buffer: the default 8 KiB makes inflating 47 MB of images measurably slower.
  gzbuffer(gz.get(), 1U << 20);

  auto read_exact = [&](void* dst, std::size_t n, const char* what) {
    auto* out = static_cast<unsigned char*>(dst);
    std::size_t done = 0;
    while (done < n) {
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1U << 26));
      const int got = gzread(gz.get(), out + done, chunk);
      if (got < 0) {
        int errnum = 0;
        const char* msg = gzerror(gz.get(), &errnum);
        throw ConfigError(prefix + "corrupt gzip data while reading the " + what +
                          " (zlib: " + (msg ? msg : "unknown error") + ")");
      }
      if (got == 0)
        throw ConfigError(prefix + "truncated: the " + what + " needs " + std::to_string(n) +
                          " bytes, the file holds " + std::to_string(done));
      done += static_cast<std::size_t>(got);
    }
  };

  unsigned char magic[4];
  read_exact(magic, 4, "IDX header");
  const std::uint32_t want = 0x0800U | static_cast<std::uint32_t>(num_dims);
  if (big_endian32(magic) != want)
    throw ConfigError(prefix + "not an IDX file of unsigned bytes with " +
                      std::to_string(num_dims) + " dimensions (magic number " + hex32(want) +
                      " expected, got " + hex32(big_endian32(magic)) + ")");

  IdxArray a;
  std::vector<unsigned char> dim_bytes(4 * static_cast<std::size_t>(num_dims));
  read_exact(dim_bytes.data(), dim_bytes.size(), "IDX header");
  std::uint64_t total = 1;
  for (int d = 0; d < num_dims; ++d) {
    a.dims.push_back(big_endian32(dim_bytes.data() + 4 * d));
    total *= a.dims.back();
    // 2^31 bytes is far beyond any dataset we load; a larger header is garbage.
    if (total > (std::uint64_t{1} << 31))
      throw ConfigError(prefix + "IDX header announces an implausible size (over 2 GiB)");
  }

  a.bytes.resize(total);
  read_exact(a.bytes.data(), a.bytes.size(), "IDX data");
  // Reading past the end makes zlib check the gzip trailer (CRC and length).
  unsigned char extra = 0;
  const int tail = gzread(gz.get(), &extra, 1);
  if (tail < 0) {
    int errnum = 0;
    const char* msg = gzerror(gz.get(), &errnum);
    throw ConfigError(prefix + "corrupt gzip data at the end of the file (zlib: " +
                      (msg ? msg : "unknown error") + ")");
  }
  if (tail > 0)
    throw ConfigError(prefix + "has bytes after the " + std::to_string(total) +
                      " that its IDX header announces");
  return a;
}

} // namespace dtsim
