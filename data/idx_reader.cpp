// SPDX-License-Identifier: MIT
// Reader of IDX files of unsigned bytes (the MNIST format), gzip-compressed or plain.
#include "data/idx_reader.hpp"

#include "sim/core/errors.hpp"
#include "sim/core/huge_pages.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dtsim {
namespace {

std::string hex32(std::uint32_t x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", x);
  return buf;
}

std::uint32_t big_endian32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

std::uint32_t little_endian32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
         (std::uint32_t{p[3]} << 24);
}

// 2^31 bytes is far beyond any dataset we load; a larger size is garbage.
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 31;

struct Buffer {
  std::unique_ptr<std::uint8_t[]> data;
  std::size_t size = 0;
};

// Uninitialised storage: every byte is written next, so zero-filling would only cost time.
Buffer allocate(std::size_t size) {
  Buffer b{std::unique_ptr<std::uint8_t[]>(new std::uint8_t[size == 0 ? 1 : size]), size};
  advise_huge_pages(b.data.get(), size);
  return b;
}

// The file's bytes, mapped read-only: the page cache's pages themselves, not a copy.
class MappedFile {
public:
  MappedFile(const std::string& file, const std::string& prefix) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      throw ConfigError(prefix + "cannot be opened (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      size_ = static_cast<std::size_t>(st.st_size);
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      data_ = p == MAP_FAILED ? nullptr : static_cast<const std::uint8_t*>(p);
    }
    const int saved = errno;
    ::close(fd);
    if (size_ > 0 && !data_)
      throw ConfigError(prefix + "cannot be read (" + std::strerror(saved) + ")");
  }
  ~MappedFile() {
    if (data_)
      ::munmap(const_cast<std::uint8_t*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }

private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// One gzip member into a buffer of the size its trailer announces (libdeflate decodes whole
// buffers, about twice as fast as zlib's streaming gzread). A damaged stream, CRC or length
// is "corrupt gzip data".
Buffer gunzip(const MappedFile& gz, const std::string& prefix) {
  constexpr std::size_t kHeaderAndTrailer = 18;
  if (gz.size() < kHeaderAndTrailer)
    throw ConfigError(prefix + "corrupt gzip data (the file is only " + std::to_string(gz.size()) +
                      " bytes)");
  const std::uint32_t announced = little_endian32(gz.data() + gz.size() - 4);
  // Deflate expands at most 1032:1, so a trailer announcing more than the compressed bytes
  // can hold is corrupt, and is refused before it becomes an allocation (found by fuzzing:
  // 18 bytes announcing 2 GiB).
  const std::uint64_t most = (gz.size() - kHeaderAndTrailer) * std::uint64_t{1032} + 1032;
  if (announced > kMaxBytes || announced > most)
    throw ConfigError(prefix + "corrupt gzip data (its trailer announces " +
                      std::to_string(announced) + " bytes, more than its " +
                      std::to_string(gz.size()) + " bytes can hold)");
  Buffer out = allocate(announced);
  const std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (!d)
    throw std::bad_alloc();
  std::size_t used_in = 0;
  std::size_t written = 0;
  const libdeflate_result r = libdeflate_gzip_decompress_ex(
      d.get(), gz.data(), gz.size(), out.data.get(), out.size, &used_in, &written);
  if (r != LIBDEFLATE_SUCCESS || written != announced)
    throw ConfigError(prefix + "corrupt gzip data (" +
                      (r == LIBDEFLATE_BAD_DATA ? "damaged stream or checksum"
                                                : "length does not match its trailer") +
                      ")");
  if (used_in != gz.size())
    throw ConfigError(prefix + "corrupt gzip data (" + std::to_string(gz.size() - used_in) +
                      " bytes after the gzip stream; concatenated members are not read)");
  return out;
}

} // namespace

IdxArray read_idx(const std::string& file, int num_dims, const std::string& where) {
  const std::string prefix = where + ": " + file + ": ";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw ConfigError(prefix + "not found");
  Buffer decoded;
  {
    const MappedFile raw(file, prefix);
    const bool gzipped = raw.size() >= 2 && raw.data()[0] == 0x1f && raw.data()[1] == 0x8b;
    if (gzipped) {
      decoded = gunzip(raw, prefix);
    } else {
      decoded = allocate(raw.size());
      std::copy_n(raw.data(), raw.size(), decoded.data.get());
    }
  }

  const std::size_t header = 4 * (1 + static_cast<std::size_t>(num_dims));
  const std::uint8_t* p = decoded.data.get();
  if (decoded.size < 4)
    throw ConfigError(prefix + "truncated: the IDX header needs 4 bytes, the file holds " +
                      std::to_string(decoded.size));
  const std::uint32_t want = 0x0800U | static_cast<std::uint32_t>(num_dims);
  if (big_endian32(p) != want)
    throw ConfigError(prefix + "not an IDX file of unsigned bytes with " +
                      std::to_string(num_dims) + " dimensions (magic number " + hex32(want) +
                      " expected, got " + hex32(big_endian32(p)) + ")");
  if (decoded.size < header)
    throw ConfigError(prefix + "truncated: the IDX header needs " + std::to_string(header) +
                      " bytes, the file holds " + std::to_string(decoded.size));

  IdxArray a;
  std::uint64_t total = 1;
  for (int k = 0; k < num_dims; ++k) {
    a.dims.push_back(big_endian32(p + 4 + 4 * static_cast<std::size_t>(k)));
    total *= a.dims.back();
    if (total > kMaxBytes)
      throw ConfigError(prefix + "IDX header announces an implausible size (over 2 GiB)");
  }
  const std::size_t payload = decoded.size - header;
  if (payload < total)
    throw ConfigError(prefix + "truncated: the IDX data needs " + std::to_string(total) +
                      " bytes, the file holds " + std::to_string(payload));
  if (payload > total)
    throw ConfigError(prefix + "has bytes after the " + std::to_string(total) +
                      " that its IDX header announces");
  a.bytes = {p + header, static_cast<std::size_t>(total)};
  a.storage = std::move(decoded.data);
  return a;
}

} // namespace dtsim
