// SPDX-License-Identifier: MIT
// make_model: reads the scenario's `model:` section and builds the network it names.
#include "models/make_model.hpp"

#include "models/cnn.hpp"
#include "models/mlp.hpp"
#include "models/resnet.hpp"

#include <cmath>
#include <stdexcept>

namespace dtsim {
namespace {

// Far beyond what a simulated fleet of models can hold in memory; catches typos (e.g. a
// width of 1e6) with a clear message instead of an allocation failure.
constexpr double kMaxParams = 200e6;

std::string format_count(double x) {
  if (!(x < 9e18)) // beyond long long (a fuzzed width of 1e108): no integer conversion
    return format_number(x);
  return std::to_string(static_cast<long long>(x));
}

// Reads a list key of positive integers (widths, channel counts).
std::vector<int> read_widths(const Params& model, const char* key, const std::vector<double>& def,
                             double min) {
  const std::vector<double> v = model.numbers(key, def, Range::at_least(min));
  for (double x : v)
    if (x != std::floor(x) || x > 1e9)
      model.fail(key, "expected a list of integers >= " + format_number(min) + ", got " +
                          format_number(x));
  return {v.begin(), v.end()};
}

// kind lenet | cnn: conv stages (keys channels, kernel, padding, hidden for cnn; LeNet-5's
// values for lenet). The first conv pads 28x28 inputs by 2 (LeNet-5's 32x32 canvas).
std::unique_ptr<Model> make_cnn(const Params& model, const std::string& kind,
                                const std::vector<int>& input_shape, int num_classes) {
  Cnn::Config c;
  c.name = kind;
  c.input_shape = input_shape;
  c.num_classes = num_classes;
  const bool image = input_shape.size() == 3;
  const int first_pad = image && input_shape[1] == 28 && input_shape[2] == 28 ? 2 : 0;
  const char* key = "kind";
  if (kind == "cnn") {
    c.channels = read_widths(model, "channels", {6, 16}, 1);
    if (c.channels.empty())
      model.fail("channels", "expected a non-empty list of conv channel counts");
    c.kernel = static_cast<int>(model.integer("kernel", 5, Range::between(1, 64)));
    std::vector<double> pad_default(c.channels.size(), 0.0);
    pad_default[0] = first_pad;
    c.padding = read_widths(model, "padding", pad_default, 0);
    if (c.padding.size() != c.channels.size())
      model.fail("padding", "expected one padding per conv stage (" +
                                std::to_string(c.channels.size()) + " values), got " +
                                std::to_string(c.padding.size()));
    for (int pad : c.padding)
      if (pad >= c.kernel)
        model.fail("padding", "expected paddings in [0, kernel - 1] = [0, " +
                                  std::to_string(c.kernel - 1) + "], got " + std::to_string(pad));
    c.hidden = read_widths(model, "hidden", {120, 84}, 1);
    key = "channels";
  } else {
    c.padding = {first_pad, 0};
  }
  if (!image)
    model.fail("kind", "expected image data (channels x height x width) for a " + kind + ", got " +
                           std::to_string(input_shape.size()) +
                           "-dimensional examples (use mlp or softmax)");
  if (const std::string e = Cnn::config_error(c); !e.empty())
    model.fail(key, e);
  const double params = Cnn::count_params(c);
  if (params > kMaxParams)
    model.fail(key, "expected a model of at most " + format_count(kMaxParams) +
                        " parameters, got " + format_count(params));
  return std::make_unique<Cnn>(std::move(c));
}

// kind resnet20: the CIFAR ResNet-20 with GroupNorm; key groups (GroupNorm groups, default 2).
std::unique_ptr<Model> make_resnet(const Params& model, const std::vector<int>& input_shape,
                                   int num_classes) {
  ResNet::Config c;
  c.input_shape = input_shape;
  c.num_classes = num_classes;
  c.blocks = 3;
  c.groups = static_cast<int>(model.integer("groups", 2, Range::between(1, 16)));
  if (input_shape.size() != 3)
    model.fail("kind", "expected image data (channels x height x width) for a resnet20, got " +
                           std::to_string(input_shape.size()) +
                           "-dimensional examples (use mlp or softmax)");
  if (const std::string e = ResNet::config_error(c); !e.empty())
    model.fail(c.groups < 1 || 16 % c.groups != 0 ? "groups" : "kind", e);
  return std::make_unique<ResNet>(std::move(c));
}

} // namespace

std::unique_ptr<Model> make_model(const Params& model, const std::vector<int>& input_shape,
                                  int num_classes) {
  if (input_shape.empty() || num_classes < 2)
    throw std::invalid_argument("make_model: need an input shape and at least 2 classes");
  double inputs = 1.0;
  for (int d : input_shape) {
    if (d < 1)
      throw std::invalid_argument("make_model: input dimensions must be >= 1");
    inputs *= d;
  }

  std::vector<std::string> kinds;
  for (const auto& [name, help] : model_kinds())
    kinds.push_back(name);
  const std::string kind = model.choice("kind", "mlp", kinds);
  if (const auto* added = model_registry().find(kind))
    return added->make(model, ModelSetup{input_shape, num_classes});
  if (kind == "none") // planned without a model (sim/scenario/run_plan.cpp)
    model.fail("kind", "kind none is a timing-only run and has no model to build");
  if (kind == "lenet" || kind == "cnn")
    return make_cnn(model, kind, input_shape, num_classes);
  if (kind == "resnet20")
    return make_resnet(model, input_shape, num_classes);
  std::vector<double> widths;
  if (kind == "mlp") {
    // Read only for kind mlp: a `hidden` given to softmax stays unread and is reported.
    widths = model.numbers("hidden", {256, 128}, Range::at_least(1));
    if (widths.empty())
      model.fail("hidden", "expected a non-empty list of layer widths (kind: softmax has no "
                           "hidden layer)");
    for (double h : widths)
      if (h != std::floor(h))
        model.fail("hidden", "expected a list of positive integers, got " + format_number(h));
  }
  // Counted in double: a huge width must fail here, not overflow an int.
  double params = 0.0;
  double fan_in = inputs;
  for (double h : widths) {
    params += (fan_in + 1.0) * h;
    fan_in = h;
  }
  params += (fan_in + 1.0) * num_classes;
  if (params > kMaxParams)
    model.fail(kind == "mlp" ? "hidden" : "kind",
               "expected a model of at most " + format_count(kMaxParams) + " parameters, got " +
                   format_count(params) + " (" + format_count(inputs) + " inputs, " +
                   std::to_string(num_classes) + " classes)");
  std::vector<int> hidden(widths.begin(), widths.end());
  return std::make_unique<Mlp>(static_cast<int>(inputs), std::move(hidden), num_classes);
}

ModelRegistry& model_registry() {
  static ModelRegistry registry;
  return registry;
}

std::vector<std::pair<std::string, std::string>> model_kinds() {
  std::vector<std::pair<std::string, std::string>> kinds = {
      {"softmax", "multinomial logistic regression: one dense layer, softmax cross-entropy"},
      {"mlp", "multilayer perceptron with ReLU; hidden: layer widths (default [256, 128])"},
      {"lenet", "LeNet-5 CNN for image data: conv5x5 6, pool, conv5x5 16, pool, dense 120-84 "
                "(ReLU, max pooling; 28x28 inputs padded by 2)"},
      {"cnn", "LeNet-style CNN: channels (default [6, 16]) conv+ReLU+2x2 max-pool stages, "
              "kernel (5), padding (per stage), hidden dense widths (default [120, 84])"},
      {"resnet20", "ResNet-20 for image data (He et al. 2016, CIFAR form, 0.27 M parameters on "
                   "3x32x32) with GroupNorm; groups: GroupNorm groups per layer (default 2)"},
      {"none", "timing-only run: no model, data or gradients; messages stand for num_params "
               "floats (default 100000); data.train_samples sets the epoch (default 60000)"},
  };
  for (const auto& e : model_registry().entries())
    kinds.emplace_back(e.name, e.help);
  return kinds;
}

} // namespace dtsim
