// SPDX-License-Identifier: MIT
// The device forms of the compressors (resident_compression): which have one, and with the
// parameters of the method's own compressor (a wrong keep, bits, bucket or form would
// otherwise pass every host test, which run the method's compressor itself).
#include "sim/optimizers/compression/top_k.hpp"
#include "sim/optimizers/resident_compression.hpp"
#include "support/params_helper.hpp"

#include <doctest/doctest.h>

using namespace dtsim;
using dtsim::testing::make_params;
using Kind = ResidentCompression::Kind;

namespace {

constexpr std::size_t kDim = 1000;

ResidentCompression form_of(std::initializer_list<std::pair<const char*, std::string>> kv,
                            bool contractive = false) {
  CompressorSetup setup{kDim};
  setup.contractive = contractive;
  return resident_compression(*make_compressor(make_params(kv), setup, "none"), kDim);
}

} // namespace

TEST_CASE("Resident compression: each built-in compressor's device form") {
  SUBCASE("QSGD: bits, bucket and form as the compressor's; one bucket over the whole vector") {
    const ResidentCompression q = form_of({{"kind", "qsgd"}, {"bits", "6"}, {"bucket", "64"}});
    CHECK(q.kind == Kind::qsgd);
    CHECK(q.bits == 6);
    CHECK(q.bucket == 64);
    CHECK_FALSE(q.contractive);                           // SwarmSGD's default: unbiased
    CHECK(form_of({{"kind", "qsgd"}}, true).contractive); // CHOCO-SGD's
    CHECK(form_of({{"kind", "qsgd"}, {"bucket", "1000"}}).bucket == 0);
    CHECK(form_of({{"kind", "qsgd"}, {"bucket", "0"}}).bucket == 0);
    CHECK(form_of({{"kind", "qsgd"}, {"bucket", "16"}}).bucket == 16);
    CHECK(form_of({{"kind", "qsgd"}, {"bucket", "8"}}).bucket == 8); // a thread per bucket
  }
  SUBCASE("top-k and random-k keep TopK::count of the ratio; random-k's form") {
    const ResidentCompression t = form_of({{"kind", "topk"}, {"ratio", "0.013"}});
    CHECK(t.kind == Kind::top_k);
    CHECK(t.keep == TopK::count(0.013, kDim));
    CHECK(t.keep == 13);
    const ResidentCompression r = form_of({{"kind", "randomk"}, {"ratio", "0.25"}});
    CHECK(r.kind == Kind::random_k);
    CHECK(r.keep == 250);
    CHECK_FALSE(r.contractive);
    CHECK(form_of({{"kind", "randomk"}, {"ratio", "0.25"}}, true).contractive);
  }
  SUBCASE("sign, fp16 and float32") {
    CHECK(form_of({{"kind", "sign"}}).kind == Kind::sign);
    CHECK(form_of({{"kind", "fp16"}}).kind == Kind::half);
    CHECK(form_of({{"kind", "none"}}).kind == Kind::identity);
  }
  SUBCASE("no device form: error feedback, the lattice quantizer") {
    CHECK(form_of({{"kind", "topk"}, {"ratio", "0.1"}, {"error_feedback", "true"}}).kind ==
          Kind::none);
    CHECK(form_of({{"kind", "lattice"}}).kind == Kind::none);
  }
}
