// SPDX-License-Identifier: MIT
// A batched backend that keeps the node models, the algorithm's per-node vectors and the
// gossip messages in its own memory (a GPU's for backend: cuda), so that none of them
// crosses to the host per step: the algorithm's hooks then describe their vector math
// instead of doing it on host spans, and the engine's message pool holds only ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace dtsim {

// A vector that ResidentVectors::apply names.
struct VectorRef {
  enum class Kind : std::uint8_t {
    none,
    model,    // node's model: what its next gradient reads
    gradient, // node's gradient row: its last gradient, or the u its local step kept there
              // (combine-then-adapt rule, kNoMessage)
    live,     // node's live row, kept here besides the model: a pairwise method's live
              // model, GSGM's table entry (the worker's latest gradient)
    message,  // message `index`
    server,   // a parameter server's vector `index` (0: its model, 1: its momentum, 2: a
              // scratch direction, 3: the adaptive delay compensation's mean square), zero
              // until first written
    sum,      // a parameter server's running sum in double precision (GSGM's), zero until
              // first written
  };
  Kind kind = Kind::none;
  std::uint32_t index = 0; // the node, the message id or the server vector
  static VectorRef model(int node) { return {Kind::model, static_cast<std::uint32_t>(node)}; }
  static VectorRef gradient(int node) { return {Kind::gradient, static_cast<std::uint32_t>(node)}; }
  static VectorRef live(int node) { return {Kind::live, static_cast<std::uint32_t>(node)}; }
  static VectorRef message(std::uint32_t id) { return {Kind::message, id}; }
  static VectorRef server_model() { return {Kind::server, 0}; }
  static VectorRef server_momentum() { return {Kind::server, 1}; }
  static VectorRef server_scratch() { return {Kind::server, 2}; }
  static VectorRef server_mean_square() { return {Kind::server, 3}; } // DC's adaptive form
  static VectorRef server_sum() { return {Kind::sum, 0}; }
};
// ResidentVectors::apply's element-wise steps.
enum class VectorOp : std::uint8_t {
  copy,                // dst = a
  average,             // dst = (a + b) * 0.5 (dst may be a)
  add_half_difference, // dst += (a - b) * 0.5
  subtract_scaled,     // dst -= s * a
  add,                 // dst += a
  divide,              // dst /= s
  zero,                // dst = 0
  // A parameter server's step (server_step.hpp) with gradient a: dst the server model w, b
  // its momentum M (written too), s the rate, t the momentum, u the weight decay.
  server_step,
  // DC-ASGD's constant delay compensation of gradient dst: dst += s * dst * dst * (a - b),
  // a the server model, b the model the worker computed it on, s the lambda.
  delay_compensate,
  // dst (the server_sum) += a in double precision when s > 0, -= a when s < 0.
  accumulate,
  // dst = a (the server_sum) * (1 / s) in double, rounded to float: the mean of s rows.
  mean_of_sum,
  subtract,          // dst = a - b
  average_less,      // dst = (a + b) * 0.5 - dst
  average_step_less, // dst = ((a + b) * 0.5 - a) - dst
  average_step_add,  // dst += (a + b) * 0.5 - a
  // DC-ASGD's adaptive compensation, in two steps. mean_square: dst = s * dst + t * a * a
  // (dst the server's mean square, a the gradient, s the decay, t 1 - decay); then
  // delay_compensate_adaptive: dst += s * (1 / sqrt(a + t)) * dst * dst * b (dst the
  // gradient, a the mean square, b = w - w_bak, s the lambda, t the epsilon).
  mean_square,
  delay_compensate_adaptive,
};

// A compression that a node's local step applies on a resident backend (CHOCO-SGD's): the
// algorithm's own compressor and random stream for that node. Called from the step's task,
// one node at a time per node (tasks of different nodes run in parallel).
class ResidentEncoder {
public:
  // wire = C(x), as the algorithm's host path would encode it.
  virtual void encode(int node, std::span<const float> x, std::span<float> wire) = 0;

protected:
  ~ResidentEncoder() = default;
};

// The compressor steps of a method whose exchanges run on the engine thread (SwarmSGD) on a
// resident backend on the host: the method's own compressor and stream, on spans of the
// backend's vectors (the engine thread, in event order).
class ResidentCodecHost {
public:
  // wire = C(x), the encoding's figures counted by the method.
  virtual void encode(int node, std::span<const float> x, std::span<float> wire) = 0;
  // out = the receiver's reconstruction of wire against ref, its failures counted.
  virtual void decode(int node, std::span<const float> wire, std::span<const float> ref,
                      std::span<float> out) = 0;
  // out = the sender's own reconstruction of wire, encoded from x.
  virtual void own_view(int node, std::span<const float> wire, std::span<const float> x,
                        std::span<float> out) = 0;

protected:
  ~ResidentCodecHost() = default;
};

