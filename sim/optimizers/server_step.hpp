// SPDX-License-Identifier: MIT
// The parameter server's step, shared so that methods that reduce to ASGD do so exactly.
#pragma once

#include "sim/core/flat_vector.hpp"

namespace dtsim {

// u = g + wd*w; with momentum mu: M = mu*M + u, w -= lr*M; else w -= lr*u.
template <class G> void server_step(Vec& w, Vec& m, const G& g, float lr, float mu, float wd) {
  if (mu > 0) {
    m = mu * m + g + wd * w;
    w -= lr * m;
  } else if (wd > 0) {
    w -= lr * (g + wd * w);
  } else {
    w -= lr * g;
  }
}

} // namespace dtsim
