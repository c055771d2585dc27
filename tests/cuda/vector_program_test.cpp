// SPDX-License-Identifier: MIT
// The resident device's vector programs (a run of element-wise steps as one kernel) against
// the same steps one at a time, their encodings' figures against a direct sum, and their
// encodings and decodings against LatticeQuantizer's; no GPU needed.
#include "cuda/vector_program.hpp"
#include "resident_test_vectors.hpp"
#include "sim/core/rng.hpp"
#include "sim/optimizers/compression/lattice_quantizer.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;
using dtsim::test::random_vector;
using VectorOp = ResidentVectors::VectorOp;

namespace {

constexpr std::size_t kP = 4196; // a partial last tile of 4 x 256
static_assert(kP % (kProgramTile * kProgramThreads) != 0, "a block with threads past the end");
constexpr std::size_t kBlocks = program_blocks(kP);
constexpr std::size_t kSlots = 4 * kProgramSteps; // encodings' figure slots, one each

// Five float vectors, the server's double sum and a failure count: what a program's steps
// name. Vector 4 is a mean square (the adaptive compensation's), kept non-negative: only
// mean_square writes it.
struct Vectors {
  std::array<std::vector<float>, 5> v;
  std::vector<double> sum;
  unsigned long long failures = 0;
  std::vector<float> partials; // the encodings' figure slots, 2 floats a block each
  std::size_t slots_used = 0;

