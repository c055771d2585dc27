// SPDX-License-Identifier: MIT
// Compressor: encodes a flat vector for the wire, decodes it, and knows its exact size.
#pragma once

#include "sim/core/params.hpp"
#include "sim/core/registry.hpp"
#include "sim/core/rng.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace dtsim {

// What one encode() did to its input: ||Q(x) - x||^2 and ||x||^2 (for the trace).
struct EncodeStats {
  double error_sq = 0;
  double norm_sq = 0;
};

// How messages are simulated. A payload is a buffer of d floats (SharedBuffer), and what a
// compressor writes into it is the message's content in simulation form:
//   - most compressors write the receiver's reconstruction itself (decoded floats), because
//     their decoding needs nothing but the message; decode() is then a copy and
//     wire_is_decoded() is true;
//   - the lattice quantizer writes each coordinate's full lattice index, and decode() really
//     decodes against the receiver's reference point from the index modulo q only, so wrong
//     decodings happen exactly when they would on a real wire, and are counted.
// The bytes charged to the network are encoded_bytes(d): the exact size of the compact
// encoding each compressor documents (bit-packed levels, signs, indices, norms), so a 4-bit
// message really travels faster than a float32 one.
//
// One instance per node: encode() uses per-instance scratch (no allocation per message) and
// may keep state (error feedback). Randomness comes only from the Rng passed in.
class Compressor {
public:
  virtual ~Compressor() = default;
  virtual std::string describe() const = 0;
  // Exact payload bytes of one encoded vector of `dim` coordinates (no message envelope).
  virtual std::int64_t encoded_bytes(std::size_t dim) const = 0;
  // Encodes x into wire (same length as x).
  virtual EncodeStats encode(std::span<const float> x, std::span<float> wire, Rng& rng) = 0;
  // True when `wire` already holds the receiver's reconstruction (decode is a copy).
  virtual bool wire_is_decoded() const { return true; }
  // Writes the receiver's reconstruction of `wire` into out, decoding against the receiver's
  // reference point `ref` where the scheme needs one. Returns the number of coordinates that
  // decoded to a wrong value (only reference-point schemes can fail).
  virtual std::int64_t decode(std::span<const float> wire, std::span<const float> ref,
                              std::span<float> out) const;
  // The sender's own reconstruction of `wire`, encoded from x: what every receiver decodes
  // when decoding succeeds. Default: decode against x itself.
  virtual void own_view(std::span<const float> wire, std::span<const float> x,
                        std::span<float> out) const {
    decode(wire, x, out);
  }
  // True for schemes whose decode needs `ref` (the lattice quantizer).
  virtual bool needs_reference() const { return false; }
};

// What a compressor factory may depend on besides its keys.
struct CompressorSetup {
  std::size_t dim = 0;
  // The caller needs a contractive compressor (CHOCO-SGD): the default `form` of qsgd and
  // randomk is then `contractive` instead of `unbiased`.
  bool contractive = false;
  // False where the algorithm already has error feedback built in (CHOCO-SGD).
  bool allow_error_feedback = true;
  // False where a decode has no reference point (the lattice quantizer is refused).
  bool allow_reference = true;
};

using CompressorRegistry = Registry<std::unique_ptr<Compressor>, const CompressorSetup&>;

// The compressors `compressor.kind` may name: the built-ins, then any added with
// compressor_registry().add(...) before planning runs (process-wide, as algorithm_registry()).
CompressorRegistry& compressor_registry();

// Builds one compressor from the `compressor:` map (kind, its keys, error_feedback).
std::unique_ptr<Compressor> make_compressor(const Params& p, const CompressorSetup& setup,
                                            const std::string& default_kind);

// Fills `out` with uniform floats in (0, 1) on a grid of 2^16 midpoints, four per 64-bit
// draw: stochastic rounding needs one per coordinate, and rounding up with probability p
// then happens with probability p to within 2^-17. Drawing them first, in one simple loop,
// lets the rounding loop itself vectorize.
void fill_uniforms(Rng& rng, std::span<float> out);

} // namespace dtsim
