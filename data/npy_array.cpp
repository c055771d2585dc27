// SPDX-License-Identifier: MIT
// The .npy layout (numpy.lib.format): magic "\x93NUMPY", major and minor version bytes, a
// little-endian header length (2 bytes in 1.0, 4 in 2.0/3.0), then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), } padded with spaces,
// then the raw elements.
#include "data/npy_array.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace dtsim {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::runtime_error(what);
}

// The text after 'key': up to the next top-level ',' or '}' (shape tuples keep their commas).
std::string header_value(std::string_view header, const std::string& key) {
  const std::string quoted[] = {"'" + key + "'", "\"" + key + "\""};
  std::size_t at = std::string_view::npos;
  for (const std::string& q : quoted)
    if ((at = header.find(q)) != std::string_view::npos) {
      at += q.size();
      break;
    }
  if (at == std::string_view::npos)
    bad("the .npy header has no '" + key + "'");
  at = header.find(':', at);
  if (at == std::string_view::npos)
    bad("the .npy header is malformed near '" + key + "'");
  ++at;
  int depth = 0;
  std::size_t end = at;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    else if ((c == ',' || c == '}') && depth == 0)
      break;
  }
  std::string v(header.substr(at, end - at));
  const auto first = v.find_first_not_of(" \t");
  const auto last = v.find_last_not_of(" \t");
  return first == std::string::npos ? "" : v.substr(first, last - first + 1);
}

std::vector<std::int64_t> parse_shape(const std::string& text) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    bad("the .npy shape is not a tuple: " + text);
  std::vector<std::int64_t> shape;
  std::string item;
  for (char c : text.substr(1, text.size() - 2) + ",") {
    if (c == ',') {
      const auto first = item.find_first_not_of(' ');
      if (first != std::string::npos) {
        // Python 2 wrote 3L. An item of only L and spaces has no digits (stop is 0 then).
        const std::size_t stop = item.find_last_not_of(" L") + 1;
        std::int64_t v = -1;
        const char* digits_end = item.data() + std::max(stop, first);
        const auto [end, ec] = std::from_chars(item.data() + first, digits_end, v);
        if (stop <= first || ec != std::errc() || end != digits_end || v < 0)
          bad("the .npy shape is not a tuple of sizes: " + text);
        shape.push_back(v);
      }
      item.clear();
    } else {
      item += c;
    }
  }
  return shape;
}

template <class T> T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

double half_to_double(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0)
    return sign * std::ldexp(mantissa, -24);
  if (exponent == 31)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

} // namespace

NumericArray parse_npy(std::string_view bytes) {
  static_assert(std::endian::native == std::endian::little, "dtsim reads .npy on little-endian");
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6))
    bad("not a .npy file (no \\x93NUMPY magic)");
  const auto major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = load<std::uint16_t>(bytes.data() + 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      bad("truncated .npy header");
    header_len = load<std::uint32_t>(bytes.data() + 8);
    start = 12;
  } else {
    bad(".npy format version " + std::to_string(major) + " (expected 1, 2 or 3)");
  }
  if (bytes.size() < start + header_len)
    bad("truncated .npy header");
  const std::string_view header = bytes.substr(start, header_len);
  std::string descr = header_value(header, "descr");
  if (descr.size() < 4 || (descr.front() != '\'' && descr.front() != '"'))
    bad("unsupported .npy dtype " + descr + " (expected a numeric dtype such as '<f4')");
  descr = descr.substr(1, descr.size() - 2);
  if (header_value(header, "fortran_order") != "False")
    bad("the array is stored in Fortran order; save numpy.ascontiguousarray(a) instead");
  NumericArray a;
  a.shape = parse_shape(header_value(header, "shape"));

  const char order = descr[0];
  const char kind = descr[1];
  int size = 0;
  const auto [end, ec] = std::from_chars(descr.data() + 2, descr.data() + descr.size(), size);
  if (ec != std::errc() || end != descr.data() + descr.size())
    bad("unsupported .npy dtype '" + descr + "' (expected bool, integers or float16/32/64)");
  if (order == '>' && size > 1)
    bad("big-endian dtype " + descr + "; save a.astype(a.dtype.newbyteorder('<')) instead");
  const bool known =
      (kind == 'f' && (size == 2 || size == 4 || size == 8)) ||
      ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)) ||
      (kind == 'b' && size == 1);
  if (!known)
    bad("unsupported .npy dtype '" + descr + "' (expected bool, integers or float16/32/64)");

  const char* data = bytes.data() + start + header_len;
  const std::size_t available = bytes.size() - start - header_len;
  // The element count, checked against the bytes present as it grows: a shape whose
  // product overflows (or exceeds the file) must not wrap around to a small count.
  std::size_t count = 1;
  for (std::int64_t d : a.shape) {
    const auto dim = static_cast<std::size_t>(d);
    if (dim != 0 && count > available / dim)
      bad("truncated .npy data: " + std::to_string(available) + " bytes for shape " +
          header_value(header, "shape"));
    count *= dim;
  }
  if (available < count * static_cast<std::size_t>(size))
    bad("truncated .npy data: " + std::to_string(available) + " bytes for " +
        std::to_string(count) + " elements of " + std::to_string(size) + " bytes");
  a.values.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const char* p = data + i * static_cast<std::size_t>(size);
    double v = 0;
    if (kind == 'f')
      v = size == 8 ? load<double>(p)
                    : (size == 4 ? static_cast<double>(load<float>(p))
                                 : half_to_double(load<std::uint16_t>(p)));
    else if (kind == 'b')
      v = *p != 0;
    else if (kind == 'i')
      v = size == 1   ? load<std::int8_t>(p)
          : size == 2 ? load<std::int16_t>(p)
          : size == 4 ? load<std::int32_t>(p)
                      : static_cast<double>(load<std::int64_t>(p));
    else
      v = size == 1   ? load<std::uint8_t>(p)
          : size == 2 ? load<std::uint16_t>(p)
          : size == 4 ? load<std::uint32_t>(p)
                      : static_cast<double>(load<std::uint64_t>(p));
    a.values[i] = static_cast<float>(v);
  }
  return a;
}

std::string write_npy(const NumericArray& a) {
  std::string shape = "(";
  for (std::int64_t d : a.shape)
    shape += std::to_string(d) + ",";
  if (a.shape.size() > 1)
    shape.pop_back();
  shape += ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, the header ending in '\n'.
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  out.append(reinterpret_cast<const char*>(&len), 2);
  out += header;
  out.append(reinterpret_cast<const char*>(a.values.data()), a.values.size() * sizeof(float));
  return out;
}

} // namespace dtsim
