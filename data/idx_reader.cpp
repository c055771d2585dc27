// SPDX-License-Identifier: MIT
// Reader of IDX files of unsigned bytes (the MNIST format), gzip-compressed or plain.
#include "data/idx_reader.hpp"

#include "sim/core/errors.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <libdeflate.h>

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
  return {std::unique_ptr<std::uint8_t[]>(new std::uint8_t[size == 0 ? 1 : size]), size};
}

Buffer read_file(const std::string& file, const std::string& prefix) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in)
    throw ConfigError(prefix + "cannot be opened");
  const auto size = static_cast<std::size_t>(in.tellg());
  Buffer b = allocate(size);
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(b.data.get()), static_cast<std::streamsize>(size)))
    throw ConfigError(prefix + "cannot be read");
  return b;
}

// One gzip member into a buffer of the size its trailer announces (libdeflate decodes whole
// buffers, about twice as fast as zlib's streaming gzread). A damaged stream, CRC or length
// is "corrupt gzip data".
Buffer gunzip(const Buffer& gz, const std::string& prefix) {
  constexpr std::size_t kHeaderAndTrailer = 18;
  if (gz.size < kHeaderAndTrailer)
    throw ConfigError(prefix + "corrupt gzip data (the file is only " + std::to_string(gz.size) +
                      " bytes)");
  const std::uint32_t announced = little_endian32(gz.data.get() + gz.size - 4);
  if (announced > kMaxBytes)
    throw ConfigError(prefix + "corrupt gzip data (its trailer announces " +
                      std::to_string(announced) + " bytes)");
  Buffer out = allocate(announced);
  const std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (!d)
    throw std::bad_alloc();
  std::size_t used_in = 0;
  std::size_t written = 0;
  const libdeflate_result r = libdeflate_gzip_decompress_ex(
      d.get(), gz.data.get(), gz.size, out.data.get(), out.size, &used_in, &written);
  if (r != LIBDEFLATE_SUCCESS || written != announced)
    throw ConfigError(prefix + "corrupt gzip data (" +
                      (r == LIBDEFLATE_BAD_DATA ? "damaged stream or checksum"
                                                : "length does not match its trailer") +
                      ")");
  if (used_in != gz.size)
    throw ConfigError(prefix + "corrupt gzip data (" + std::to_string(gz.size - used_in) +
                      " bytes after the gzip stream; concatenated members are not read)");
  return out;
}

} // namespace

IdxArray read_idx(const std::string& file, int num_dims, const std::string& where) {
  const std::string prefix = where + ": " + file + ": ";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw ConfigError(prefix + "not found");
  Buffer raw = read_file(file, prefix);
  const bool gzipped = raw.size >= 2 && raw.data[0] == 0x1f && raw.data[1] == 0x8b;
  Buffer decoded = gzipped ? gunzip(raw, prefix) : std::move(raw);
  raw = {};

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
