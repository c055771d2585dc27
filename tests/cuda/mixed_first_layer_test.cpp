// SPDX-License-Identifier: MIT
// The first layer's mixing fused with its forward product (mixed_first_layer.hpp), its
// blocks run thread by thread on the host, against the unfused order: the plain mixing
// kernel's tiles (mix_tile) over the whole rows, then W x summed per pre-activation in input
// order from the minibatch read by index. The mixed weights must be the same bits, and the
// rest of each row left to the plain mixing untouched. A first layer of 70 x 100 weights cuts
// the 64-output slabs and the 32-input loads at both edges.
#include "cuda/device_gradients.hpp"
#include "cuda/mixed_first_layer.hpp"
#include "resident_test_vectors.hpp"

#include <cstring>
#include <doctest/doctest.h>
#include <vector>

using namespace dtsim;
using namespace dtsim::cuda;

namespace {

constexpr int kOut = 70, kIn = 100;
constexpr std::size_t kRest = 37; // the row's floats after the first layer's W
constexpr std::size_t kP = static_cast<std::size_t>(kOut) * kIn + kRest;
constexpr int kNodes = 6, kFirstNode = 1, kExamples = 50;

struct Problem {
  std::vector<std::vector<float>> messages;
  std::vector<float> train, models;
  std::vector<std::uint32_t> idx;
  // Entries in an order of their own: node 3 mixes its own message 0 with messages 2 and 1
  // (one pair), node 1 message 4 alone, node 2 message 3 with 0, 1 and 4 (a pair and one
  // more); nodes 1..3 are the chunk (first node 1).
  std::vector<int> node{3, 1, 2}, first{0, 2, 2, 5};
  std::vector<const float*> self, in;
  std::vector<float> self_w{0.4f, 1.0f, 0.3f}, in_w{0.35f, 0.25f, 0.2f, 0.3f, 0.2f};

  explicit Problem(int n) {
    Rng rng = Rng::stream(17, "test", Rng::kNoNode);
    for (int k = 0; k < 5; ++k)
      messages.push_back(test::random_vector(rng, kP));
    train = test::random_vector(rng, static_cast<std::size_t>(kIn) * kExamples);
    models = test::random_vector(rng, kNodes * kP);
    for (int k = 0; k < 3 * n; ++k)
      idx.push_back(static_cast<std::uint32_t>(rng.below(kExamples)));
    self = {messages[0].data(), messages[4].data(), messages[3].data()};
    in = {messages[2].data(), messages[1].data(), messages[0].data(), messages[1].data(),
          messages[4].data()};
  }
  MixBatch batch() const {
    return MixBatch{node.data(), self.data(), self_w.data(), first.data(), in.data(), in_w.data()};
  }
};

void check_against_unfused(int n) {
  Problem fused(n), unfused(n);
  std::vector<float> z(3 * static_cast<std::size_t>(kOut) * n, -5.0f);
  const MixedForwardPlan f{fused.train.data(), fused.idx.data(), z.data(), kOut, kIn, n,
                           kFirstNode};
  const MixBatch fused_batch = fused.batch();
  for (int b = 0; b < 3; ++b)
    for (int slab = 0; slab < mixed_slabs(f); ++slab)
      mixed_block_on_host(fused_batch, f, fused.models.data(), kP, b, slab);

  const MixBatch batch = unfused.batch();
  std::vector<float> mixed = unfused.models;
  for (int b = 0; b < 3; ++b)
    test::each_tile_on_host<4>(kP, [&](std::size_t e0, std::size_t stride) {
      mix_tile<4>(batch, mixed.data(), nullptr, kP, b, e0, stride);
    });
  const std::size_t first_layer = static_cast<std::size_t>(kOut) * kIn;
  for (int node = 0; node < kNodes; ++node) {
    const bool chunk = node >= kFirstNode && node < kFirstNode + 3;
    const std::size_t row = static_cast<std::size_t>(node) * kP;
    for (std::size_t e = 0; e < kP; ++e) {
      // The first layer's weights mixed, the same bits; the rest of the row (and every other
      // node's) as it was.
      const float expected = chunk && e < first_layer ? mixed[row + e] : unfused.models[row + e];
      if (std::memcmp(&fused.models[row + e], &expected, sizeof(float)) != 0) {
        FAIL_CHECK("node " << node << " element " << e << ": " << fused.models[row + e]
                           << " != " << expected);
        return;
      }
    }
  }
  // The pre-activations: each summed in input order from the mixed weights, the same bits.
  for (int p = 0; p < 3; ++p) {
    const std::size_t row = static_cast<std::size_t>(kFirstNode + p) * kP;
    for (int k = 0; k < n; ++k)
      for (int o = 0; o < kOut; ++o) {
        float sum = 0.0f;
        const std::uint32_t example = unfused.idx[static_cast<std::size_t>(p) * n + k];
        for (int i = 0; i < kIn; ++i)
          sum += mixed[row + static_cast<std::size_t>(i) * kOut + o] *
                 unfused.train[static_cast<std::size_t>(example) * kIn + i];
        const float got = z[(static_cast<std::size_t>(p) * n + k) * kOut + o];
        CHECK_MESSAGE(std::memcmp(&got, &sum, sizeof(float)) == 0,
                      "position " << p << " example " << k << " output " << o << ": " << got
                                  << " != " << sum);
      }
  }
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("Mixed first layer: the weights the plain mixing writes, W x in input order") {
    SUBCASE("a full minibatch of 32") {
      check_against_unfused(kMixedExamples);
    }
    SUBCASE("a minibatch of 7 (threads past it store nothing)") {
      check_against_unfused(7);
    }
  }

  TEST_CASE("Mixed first layer: a batch takes it only with two blocks per SM") {
    // 256 outputs: 4 slabs a node; an H100's 132 SMs want 264 blocks, 66 nodes.
    const int kBound = KernelChoices{}.mixing_min_blocks_per_sm;
    CHECK(kBound == 2);
    CHECK(mixed_slabs(256) == 4);
    CHECK(mixed_slabs(70) == 2);
    CHECK(mixed_forward_fills(1024, 256, 132, kBound));
    CHECK(mixed_forward_fills(66, 256, 132, kBound));
    CHECK_FALSE(mixed_forward_fills(65, 256, 132, kBound));
    CHECK_FALSE(mixed_forward_fills(1, 256, 132, kBound)); // an asynchronous run's small batch
    CHECK(mixed_forward_fills(264, 64, 132, kBound));      // one slab a node
    CHECK_FALSE(mixed_forward_fills(263, 64, 132, kBound));
    CHECK(mixed_forward_fills(1, 256, 132, 0)); // the device tests' setting
  }
}
