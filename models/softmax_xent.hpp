// SPDX-License-Identifier: MIT
// Softmax cross-entropy over a batch of logit columns: loss, gradient, accuracy.
#pragma once

#include "models/gemm.hpp"
#include "models/model.hpp"

#include <cstdint>

namespace dtsim {

// Mean over the n columns of -log softmax(logits)[label], computed with the max-shifted
// log-sum-exp so that large logits neither overflow nor lose the label's term. Writes
// dlogits = (softmax(logits) - onehot(labels)) / n, the gradient of that mean.
// requires: n >= 1; labels in [0, classes); dlogits has the shape of logits.
double softmax_xent_grad(ConstMatMap logits, const std::int32_t* labels, MatMap dlogits);

// Summed cross-entropy and the number of columns whose first largest logit is the label.
EvalResult softmax_xent_eval(ConstMatMap logits, const std::int32_t* labels);

} // namespace dtsim
