// SPDX-License-Identifier: MIT
// The resident device store against the host (need a CUDA device): its evaluation statistics
// (the mean of the node models bit for bit, the consensus distance within rounding, the
// accuracies of resident and host models by the MLP's, LeNet's and a ResNet's evaluation
// passes against the CPU model's), the MLP's local steps with the first layer's weight gradient
// fused into them against the unfused steps and the CPU model's gradient, and its first layer's
// mixing fused into the forward pass against the plain mixing and cuBLAS's forward product,
// and its kernels loaded at set-up (the same bits).
#include "cuda/cnn_batch_shape.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device_gradients.hpp"
#include "cuda/resnet_batch_shape.hpp"
#include "models/cnn.hpp"
#include "models/mlp.hpp"
#include "models/resnet.hpp"
#include "random_problem.hpp"
#include "sim/core/rng.hpp"
#include "sim/engine/consensus_distance.hpp"
#include "sim/engine/resident_vectors.hpp"
#include "sim/optimizers/vector_ops.hpp"
#include "test_cnns.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <doctest/doctest.h>
#include <stdexcept>
#include <string>
#include <vector>

using namespace dtsim;

namespace {

// The layer fusion tests' network and data: a first layer of 70 x 100 weights (the kernels'
// 64-wide tiles and 32-input loads cut at both edges), a second of 6 x 70, 5 nodes,
// minibatches of n.
struct FirstLayerProblem {
  std::vector<int> widths;
  Mlp model;
  int nodes = 5;
  int n;
  test::RandomProblem p;
  std::size_t P;
  std::span<const float> train;
  explicit FirstLayerProblem(int examples, const std::vector<int>& hidden = {70})
      : widths(with_ends(hidden)), model(100, hidden, 6), n(examples),
        p(model, 100, 6, 300, nodes, n), P(model.num_params()),
        train(p.train.data(), static_cast<std::size_t>(p.train.size())) {}
  static std::vector<int> with_ends(std::vector<int> hidden) {
    hidden.insert(hidden.begin(), 100);
    hidden.push_back(6);
    return hidden;
  }
};

// The largest |a - b| / (1 + |b|).
double close(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t e = 0; e < a.size(); ++e)
    worst = std::max(worst, std::abs(double{a[e]} - double{b[e]}) / (1.0 + std::abs(double{b[e]})));
  return worst;
}

} // namespace