// The compressor a device runs for a resident CHOCO-SGD (the host's runs through
// ResidentEncoder, the method's own compressor and stream), or for a resident SwarmSGD's
// encodings (ResidentCodec's compress): the device's form of each built-in compressor; none
// where the method's has none.
struct ResidentCompression {
  enum class Kind : std::uint8_t {
    none,     // no device form
    identity, // float32: q = d
    half,     // float16: q = d rounded to the nearest half
    qsgd,     // QSGD by buckets of `bucket` (0: the whole vector) with `bits`
    sign,     // q = mean |d| with d's sign (the sign of -0 is +; NaN's, -)
    top_k,    // the `keep` largest |d|, ties to the lower index
    random_k, // `keep` coordinates drawn uniformly, scaled by P / keep unless contractive
  };
  Kind kind = Kind::none;
  int bits = 0;
  std::size_t bucket = 0;
  bool contractive = false;
  std::size_t keep = 0;
  // Seeds of each node's device stream (QSGD's and random-k's draws on a device are its own:
  // counter-based, so that every element draws in parallel; the host's stream cannot be
  // split that way).
  const std::uint64_t* seeds = nullptr;
};

// The same compressor as a device runs it: float32 (none: wire = x), float16 (half: wire = x
// rounded to the nearest half), SwarmSGD's lattice quantizer (LatticeQuantizer's bits, side
// and rounding; the stochastic rounding's uniforms from each node's counter-based device
// stream) or any other with a device form (compress: wire = `compression`'s Q(x), the decoded
// floats, its draws from the same streams).
struct ResidentCodec {
  enum class Kind : std::uint8_t { none, half, lattice, compress };
  Kind kind = Kind::none;
  int bits = 0;
  double side = 0;
  bool stochastic = false;
  const std::uint64_t* seeds = nullptr; // per node, read at the first encoding
  ResidentCompression compression = {}; // compress's form
  // Error feedback (ErrorFeedback's): each node's residual e, a vector of its own; the
  // encoding compresses v = x + e and keeps e = v - (the sender's own view of the wire).
  bool error_feedback = false;
};

class ResidentVectors {
public:
  virtual ~ResidentVectors() = default;

