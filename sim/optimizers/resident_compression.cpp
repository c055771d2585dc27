// SPDX-License-Identifier: MIT
#include "sim/optimizers/resident_compression.hpp"

#include "sim/optimizers/compression/cast_compressor.hpp"
#include "sim/optimizers/compression/qsgd.hpp"
#include "sim/optimizers/compression/random_k.hpp"
#include "sim/optimizers/compression/sign_compressor.hpp"
#include "sim/optimizers/compression/top_k.hpp"

namespace dtsim {

ResidentCompression resident_compression(const Compressor& c, std::size_t dim) {
  using Kind = ResidentCompression::Kind;
  ResidentCompression form;
  if (const auto* q = dynamic_cast<const Qsgd*>(&c)) {
    form.kind = Kind::qsgd;
    form.bits = q->bits();
    form.bucket = q->bucket() >= dim ? 0 : q->bucket(); // one bucket: the whole vector
    form.contractive = q->contractive();
  } else if (const auto* t = dynamic_cast<const TopK*>(&c)) {
    form.kind = Kind::top_k;
    form.keep = TopK::count(t->ratio(), dim);
  } else if (const auto* r = dynamic_cast<const RandomK*>(&c)) {
    form.kind = Kind::random_k;
    form.keep = TopK::count(r->ratio(), dim);
    form.contractive = r->contractive();
  } else if (dynamic_cast<const SignCompressor*>(&c) != nullptr) {
    form.kind = Kind::sign;
  } else if (const auto* cast = dynamic_cast<const CastCompressor*>(&c)) {
    form.kind = cast->half() ? Kind::half : Kind::identity;
  }
  return form;
}

} // namespace dtsim