TEST_SUITE("cuda") {
  TEST_CASE("CUDA: a resident store's mean model, consensus distance and initial models") {
    if (const std::string why = cuda::unavailable_reason(); !why.empty()) {
      MESSAGE("SKIPPED: " << why);
      return;
    }
    const std::vector<int> widths{40, 24, 12, 6}; // 1,362 parameters
    const int nodes = 7, examples = 64;
    Rng rng = Rng::stream(13, "test", Rng::kNoNode);
    std::vector<float> features(static_cast<std::size_t>(widths.front() * examples));
    for (float& f : features)
      f = static_cast<float>(rng.uniform(-1.0, 1.0));
    std::vector<std::int32_t> labels(examples);
    for (std::size_t k = 0; k < labels.size(); ++k)
      labels[k] = static_cast<std::int32_t>(k % 6);
    const auto device = cuda::make_device_mlp(widths, features, labels, 8, 65535, nodes);
    ResidentVectors* resident = device->resident();
    REQUIRE(resident != nullptr);
    const std::size_t P = 1362;
    Eigen::MatrixXf models(static_cast<Eigen::Index>(P), nodes);
    for (Eigen::Index i = 0; i < models.size(); ++i)
      models.data()[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
    resident->push_models({models.data(), static_cast<std::size_t>(models.size())});

    std::vector<float> mean_device(P), mean_host(P);
    resident->mean_of_rows(VectorRef::Kind::model, mean_device);
    mean_of_columns(models, mean_host);
    CHECK(mean_device == mean_host);

    Vec scratch;
    const double host = consensus_distance(models, scratch);
    const double on_device = resident->consensus_distance();
    CHECK(host > 0);
    CHECK(std::abs(on_device - host) <= 1e-6 * host);
    CHECK(resident->consensus_distance() == on_device); // the same bits again

    // A run's start: one model up the bus, copied into every row on the device.
    const std::vector<float> first(models.col(3).data(), models.col(3).data() + P);
    resident->push_initial_model(first);
    Eigen::MatrixXf pulled = Eigen::MatrixXf::Constant(static_cast<Eigen::Index>(P), nodes, -1);
    resident->pull_models({pulled.data(), static_cast<std::size_t>(pulled.size())});
    for (int i = 0; i < nodes; ++i) {
      CAPTURE(i);
      CHECK(pulled.col(i) == models.col(3));
    }
  }

  TEST_CASE("CUDA: resident and host models' accuracies on the device equal the CPU model's") {
    if (const std::string why = cuda::unavailable_reason(); !why.empty()) {
      MESSAGE("SKIPPED: " << why);
      return;
    }
    const Mlp mlp(784, {24, 12}, 10);
    const Cnn cnn(test::lenet());
    const ResNet resnet(ResNet::Config{{1, 28, 28}, 10, 1, 2}); // one block per stage
    for (const Model* model : {static_cast<const Model*>(&mlp), static_cast<const Model*>(&cnn),
                               static_cast<const Model*>(&resnet)}) {
      CAPTURE(model->describe());
      // 250 examples: the ResNet's pass takes 100 at a time (100, 100, 50).
      const int nodes = 9, examples = 256, n = 250;
      Rng rng = Rng::stream(14, "test", Rng::kNoNode);
      std::vector<float> features(static_cast<std::size_t>(784 * examples));
      for (float& f : features)
        f = static_cast<float>(rng.uniform(0.0, 1.0));
      std::vector<std::int32_t> labels(examples);
      for (std::int32_t& y : labels)
        y = static_cast<std::int32_t>(rng.below(10));
      // At most 4 nodes per device chunk: the 9 nodes take chunks of 4, 4 and 1.
      const auto device =
          model == &mlp ? cuda::make_device_mlp({784, 24, 12, 10}, features, labels, 8, 4, nodes)
          : model == &cnn
              ? cuda::make_device_cnn(cuda::cnn_batch_shape(cnn), features, labels, 8, 4, nodes)
              : cuda::make_device_resnet(cuda::resnet_batch_shape(resnet), features, labels, 8, 4,
                                         nodes);
      const std::size_t P = model->num_params();
      Eigen::MatrixXf models(static_cast<Eigen::Index>(P), nodes);
      for (int i = 0; i < nodes; ++i) {
        Rng init = Rng::stream(15, "test-node", static_cast<std::uint64_t>(i));
        model->init({models.col(i).data(), P}, init);
      }
      device->resident()->push_models({models.data(), static_cast<std::size_t>(models.size())});
      const std::span<const float> set{features.data(), 784 * static_cast<std::size_t>(n)};
      const std::span<const std::int32_t> set_labels{labels.data(), static_cast<std::size_t>(n)};
      std::vector<EvalResult> results(nodes), again(nodes);
      REQUIRE(device->evaluate_resident(set, set_labels, results));
      REQUIRE(device->evaluate_resident(set, set_labels, again)); // the set already there
      const auto ws = model->make_workspace(n);
      const BatchView batch{features.data(), 784, n, labels.data()};
      // The ResNet's GroupNorms round further from the CPU's (its gradients agree to 1e-4,
      // cuda_gradients_test.cpp): a near tie of two logits may then go either way.
      const bool resnet_model = model == &resnet;
      const double loss_tolerance = resnet_model ? 1e-4 : 1e-5;
      const std::int64_t flips = resnet_model ? 1 : 0;
      std::int64_t right = 0;
      for (int i = 0; i < nodes; ++i) {
        CAPTURE(i);
        const EvalResult cpu = model->evaluate({models.col(i).data(), P}, batch, *ws);
        const EvalResult& gpu = results[static_cast<std::size_t>(i)];
        CHECK(again[static_cast<std::size_t>(i)].correct == gpu.correct);
        CHECK(again[static_cast<std::size_t>(i)].loss_sum == gpu.loss_sum);
        CHECK(gpu.count == n);
        CHECK(std::abs(gpu.correct - cpu.correct) <= flips);
        CHECK(std::abs(gpu.loss_sum - cpu.loss_sum) <= loss_tolerance * std::abs(cpu.loss_sum));
        right += cpu.correct;
      }
      CHECK(right > 0); // not a comparison of zeros
      // Host models (evaluate_models): one (the engine's averaged model) on all 256
      // examples, more than the set the device keeps (sent again), on this device and on one
      // without resident nodes (backend cuda); the 9 node models from the host on that one,
      // on the first 250, uploaded in chunks of 4, 4 and 1 as the resident pass evaluates
      // them: its bits. Then the resident pass again on the first 250, a prefix of the set
      // now kept: the same bits as before.
      const auto plain = // chunks of at most 4 nodes too
          model == &mlp ? cuda::make_device_mlp({784, 24, 12, 10}, features, labels, 8, 4)
          : model == &cnn
              ? cuda::make_device_cnn(cuda::cnn_batch_shape(cnn), features, labels, 8, 4)
              : cuda::make_device_resnet(cuda::resnet_batch_shape(resnet), features, labels, 8, 4);
      const std::span<const float> host_model[] = {{models.col(3).data(), P}};
      const auto ws_all = model->make_workspace(examples);
      const EvalResult cpu_all = model->evaluate(
          host_model[0], BatchView{features.data(), 784, examples, labels.data()}, *ws_all);
      CHECK(cpu_all.correct > 0);
      for (cuda::DeviceGradients* d : {device.get(), plain.get()}) {
        EvalResult gpu;
        REQUIRE(d->evaluate_models(host_model, features, labels, {&gpu, 1}));
        CHECK(gpu.count == examples);
        CHECK(std::abs(gpu.correct - cpu_all.correct) <= flips);
        CHECK(std::abs(gpu.loss_sum - cpu_all.loss_sum) <=
              loss_tolerance * std::abs(cpu_all.loss_sum));
      }
      std::vector<std::span<const float>> host_models;
      for (int i = 0; i < nodes; ++i)
        host_models.emplace_back(models.col(i).data(), P);
      std::vector<EvalResult> from_host(nodes);
      REQUIRE(plain->evaluate_models(host_models, set, set_labels, from_host));
      for (int i = 0; i < nodes; ++i) {
        CAPTURE(i);
        const EvalResult cpu = model->evaluate({models.col(i).data(), P}, batch, *ws);
        CHECK(from_host[static_cast<std::size_t>(i)].count == n);
        CHECK(std::abs(from_host[static_cast<std::size_t>(i)].correct - cpu.correct) <= flips);
        CHECK(std::abs(from_host[static_cast<std::size_t>(i)].loss_sum - cpu.loss_sum) <=
              loss_tolerance * std::abs(cpu.loss_sum));
        CHECK(from_host[static_cast<std::size_t>(i)].loss_sum ==
              results[static_cast<std::size_t>(i)].loss_sum);
        CHECK(from_host[static_cast<std::size_t>(i)].correct ==
              results[static_cast<std::size_t>(i)].correct);
      }
      std::vector<EvalResult> prefix(nodes);
      REQUIRE(device->evaluate_resident(set, set_labels, prefix));
      for (int i = 0; i < nodes; ++i) {
        CAPTURE(i);
        CHECK(prefix[static_cast<std::size_t>(i)].loss_sum ==
              results[static_cast<std::size_t>(i)].loss_sum);
        CHECK(prefix[static_cast<std::size_t>(i)].correct ==
              results[static_cast<std::size_t>(i)].correct);
      }
    }
  }

  TEST_CASE("CUDA: a resident MLP's fused layer steps equal the unfused and the CPU's") {
    if (const std::string why = cuda::unavailable_reason(); !why.empty()) {
      MESSAGE("SKIPPED: " << why);
      return;
    }
    // Minibatches of 40 examples: two loads of the fused kernel's shared memory. One hidden
    // layer (the second layer is the output layer, its delta the softmax's) or two (the
    // second's delta from the backward product above it and its ReLU mask).
    std::vector<int> hidden{70};
    SUBCASE("one hidden layer") {}
    SUBCASE("two hidden layers") {
      hidden = {70, 20};
    }
    const FirstLayerProblem problem(40, hidden);
    const auto& [widths, model, nodes, n, p, P, train] = problem;
    // Both layers' steps fused (the default: the plain tiles then take the first layer's
    // bias, between the two, and the second's), the first layer's alone, none.
    const auto fused =
        cuda::make_device_mlp(widths, train, p.labels, n, 65535, nodes, {.steps = true});
    const auto first_alone = cuda::make_device_mlp(widths, train, p.labels, n, 65535, nodes,
                                                   {.steps = true, .step_layers = 1});
    const auto unfused =
        cuda::make_device_mlp(widths, train, p.labels, n, 65535, nodes, {.steps = false});
    // Both fused, the model and momentum loaded after the sums instead of copied into shared
    // memory during them (KernelChoices::prefetch): the same sums, the same bits.
    const auto loaded_after = cuda::make_device_mlp(widths, train, p.labels, n, 65535, nodes,
                                                    {.steps = true, .prefetch = false});
    const float lr = 0.1f;
    ResidentVectors::LocalUpdateRule rule;
    rule.momentum = 0.9f;
    rule.weight_decay = 1e-3f;
    // One synchronous round: every node's gradient, then the local steps of `stepping` nodes
    // (message id = node), then each stepped node's model replaced by its message.
    const auto round = [&](cuda::DeviceGradients& device, int stepping) {
      std::vector<GradientJob> jobs(nodes);
      for (int i = 0; i < nodes; ++i) {
        jobs[static_cast<std::size_t>(i)].node = i;
        jobs[static_cast<std::size_t>(i)].indices = {p.idx.data() + static_cast<std::size_t>(i) * n,
                                                     static_cast<std::size_t>(n)};
      }
      device.compute(jobs);
      for (int i = 0; i < stepping; ++i)
        device.resident()->local_step(i, static_cast<std::uint32_t>(i), lr);
      device.finish(jobs);
      device.collect(jobs);
      for (int i = 0; i < stepping; ++i)
        device.resident()->mix_into_model(i, static_cast<std::uint32_t>(i), 1.0f, {}, {}, lr);
    };
    const auto messages = [&](cuda::DeviceGradients& device, int count) {
      std::vector<float> all(static_cast<std::size_t>(count) * P);
      for (int i = 0; i < count; ++i)
        device.resident()->read(VectorRef::message(static_cast<std::uint32_t>(i)),
                                {all.data() + static_cast<std::size_t>(i) * P, P});
      return all;
    };
    for (auto* device : {fused.get(), first_alone.get(), unfused.get(), loaded_after.get()}) {
      device->resident()->set_local_update(rule);
      device->resident()->push_models(p.params);
    }

    // Round 1, every node stepping: fused on one device, cuBLAS's gradient then the steps on
    // the other; both against the CPU model's gradient and LocalUpdate's first step
    // (m = g + wd x from a zero momentum, message = x - lr m).
    round(*fused, nodes);
    round(*first_alone, nodes);
    round(*unfused, nodes);
    const std::vector<float> first_fused = messages(*fused, nodes);
    const std::vector<float> first_layer_alone = messages(*first_alone, nodes);
    const std::vector<float> first_unfused = messages(*unfused, nodes);
    std::vector<float> expected(static_cast<std::size_t>(nodes) * P);
    const auto ws = model.make_workspace(n);
    std::vector<float> g;
    for (int i = 0; i < nodes; ++i) {
      p.cpu_gradient(model, *ws, i, g);
      for (std::size_t e = 0; e < P; ++e) {
        const float x = p.params[static_cast<std::size_t>(i) * P + e];
        expected[static_cast<std::size_t>(i) * P + e] = x - lr * (g[e] + rule.weight_decay * x);
      }
    }
    CHECK(close(first_fused, expected) < 1e-6);
    CHECK(close(first_layer_alone, expected) < 1e-6);
    CHECK(close(first_unfused, expected) < 1e-6);
    CHECK(close(first_fused, first_unfused) < 1e-6);
    // The fused steps ran, and left the fused layers' gradients off the rows: a read of one is
    // refused.
    std::vector<float> row(P);
    CHECK_THROWS_AS(fused->resident()->read(VectorRef::gradient(0), row), std::logic_error);
    CHECK_THROWS_AS(first_alone->resident()->read(VectorRef::gradient(0), row), std::logic_error);

    round(*loaded_after, nodes);
    CHECK(messages(*loaded_after, nodes) == first_fused);

    // Round 2, with the momenta of round 1: the same on the four devices.
    for (auto* device : {fused.get(), first_alone.get(), unfused.get(), loaded_after.get()})
      round(*device, nodes);
    CHECK(close(messages(*fused, nodes), messages(*unfused, nodes)) < 1e-5);
    CHECK(close(messages(*first_alone, nodes), messages(*unfused, nodes)) < 1e-5);
    CHECK(messages(*loaded_after, nodes) == messages(*fused, nodes));

    // Round 3 with node 4's step not queued: the fusing devices compute the left layers'
    // gradients after all (cuBLAS's, as the other device), then the steps.
    for (auto* device : {fused.get(), first_alone.get(), unfused.get(), loaded_after.get()})
      round(*device, nodes - 1);
    CHECK(close(messages(*fused, nodes - 1), messages(*unfused, nodes - 1)) < 1e-5);
    CHECK(close(messages(*first_alone, nodes - 1), messages(*unfused, nodes - 1)) < 1e-5);
    CHECK(messages(*loaded_after, nodes - 1) == messages(*fused, nodes - 1));
  }
  TEST_CASE("CUDA: a resident MLP's first layer mixed in its forward pass equals the unfused") {
    if (const std::string why = cuda::unavailable_reason(); !why.empty()) {
      MESSAGE("SKIPPED: " << why);
      return;
    }
    // Minibatches of 20 (one load of the fused steps' sums), a ring of the 5 nodes.
    const FirstLayerProblem problem(20);
    const auto& [widths, model, nodes, n, p, P, train] = problem;
    const auto make_with = [&](cuda::KernelChoices choices, int max_nodes_per_batch) {
      choices.mixing_min_blocks_per_sm = 0; // 5 nodes take the mixed forward pass
      auto device =
          cuda::make_device_mlp(widths, train, p.labels, n, max_nodes_per_batch, nodes, choices);
      ResidentVectors::LocalUpdateRule rule;
      rule.momentum = 0.9f;
      rule.weight_decay = 1e-3f;
      device->resident()->set_local_update(rule);
      device->resident()->push_models(p.params);
      for (int i = 0; i < nodes; ++i) // message i: node i's model
        device->resident()->copy_model_to_message(i, static_cast<std::uint32_t>(i));
      return device;
    };
    const auto make = [&](bool mixing, int max_nodes_per_batch) {
      // Each kernel loaded at its first launch: the notes below name only the choice made.
      return make_with({.mixing = mixing, .preload_kernels = false}, max_nodes_per_batch);
    };
    const auto mixed = make(true, 65535), plain = make(false, 65535), again = make(true, 65535);
    CHECK(mixed->kernel_notes() == "first layer's mixing in its forward pass turned on");
    CHECK(plain->kernel_notes().empty());
    const std::vector<int> all{0, 1, 2, 3, 4};
    // One synchronous D-PSGD round of the nodes in `batch`: the first `mixing` of them mix
    // their ring neighbours' messages (1/3 each), every one's gradient, the first `stepping`
    // of them step into their messages.
    const auto round = [&](cuda::DeviceGradients& device, const std::vector<int>& batch,
                           std::size_t mixing, std::size_t stepping) {
      for (std::size_t k = 0; k < mixing; ++k) {
        const int i = batch[k];
        const std::uint32_t left = static_cast<std::uint32_t>((i + nodes - 1) % nodes);
        const std::uint32_t right = static_cast<std::uint32_t>((i + 1) % nodes);
        const std::uint32_t ids[] = {left, right};
        const float w[] = {1.0f / 3, 1.0f / 3};
        device.resident()->mix_into_model(i, static_cast<std::uint32_t>(i), 1.0f / 3, ids, w,
                                          0.05f);
      }
      std::vector<GradientJob> jobs(batch.size());
      for (std::size_t k = 0; k < batch.size(); ++k) {
        jobs[k].node = batch[k];
        jobs[k].indices = {p.idx.data() + static_cast<std::size_t>(batch[k]) * n,
                           static_cast<std::size_t>(n)};
      }
      device.compute(jobs);
      for (std::size_t k = 0; k < stepping; ++k)
        device.resident()->local_step(batch[k], static_cast<std::uint32_t>(batch[k]), 0.05f);
      device.finish(jobs);
      device.collect(jobs);
      std::vector<double> losses;
      for (const GradientJob& job : jobs)
        losses.push_back(job.loss);
      return losses;
    };
    const auto rows = [&](cuda::DeviceGradients& device, VectorRef (*ref)(int)) {
      std::vector<float> all_rows(static_cast<std::size_t>(nodes) * P);
      for (int i = 0; i < nodes; ++i)
        device.resident()->read(ref(i), {all_rows.data() + static_cast<std::size_t>(i) * P, P});
      return all_rows;
    };
    const auto model_of = +[](int i) { return VectorRef::model(i); };
    const auto message_of =
        +[](int i) { return VectorRef::message(static_cast<std::uint32_t>(i)); };
    const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
    };
    // Round 1: the messages are the same models on both devices, so the mixed models are the
    // same bits (the first layer's by the fused kernel, the rest by the plain one); the
    // losses and steps agree to the forward product's rounding.
    const std::vector<double> loss_mixed = round(*mixed, all, nodes, nodes);
    const std::vector<double> loss_plain = round(*plain, all, nodes, nodes);
    CHECK(same_bits(rows(*mixed, model_of), rows(*plain, model_of)));
    for (std::size_t i = 0; i < all.size(); ++i)
      CHECK(std::abs(loss_mixed[i] - loss_plain[i]) <= 1e-5 * std::abs(loss_plain[i]));
    CHECK(close(rows(*mixed, message_of), rows(*plain, message_of)) < 1e-6);
    // Then, on both devices alike: two rounds with the momenta; node 4's mixing not queued
    // (the plain mixing takes the whole rows); nodes 0, 2 and 4 alone (not one range: the
    // first layer mixed on its own before their models are gathered into the pass's rows);
    // node 4's step not queued (the first layer's weight gradient by cuBLAS after all, from
    // the minibatches gathered then).
    const auto rounds = [&](cuda::DeviceGradients& device) {
      round(device, all, nodes, nodes);
      round(device, all, nodes, nodes);
      round(device, all, nodes - 1, nodes);
      round(device, {0, 2, 4}, 3, 3);
      round(device, all, nodes, nodes - 1);
    };
    rounds(*mixed);
    rounds(*plain);
    CHECK(close(rows(*mixed, model_of), rows(*plain, model_of)) < 1e-5);
    CHECK(close(rows(*mixed, message_of), rows(*plain, message_of)) < 1e-5);
    // The same bits again on a third device.
    round(*again, all, nodes, nodes);
    rounds(*again);
    CHECK(same_bits(rows(*mixed, message_of), rows(*again, message_of)));
    // A batch in chunks of two nodes: the first layer mixed on its own before the first
    // chunk's pass, the same bits as the plain mixing.
    const auto chunked = make(true, 2), chunked_plain = make(false, 2);
    round(*chunked, all, nodes, nodes);
    round(*chunked_plain, all, nodes, nodes);
    CHECK(same_bits(rows(*chunked, model_of), rows(*chunked_plain, model_of)));
    CHECK(same_bits(rows(*chunked, message_of), rows(*chunked_plain, message_of)));

    // The plain mixing in the kernel of every mixing (mix_tile), and the fused steps' sums'
    // inputs copied after their tiles: other kernels, the same bits as `plain`'s.
    const auto general_mixing =
        make_with({.plain_mixing_kernel = false, .preload_kernels = false}, 65535);
    const auto sums_after = make_with({.sums_first = false, .preload_kernels = false}, 65535);
    CHECK(general_mixing->kernel_notes() == "the plain mixing in the kernel of every mixing");
    CHECK(sums_after->kernel_notes() == "the fused steps' sums' inputs copied after their tiles");
    // The default choices: every kernel of the module loaded at set-up instead of at its first
    // launch (kernel_preload.cuh), more than the dozen named ones, and a warm-up pass of every
    // node run through the chunk buffers; the same bits after as `plain`'s, which loads each
    // kernel at its first launch.
    const auto preloaded = make_with({}, 65535);
    const std::string preload_note = preloaded->kernel_notes();
    CAPTURE(preload_note);
    CHECK(preload_note.ends_with(" kernels loaded and a pass of " + std::to_string(nodes) +
                                 " nodes run before the run"));
    CHECK(std::atoi(preload_note.c_str()) > 12);
    for (auto* device : {general_mixing.get(), sums_after.get(), preloaded.get()}) {
      round(*device, all, nodes, nodes);
      rounds(*device);
      CHECK(same_bits(rows(*device, model_of), rows(*plain, model_of)));
      CHECK(same_bits(rows(*device, message_of), rows(*plain, message_of)));
    }
  }
}
