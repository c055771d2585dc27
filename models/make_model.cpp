// SPDX-License-Identifier: MIT
// make_model: reads the scenario's `model:` section and builds the network it names.
#include "models/make_model.hpp"

#include "models/mlp.hpp"

#include <cmath>
#include <stdexcept>

namespace dtsim {
namespace {

// Far beyond what a simulated fleet of models can hold in memory; catches typos (e.g. a
// width of 1e6) with a clear message instead of an allocation failure.
constexpr double kMaxParams = 200e6;

std::string format_count(double x) {
  return std::to_string(static_cast<long long>(x));
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

  const std::string kind = model.choice("kind", "mlp", {"softmax", "mlp"});
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

std::vector<std::pair<std::string, std::string>> model_kinds() {
  return {
      {"softmax", "multinomial logistic regression: one dense layer, softmax cross-entropy"},
      {"mlp", "multilayer perceptron with ReLU; hidden: layer widths (default [256, 128])"},
  };
}

} // namespace dtsim