  explicit Vectors(std::uint64_t seed) : sum(kP), partials(2 * kBlocks * kSlots, -1.0f) {
    Rng rng = Rng::stream(seed, "test", Rng::kNoNode);
    for (std::vector<float>& x : v)
      x = random_vector(rng, kP);
    for (float& x : v[4])
      x = x * x;
    for (std::size_t e = 0; e < kP; ++e)
      sum[e] = static_cast<double>(v[0][e]) * 3.0;
  }
  // Equal bit for bit (NaNs included).
  bool same_bits(const Vectors& o) const {
    for (std::size_t k = 0; k < v.size(); ++k)
      if (std::memcmp(v[k].data(), o.v[k].data(), kP * sizeof(float)) != 0)
        return false;
    return std::memcmp(sum.data(), o.sum.data(), kP * sizeof(double)) == 0 &&
           failures == o.failures &&
           std::memcmp(partials.data(), o.partials.data(), partials.size() * sizeof(float)) == 0;
  }
};

// A step drawn from every kind a store queues, on `vs`'s vectors: dst among vectors 0 to 3
// (and the sum), a and b any, dst == a among the draws.
ProgramStep random_step(Rng& rng, Vectors& vs, const LatticeCodec& lattice) {
  const auto pick = [&](std::size_t n) { return vs.v[rng.below(n)].data(); };
  float* dst = pick(4);
  const float s = static_cast<float>(rng.uniform(0.1, 0.9));
  switch (rng.below(12)) {
  case 10: { // an encoding of any form, its figures in the next slot
    constexpr std::array kForms = {ResidentCodec::Kind::none, ResidentCodec::Kind::half,
                                   ResidentCodec::Kind::lattice};
    LatticeCodec c = lattice;
    c.stochastic = rng.below(2) == 0;
    REQUIRE(vs.slots_used < kSlots);
    float* slot = vs.partials.data() + 2 * kBlocks * vs.slots_used++;
    return ProgramStep::encode_step(kForms[rng.below(kForms.size())], c, pick(5), dst, 99,
                                    rng.below(1000), slot);
  }
  case 11: // in place: the wire is x
    return ProgramStep::encode_step(ResidentCodec::Kind::half, lattice, dst, dst, 0, 0,
                                    vs.partials.data() + 2 * kBlocks * vs.slots_used++);
  case 0: {
    constexpr std::array kOps = {VectorOp::copy,
                                 VectorOp::average,
                                 VectorOp::add_half_difference,
                                 VectorOp::subtract_scaled,
                                 VectorOp::add,
                                 VectorOp::zero,
                                 VectorOp::subtract,
                                 VectorOp::average_less,
                                 VectorOp::average_step_less,
                                 VectorOp::average_step_add,
                                 VectorOp::delay_compensate};
    return ProgramStep::vector_step(kOps[rng.below(kOps.size())], dst, pick(5), pick(5), s, 0, 0);
  }
  case 1: // dividing by more than 1, so that the values stay finite
    return ProgramStep::vector_step(VectorOp::divide, dst, nullptr, nullptr, 1.0f + s, 0, 0);
  case 2: // in place: dst is a
    return ProgramStep::vector_step(VectorOp::average, dst, dst, pick(5), 0, 0, 0);
  case 3: // the server's step with momentum writes b too
    return ProgramStep::vector_step(VectorOp::server_step, vs.v[0].data(), pick(5), vs.v[1].data(),
                                    0.05f, s, 1e-3f);
  case 4:
    return ProgramStep::vector_step(VectorOp::mean_square, vs.v[4].data(), pick(4), nullptr, s,
                                    1.0f - s, 0);
  case 5:
    return ProgramStep::vector_step(VectorOp::delay_compensate_adaptive, dst, vs.v[4].data(),
                                    pick(4), 0.04f, 1e-7f, 0);
  case 6:
    return ProgramStep::sum_step(VectorOp::accumulate, vs.sum.data(), nullptr, pick(5),
                                 rng.below(2) == 0 ? 1.0f : -1.0f);
  case 7:
    return ProgramStep::sum_step(VectorOp::mean_of_sum, vs.sum.data(), dst, nullptr, 3.0f);
  case 8: // indices from a vector: most decode against a nearby reference, some fail
    return ProgramStep::decode_step(lattice, pick(5), pick(5), dst, &vs.failures);
  default:
    return ProgramStep::scale_step(pick(5), dst, lattice.side);
  }
}

// The same step with its vectors moved from `from` to `to` (a copy of it).
ProgramStep moved(ProgramStep k, const Vectors& from, Vectors& to) {
  const auto move = [&](const float* p) -> float* {
    for (std::size_t i = 0; i < from.v.size(); ++i)
      if (p == from.v[i].data())
        return to.v[i].data();
    return nullptr;
  };
  k.dst = move(k.dst);
  k.a = move(k.a);
  k.b = move(k.b);
  k.ref = move(k.ref);
  if (k.sum != nullptr)
    k.sum = to.sum.data();
  if (k.failures != nullptr)
    k.failures = &to.failures;
  if (k.partials != nullptr)
    k.partials = to.partials.data() + (k.partials - from.partials.data());
  return k;
}

// Runs steps[0 .. count) as run_program_steps does on the device: block by block, each
// step over the block's threads' tiles, an encoding's squares then summed by the block's tree
// into its slot. (A thread's elements are its own, so step by step within a block and block
// by block give what the device's threads give in any interleaving.)
void run_steps(const ProgramStep* steps, int count) {
  std::array<EncodeSquares, kProgramThreads> part;
  for (std::size_t block = 0; block < kBlocks; ++block)
    for (int i = 0; i < count; ++i) {
      const ProgramStep& k = steps[i];
      for (int t = 0; t < kProgramThreads; ++t) {
        part[t] = {};
        step_tile<kProgramTile>(k, kP, block * kProgramTile * kProgramThreads + t, kProgramThreads,
                                part[t]);
      }
      if (k.kind != ProgramStep::Kind::encode)
        continue;
      block_pair_tree(part.data(), kProgramThreads);
      k.partials[2 * block] = part[0].error;
      k.partials[2 * block + 1] = part[0].norm;
    }
}

// A program (a run of a few steps as the short program the store launches).
void run_program(const VectorProgram& p) {
  if (p.count <= kShortProgram) {
    const ShortVectorProgram few = first_steps<kShortProgram>(p);
    REQUIRE(few.count == p.count);
    run_steps(few.steps, few.count);
    return;
  }
  run_steps(p.steps, p.count);
}

// The steps one at a time, each over the whole vector, as the kernel of one step runs them.
void run_one_at_a_time(const std::vector<ProgramStep>& steps) {
  for (const ProgramStep& k : steps)
    run_steps(&k, 1);
}

// Queues the steps as the store does: a full program runs before the next step joins.
void run_as_programs(const std::vector<ProgramStep>& steps) {
  VectorProgram p;
  for (const ProgramStep& k : steps) {
    p.push(k);
    if (p.full()) {
      run_program(p);
      p.count = 0;
    }
  }
  run_program(p);
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Vector programs: a run of steps as programs gives the steps' bits one at a time") {
    const LatticeCodec lattice = lattice_codec(4, 0.05, false);
    // Runs of every shape the store launches: one step, a short program that is full, a long
    // one of a few steps, a long one one short of full, full, full and one more, and three
    // full programs then a short one.
    for (const int count : {1, kShortProgram, kShortProgram + 1, kProgramSteps - 1, kProgramSteps,
                            kProgramSteps + 1}) {
      CAPTURE(count);
      Vectors at_once(7), one_by_one(7);
      Rng rng = Rng::stream(7, "steps", Rng::kNoNode);
      std::vector<ProgramStep> steps, copies;
      for (int i = 0; i < count; ++i) {
        steps.push_back(random_step(rng, at_once, lattice));
        copies.push_back(moved(steps.back(), at_once, one_by_one));
      }
      run_as_programs(steps);
      run_one_at_a_time(copies);
      CHECK(at_once.same_bits(one_by_one));
    }
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
      CAPTURE(seed);
      Vectors at_once(seed), one_by_one(seed), start(seed);
      Rng rng = Rng::stream(seed, "steps", Rng::kNoNode);
      std::vector<ProgramStep> steps, copies;
      for (int i = 0; i < 3 * kProgramSteps + 3; ++i) { // three full programs, a short one
        steps.push_back(random_step(rng, at_once, lattice));
        copies.push_back(moved(steps.back(), at_once, one_by_one));
      }
      run_as_programs(steps);
      run_one_at_a_time(copies);
      CHECK(at_once.same_bits(one_by_one));
      // Not vacuous: the steps moved the vectors, mostly to finite values, and decoded some
      // wrongly.
      CHECK_FALSE(at_once.same_bits(start));
      std::size_t finite = 0;
      for (const std::vector<float>& x : at_once.v)
        for (const float f : x)
          finite += std::isfinite(f) ? 1 : 0;
      CHECK(finite > 5 * kP * 9 / 10);
      CHECK(at_once.failures > 0);
      // Every encoding left its figures in its slot, every block's pair.
      REQUIRE(at_once.slots_used > 0);
      for (std::size_t i = 0; i < 2 * kBlocks * at_once.slots_used; ++i)
        REQUIRE(at_once.partials[i] != -1.0f);
      CHECK(at_once.partials[2 * kBlocks * at_once.slots_used] == -1.0f);
    }
  }

  TEST_CASE("Vector programs: the order of the steps is kept within an element") {
    // x = 2 x, then y = x: y must see the doubled x. Run as one program, the bits of doing
    // the two in order; the other order's differ (the comparison can fail).
    Rng rng = Rng::stream(5, "test", Rng::kNoNode);
    std::vector<float> x = random_vector(rng, kP), y(kP, 0.0f);
    const std::vector<float> x0 = x;
    VectorProgram p;
    p.push(ProgramStep::scale_step(x.data(), x.data(), 2.0f));
    p.push(ProgramStep::vector_step(VectorOp::copy, y.data(), x.data(), nullptr, 0, 0, 0));
    run_program(p);
    for (std::size_t e = 0; e < kP; ++e) {
      REQUIRE(x[e] == 2.0f * x0[e]);
      REQUIRE(y[e] == x[e]);
    }
  }

  TEST_CASE("Vector programs: decodings and own views are LatticeQuantizer's") {
    for (const int bits : {4, 8}) {
      CAPTURE(bits);
      const double side = bits == 4 ? 2e-2 : 2e-3;
      LatticeQuantizer host(bits, side, false);
      const LatticeCodec c = lattice_codec(bits, side, false);
      Rng rng = Rng::stream(43, "test", Rng::kNoNode);
      const std::vector<float> x = random_vector(rng, kP);
      std::vector<float> wire(kP);
      Rng unused = Rng::stream(44, "test", Rng::kNoNode);
      host.encode(x, wire, unused);
      std::vector<float> ref = x;
      for (std::size_t e = 0; e < kP; e += 97)
        ref[e] += static_cast<float>(host.radius() * 3.0); // beyond q s / 2: fails
      std::vector<float> out_host(kP), view_host(kP), out(kP), view(kP);
      const std::int64_t failures_host = host.decode(wire, ref, out_host);
      host.own_view(wire, x, view_host);
      unsigned long long failures = 0;
      VectorProgram p;
      p.push(ProgramStep::decode_step(c, wire.data(), ref.data(), out.data(), &failures));
      p.push(ProgramStep::scale_step(wire.data(), view.data(), c.side));
      run_program(p);
      // By value: with SSE2 alone (-DDTSIM_ARCH=), Eigen's floor in LatticeQuantizer gives
      // -0 where floorf gives +0.
      CHECK(out == out_host);
      CHECK(view == view_host);
      CHECK(failures_host > 0);
      CHECK(static_cast<std::int64_t>(failures) == failures_host);
    }
  }

  TEST_CASE("Vector programs: an encoding is LatticeQuantizer's, its figures its squares") {
    Rng rng = Rng::stream(45, "test", Rng::kNoNode);
    const std::vector<float> x = random_vector(rng, kP);
    const auto encoded = [&](ResidentCodec::Kind form, const LatticeCodec& c,
                             std::vector<float>& wire) {
      std::vector<float> partials(2 * kBlocks, -1.0f);
      VectorProgram p;
      p.push(ProgramStep::encode_step(form, c, x.data(), wire.data(), 7, 3, partials.data()));
      run_program(p);
      // The blocks' pairs in block order (pending_figures_kernel takes another: Approx).
      EncodeStats st;
      for (std::size_t b = 0; b < kBlocks; ++b) {
        st.error_sq += static_cast<double>(partials[2 * b]);
        st.norm_sq += static_cast<double>(partials[2 * b + 1]);
      }
      return st;
    };
    for (const int bits : {4, 8}) {
      CAPTURE(bits);
      const double side = bits == 4 ? 2e-2 : 2e-3;
      LatticeQuantizer host(bits, side, false);
      std::vector<float> wire_host(kP), wire(kP);
      Rng unused = Rng::stream(46, "test", Rng::kNoNode);
      const EncodeStats expected = host.encode(x, wire_host, unused);
      const EncodeStats st =
          encoded(ResidentCodec::Kind::lattice, lattice_codec(bits, side, false), wire);
      CHECK(wire == wire_host); // by value: see the decodings' test
      CHECK(st.norm_sq == doctest::Approx(expected.norm_sq).epsilon(1e-5));
      CHECK(st.error_sq == doctest::Approx(expected.error_sq).epsilon(1e-4));
      CHECK(st.error_sq > 0);
      // Stochastic rounding: each index the floor or the ceiling of x / s, by the node's
      // counter-based stream (both occur).
      std::size_t up = 0;
      encoded(ResidentCodec::Kind::lattice, lattice_codec(bits, side, true), wire);
      for (std::size_t e = 0; e < kP; ++e) {
        const float lower = std::floor(x[e] * static_cast<float>(1.0 / side));
        REQUIRE((wire[e] == lower || wire[e] == lower + 1.0f));
        up += wire[e] == lower + 1.0f ? 1 : 0;
      }
      CHECK(up > kP / 10);
      CHECK(up < kP * 9 / 10);
    }
    std::vector<float> wire(kP);
    const EncodeStats half = encoded(ResidentCodec::Kind::half, {}, wire);
    double error_sq = 0;
    for (std::size_t e = 0; e < kP; ++e) {
      REQUIRE(wire[e] == round_to_half(x[e]));
      error_sq += static_cast<double>(wire[e] - x[e]) * static_cast<double>(wire[e] - x[e]);
    }
    CHECK(half.error_sq == doctest::Approx(error_sq).epsilon(1e-4));
    CHECK(encoded(ResidentCodec::Kind::none, {}, wire).error_sq == 0);
    CHECK(wire == x);
  }
}
