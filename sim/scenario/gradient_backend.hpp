// SPDX-License-Identifier: MIT
// model.backend: where a run's gradients are computed.
#pragma once

#include "data/dataset.hpp"
#include "models/model.hpp"
#include "sim/core/params.hpp"
#include "sim/engine/batched_gradients.hpp"
#include "sim/engine/example_order.hpp"

#include <memory>

namespace dtsim {

// Reads `backend` from the model section: cpu (one oneTBB task per node, the default),
// cpu-batched (the batched executor on the CPU: the GPU backend's reference, same results
// as cpu) or cuda (batches on a GPU; softmax and mlp). Returns the batched backend, or null
// for cpu. Refuses with ConfigError naming the key: a model or example order the backend
// cannot run, and for a run (for_run) a build without CUDA or a machine without a device;
// a checking plan (dtsim validate, a sweep's check) makes no backend and needs no GPU.
std::unique_ptr<BatchedGradients> make_gradient_backend(const Params& model_section,
                                                        const Model& model, const Dataset& train,
                                                        int batch_size, const ExampleOrder& order,
                                                        bool for_run);

} // namespace dtsim