  // The local update every node applies (LocalUpdate's keys): u = g + wd x; with momentum
  // m = momentum m + u, then u = m, or u + momentum m (Nesterov).
  // quasi_global (QG-DSGDm): m is the quasi-global buffer, read by the local step but not
  // written (u = momentum m + g + wd x, or g + wd x + momentum u for Nesterov); each mixing
  // refreshes it from the model's displacement, m = mu m + (1 - mu) (x - x_new) / lr, with
  // x the model before the mixing, x_new after it, lr the mixing call's.
  // combine_then_adapt (D-PSGD's other order): the local step keeps u (computed with the
  // momentum as above) and sends the model itself; the mixing then takes the node's own
  // model as self (self_id kOwnModel) and subtracts lr u, lr the mixing call's.
  // gradient_tracking (with combine_then_adapt): the local step first tracks, g += wd x,
  // y = g at the node's first step, else y += g - g_prev, then g_prev = g, and computes u
  // from y with the momentum as above but no weight decay; a message holds two vectors,
  // (x, y), and each mixing also mixes the node's tracker y (its own as self, the messages'
  // second vectors, the same weights).
  // decentlam (DecentLaM): the local step has no momentum (u = g + wd x); each mixing then
  // applies it to the mixed displacement, m = mu m + (x - x_new) / lr, x = x - lr m, with x
  // the model before the mixing, x_new after it, lr the mixing call's (mu the momentum).
  // d2 (D², no momentum): the local step sends x - lr g at the node's first step, then
  // 2 x - x_prev - (lr g - lr_prev g_prev), with g = g + wd x, and keeps x_prev = x and
  // lr g; the mixing is the plain one.
  // momentum_tracking (Momentum Tracking; momentum the beta): one row of its own, the
  // correction d. The local step sends (x, d - m) as one message of two vectors: at the
  // node's first step d = g (its first gradient) and the second vector waits for
  // start_momentum_tracking; after it, m = momentum m + g + wd x. The mixing mixes the
  // messages' first vectors (its self the node's own message, a copy of x), subtracts
  // lr (m - d), then sets d to the mix of the second vectors plus m.
  // choco (CHOCO-SGD): three rows of the rule's own, x_half, the public estimate xhat and
  // s = sum_j W_ij xhat_j (written at the start, write_rule_row). The local step:
  // x_half = x - lr u (the momentum as above), with choco_adapt_then_combine false then
  // x_half += gamma (s - xhat); q = C(x_half - xhat) (the encoder's; on a device
  // `compression`'s); xhat += q; the message is q. The mixing, its self the node's own message:
  // s += self_w q_i + sum_j w_j q_j, then x = x_half + gamma (s - xhat) (adapt-then-combine)
  // or x = x_half.
  struct LocalUpdateRule {
    float momentum = 0;
    float weight_decay = 0;
    bool nesterov = false;
    bool quasi_global = false;
    float mu = 0;
    bool combine_then_adapt = false;
    bool gradient_tracking = false;
    bool d2 = false;
    bool decentlam = false;
    bool momentum_tracking = false;
    bool choco = false;
    float gamma = 0;
    bool choco_adapt_then_combine = true;
    ResidentEncoder* encoder = nullptr;
    ResidentCompression compression = {};
    // quasi_global with a refresh every refresh_period > 1 steps (QG-DSGDm's L): each mixing
    // adds (x - x_new) / lr to the rule's row v and leaves m alone, but where the hook asked
    // for the refresh (refresh_after_mix).
    std::int64_t refresh_period = 1;
    // The vectors of P floats in a message: two with gradient or momentum tracking, else one.
    std::size_t message_vectors() const { return gradient_tracking || momentum_tracking ? 2 : 1; }
    // The rows of its own the rule keeps per node: gradient tracking's y and g_prev, D²'s
    // x_prev and lr g_prev, momentum tracking's d, CHOCO-SGD's x_half, xhat and s, a
    // quasi-global rule's v (with a refresh period).
    int rule_rows() const {
      return choco                                                       ? 3
             : gradient_tracking || d2                                   ? 2
             : momentum_tracking || (quasi_global && refresh_period > 1) ? 1
                                                                         : 0;
    }
    // Whether the local step reads or writes the rule's rows (all but the quasi-global v,
    // which only the mixing touches): such a step takes the whole gradient, never fused
    // layers' (a device's, cuda/fused_layer_step.hpp).
    bool step_reads_rows() const { return gradient_tracking || d2 || momentum_tracking || choco; }
    // Whether the local step needs a first-step flag (gradient tracking, D², momentum
    // tracking).
    bool flags_first_step() const { return gradient_tracking || d2 || momentum_tracking; }
    // Whether every node keeps a momentum row.
    bool keeps_momentum() const {
      return momentum > 0 || quasi_global || decentlam || momentum_tracking;
    }
  };
  // mix_into_model's self_id for "the node's own model" (combine-then-adapt).
  static constexpr std::uint32_t kOwnModel = 0xFFFFFFFFu;
  // local_step's out_id for "no message": with a combine-then-adapt rule the step then only
  // keeps u (a pairwise method's direction, applied later by apply()).
  static constexpr std::uint32_t kNoMessage = 0xFFFFFFFFu;
  virtual void set_local_update(const LocalUpdateRule& rule) = 0;

  // Called from node's before_gradient hook (hooks of a batch run in parallel, one node
  // each), run before node's gradient: node's model = self_w * message[self_id] +
  // sum_c in_w[c] * message[in_ids[c]], summed in that order (and with a quasi-global rule
  // the buffer refreshed, with a combine-then-adapt one lr u subtracted, with lr).
  virtual void mix_into_model(int node, std::uint32_t self_id, float self_w,
                              std::span<const std::uint32_t> in_ids, std::span<const float> in_w,
                              float lr) = 0;
  // Called after mix_into_model in the same hook, with a quasi-global rule of refresh period
  // L > 1: after this mixing the buffer is refreshed from the summed displacement v (the
  // rule's row), m = mu m + ((1 - mu) / L) v, and v = 0.
  virtual void refresh_after_mix(int node) = 0;
  // Called from node's after_gradient hook, run after the batch's gradients: the local
  // update of node's model with its gradient, and message[out_id] = model - lr * u (with a
  // combine-then-adapt rule: u kept, message[out_id] = model).
  virtual void local_step(int node, std::uint32_t out_id, float lr) = 0;

  // At the start, before any step (the engine thread): message[id] = node's model (an
  // asynchronous method's first copies of its neighbours).
  virtual void copy_model_to_message(int node, std::uint32_t id) = 0;
  // Momentum tracking's start at node, once its first step ran and every node's did (the
  // engine thread, in event order as apply()): with gbar the mean of every node's first
  // gradient (row d; the first call computes it, summed in node order), d = (g0 - gbar) /
  // (1 - momentum), m = momentum d + g0 + wd x, and message out_id's second vector d - m
  // (MomentumTracking::initialise).
  virtual void start_momentum_tracking(int node, std::uint32_t out_id) = 0;
  // The compressor steps of a method whose exchanges run on the engine thread (SwarmSGD),
  // on named vectors, in event order as apply(): on the host through `host` (set_codec),
  // on a device with its own kernels for `codec`. Their figures: the host's the method
  // counts itself; a device's come from take_encode_sums and take_decode_failures.
  virtual void set_codec(const ResidentCodec& codec, ResidentCodecHost* host) = 0;
  virtual void encode(int node, VectorRef x, VectorRef wire) = 0;
  virtual void decode(int node, VectorRef wire, VectorRef ref, VectorRef out) = 0;
  virtual void own_view(int node, VectorRef wire, VectorRef x, VectorRef out) = 0;
  // A device's decoding failures per node since the last call (added to per_node); false
  // where the host's codec counted them.
  virtual bool take_decode_failures(std::span<std::int64_t> /*per_node*/) { return false; }
  // At the start, before any step (the engine thread): the rule's own row k of each of
  // `nodes` = values (CHOCO-SGD's initial public estimates and their weighted sums, which
  // nodes with the same weights share: one copy of values crosses to a device).
  virtual void write_rule_row(std::span<const int> nodes, int k, std::span<const float> values) = 0;

  // The engine's copy of the models (one column of dim floats per node) to and from here.
  virtual void push_models(std::span<const float> models) = 0;
  // A run's start: every node's model = `model` (dim floats) and its momentum zero. The engine
  // then keeps no host copy of the models until it reads one (pull_models): n x dim floats of
  // host memory a run on a device, and a long run on the host, never need.
  virtual void push_initial_model(std::span<const float> model) = 0;
  virtual void pull_models(std::span<float> models) = 0;

  // --- Element-wise steps on named vectors, for the methods whose math runs on the engine
  // thread (AD-PSGD's averagings, a parameter server's steps): called there, they take effect in
  // call order, after the local steps of the batches before and before the gradients of the batches
  // after. ---
  using VectorRef = dtsim::VectorRef;
  using VectorOp = dtsim::VectorOp;
  // One step (on the host: vector_ops.hpp's apply_vector_op, or server_step.hpp's
  // server_step, the code the method's own host path runs: the same bits).
  void apply(VectorOp op, VectorRef dst, VectorRef a, VectorRef b = {}, float s = 0, float t = 0,
             float u = 0) {
    if (dst.kind == VectorRef::Kind::model)
      ++model_writes_;
    run_op(op, dst, a, b, {s, t, u});
  }
  // out = the vector (a parameter server's evaluation model), after the steps before.
  virtual void read(VectorRef ref, std::span<float> out) = 0;
  // The mean of the nodes' models (rows: model) or live models (rows: live), summed in node
  // order: an evaluation model (Context::mean_of_models, a pairwise method's), computed
  // where the rows are (only P floats cross). The same bits on every backend: each element
  // is the same sequence of additions and one division.
  virtual void mean_of_rows(VectorRef::Kind rows, std::span<float> out) = 0;
  // The node models' consensus distance (1/n) sum_i ||x_i - mean||^2, the evaluations'
  // column, computed where the models are (on the host: consensus_distance.hpp's, the
  // engine's own; on a device its own fixed-order reduction, deterministic but not the
  // host's bits).
  virtual double consensus_distance() = 0;
  // The figures of the encodings that the backend ran itself (a device's, rule.compression)
  // since the last call, summed over the nodes in node order: per message ||q - d||, and
  // ||q - d|| / ||d|| where d != 0, with their counts (GossipStats' quantization columns).
  // False where the encodings ran through the rule's encoder, whose owner counts them.
  struct EncodeSums {
    double error = 0;
    std::int64_t count = 0;
    double relative = 0;
    std::int64_t relative_count = 0;
  };
  virtual bool take_encode_sums(EncodeSums& /*out*/) { return false; }
  // How many apply() calls wrote a model: the engine's pulled copy is stale when this moved.
  std::uint64_t model_writes() const { return model_writes_; }

protected:
  struct Scalars {
    float s = 0, t = 0, u = 0;
  };

private:
  virtual void run_op(VectorOp op, VectorRef dst, VectorRef a, VectorRef b, Scalars k) = 0;
  std::uint64_t model_writes_ = 0;
};

} // namespace dtsim
