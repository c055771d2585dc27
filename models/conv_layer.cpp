// SPDX-License-Identifier: MIT
// ConvLayer: register-blocked direct convolution kernels over lane-blocked maps.
#include "models/conv_layer.hpp"

#include "sim/core/errors.hpp"
#include "sim/core/rng.hpp"

#include <algorithm>
#include <array>

// The kernels use Eigen's packet primitives (Eigen::internal, as gemm.cpp does): pmadd is one
// FMA on AVX2 + FMA builds, and the code stays correct for any SIMD width Eigen picks.

namespace dtsim {
namespace {

namespace ei = Eigen::internal;
using Packet = ei::packet_traits<float>::type;

// Tile sizes: 12 accumulators, their operands and a broadcast fit in 16 vector registers, and
// 12 independent FMA chains cover the FMA latency x throughput of current x86 cores.
constexpr int kForwardChannels = 6;    // output channels per forward tile ...
constexpr int kTileBlocks = 2;         // ... times lane blocks (forward and input gradient)
constexpr int kInputGradChannels = 6;  // input channels per input-gradient tile
constexpr int kWeightGradRows = 3;     // (kx, ci) rows per weight-gradient tile ...
constexpr int kWeightGradChannels = 4; // ... times output channels
// The weight gradient sweeps the output rows in groups whose input and dz rows stay in L1
// (32 KiB here) while every tile of the group reads them; measured best for LeNet's layers.
constexpr std::size_t kWeightGradGroupBytes = 40 * 1024;

// ---- forward: z(pixel, co0 .. co0 + C) of NV lane blocks -----------------------------------

struct ForwardArgs {
  std::size_t in_row; // floats per padded input row
  int kernel;
  int kc_count;  // kernel * in_channels: the (kx, ci) run, contiguous in a row
  int co_stride; // out_channels: weight row length
};

template <int NV> using ConstPtrs = std::array<const float*, NV>;
template <int NV> using Ptrs = std::array<float*, NV>;

template <int C, int NV>
void forward_tile(const ForwardArgs& a, ConstPtrs<NV> x, const float* w, const float* bias,
                  Ptrs<NV> z) {
  Packet acc[C][NV];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    const Packet b = ei::pset1<Packet>(bias[c]);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[c][v] = b;
  }
  for (int ky = 0; ky < a.kernel; ++ky) {
    const float* wk = w + static_cast<std::size_t>(ky) * a.kc_count * a.co_stride;
    ConstPtrs<NV> xr;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      xr[v] = x[v] + ky * a.in_row;
    for (int kc = 0; kc < a.kc_count; ++kc) {
      Packet xv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        xv[v] = ei::ploadu<Packet>(xr[v] + static_cast<std::size_t>(kc) * kLanes);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        const Packet wb = ei::pset1<Packet>(wk[c]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
          acc[c][v] = ei::pmadd(wb, xv[v], acc[c][v]);
      }
      wk += a.co_stride;
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      ei::pstoreu(z[v] + static_cast<std::size_t>(c) * kLanes, acc[c][v]);
}

template <int NV>
using ForwardTile = void (*)(const ForwardArgs&, ConstPtrs<NV>, const float*, const float*,
                             Ptrs<NV>);
// Indexed by channels - 1: the full tile, then the remainder of out_channels.
template <int NV>
constexpr ForwardTile<NV> kForwardTiles[kForwardChannels] = {
    forward_tile<1, NV>, forward_tile<2, NV>, forward_tile<3, NV>,
    forward_tile<4, NV>, forward_tile<5, NV>, forward_tile<6, NV>};

template <int NV>
void forward_blocks(const ConvLayer& l, const float* w, const float* bias, const float* x, float* z,
                    int b0) {
  const MapShape in = l.input(), out = l.output();
  const ForwardArgs a{in.row_floats(), l.kernel, l.kernel * l.in_channels, l.out_channels};
  for (int y = 0; y < out.height; ++y)
    for (int xo = 0; xo < out.width; ++xo) {
      ConstPtrs<NV> xp;
      Ptrs<NV> zp;
      for (int v = 0; v < NV; ++v) {
        xp[v] = x + static_cast<std::size_t>(b0 + v) * in.block_floats() + y * in.row_floats() +
                xo * in.pixel_floats();
        zp[v] = z + static_cast<std::size_t>(b0 + v) * out.block_floats() +
                (static_cast<std::size_t>(y) * out.width + xo) * out.pixel_floats();
      }
      for (int co = 0; co < l.out_channels; co += kForwardChannels) {
        const int c = std::min(kForwardChannels, l.out_channels - co);
        Ptrs<NV> zc;
        for (int v = 0; v < NV; ++v)
          zc[v] = zp[v] + static_cast<std::size_t>(co) * kLanes;
        kForwardTiles<NV>[c - 1](a, xp, w + co, bias + co, zc);
      }
    }
}

// ---- weight gradient: lane-wise partial sums of dW(k, co) over one block's pixels ----------

struct WeightGradArgs {
  std::size_t in_row, in_pixel; // floats per padded input row / pixel
  std::size_t out_row, out_pixel;
  int width_out;
  std::size_t partial_row; // out_channels * kLanes: one (ky, kx, ci) row of the partial sums
};

template <int K, int C>
void weight_grad_tile(const WeightGradArgs& a, const float* x, const float* dz, int y0, int y1,
                      float* partial) {
  Packet acc[K][C];
#pragma GCC unroll 4
  for (int i = 0; i < K; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < C; ++j)
      acc[i][j] = ei::ploadu<Packet>(partial + i * a.partial_row + j * kLanes);
  for (int y = y0; y < y1; ++y) {
    const float* xp = x + y * a.in_row;
    const float* dp = dz + y * a.out_row;
    for (int xo = 0; xo < a.width_out; ++xo) {
      Packet xv[K];
#pragma GCC unroll 4
      for (int i = 0; i < K; ++i)
        xv[i] = ei::ploadu<Packet>(xp + i * kLanes);
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        const Packet d = ei::ploadu<Packet>(dp + j * kLanes);
#pragma GCC unroll 4
        for (int i = 0; i < K; ++i)
          acc[i][j] = ei::pmadd(xv[i], d, acc[i][j]);
      }
      xp += a.in_pixel;
      dp += a.out_pixel;
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < K; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < C; ++j)
      ei::pstoreu(partial + i * a.partial_row + j * kLanes, acc[i][j]);
}

using WeightGradTile = void (*)(const WeightGradArgs&, const float*, const float*, int, int,
                                float*);
constexpr WeightGradTile kWeightGradTiles[kWeightGradRows][kWeightGradChannels] = {
    {weight_grad_tile<1, 1>, weight_grad_tile<1, 2>, weight_grad_tile<1, 3>,
     weight_grad_tile<1, 4>},
    {weight_grad_tile<2, 1>, weight_grad_tile<2, 2>, weight_grad_tile<2, 3>,
     weight_grad_tile<2, 4>},
    {weight_grad_tile<3, 1>, weight_grad_tile<3, 2>, weight_grad_tile<3, 3>,
     weight_grad_tile<3, 4>}};

// Adds block b's contribution to the lane-wise partial sums: dW at partial[w * kLanes] for
// weight index w, then db.
void weight_grad_block(const ConvLayer& l, const float* x, const float* dz, float* partial) {
  const MapShape in = l.input(), out = l.output();
  const WeightGradArgs a{in.row_floats(),  in.pixel_floats(),
                         out.row_floats(), out.pixel_floats(),
                         out.width,        static_cast<std::size_t>(l.out_channels) * kLanes};
  const int kc_count = l.kernel * l.in_channels;
  const std::size_t row_bytes = sizeof(float) * (a.out_row + a.in_row);
  const std::size_t fixed_bytes = sizeof(float) * (l.kernel - 1) * a.in_row;
  const int group = kWeightGradGroupBytes > fixed_bytes + row_bytes
                        ? static_cast<int>((kWeightGradGroupBytes - fixed_bytes) / row_bytes)
                        : 1;
  for (int y0 = 0; y0 < out.height; y0 += group) {
    const int y1 = std::min(out.height, y0 + group);
    for (int ky = 0; ky < l.kernel; ++ky)
      for (int kc = 0; kc < kc_count; kc += kWeightGradRows) {
        const int rows = std::min(kWeightGradRows, kc_count - kc);
        const float* xk = x + ky * a.in_row + static_cast<std::size_t>(kc) * kLanes;
        float* pk = partial + (static_cast<std::size_t>(ky) * kc_count + kc) * a.partial_row;
        for (int co = 0; co < l.out_channels; co += kWeightGradChannels) {
          const int c = std::min(kWeightGradChannels, l.out_channels - co);
          kWeightGradTiles[rows - 1][c - 1](a, xk, dz + static_cast<std::size_t>(co) * kLanes, y0,
                                            y1, pk + static_cast<std::size_t>(co) * kLanes);
        }
      }
  }
  float* db = partial + l.num_weights() * kLanes;
  const std::size_t pixels = static_cast<std::size_t>(out.height) * out.width;
  for (int co = 0; co < l.out_channels; ++co) {
    Packet acc = ei::ploadu<Packet>(db + static_cast<std::size_t>(co) * kLanes);
    const float* dp = dz + static_cast<std::size_t>(co) * kLanes;
    for (std::size_t p = 0; p < pixels; ++p)
      acc = ei::padd(acc, ei::ploadu<Packet>(dp + p * a.out_pixel));
    ei::pstoreu(db + static_cast<std::size_t>(co) * kLanes, acc);
  }
}

// ---- input gradient: dx(pixel, ci0 .. ci0 + C) of NV lane blocks ---------------------------

struct InputGradArgs {
  int kernel, height_out, width_out;
  int in_channels, out_channels;
  std::size_t out_pixel;
};

template <int C, int NV>
void input_grad_tile(const InputGradArgs& a, ConstPtrs<NV> dz, const float* wt, int iy, int ix,
                     Ptrs<NV> dx) {
  Packet acc[C][NV];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[c][v] = ei::pset1<Packet>(0.0f);
  // Output pixel (iy - ky, ix - kx) read input pixel (iy, ix) through kernel tap (ky, kx).
  const int ky0 = std::max(0, iy - a.height_out + 1), ky1 = std::min(a.kernel - 1, iy);
  const int kx0 = std::max(0, ix - a.width_out + 1), kx1 = std::min(a.kernel - 1, ix);
  for (int ky = ky0; ky <= ky1; ++ky)
    for (int kx = kx0; kx <= kx1; ++kx) {
      const std::size_t o =
          (static_cast<std::size_t>(iy - ky) * a.width_out + (ix - kx)) * a.out_pixel;
      const float* w =
          wt + static_cast<std::size_t>(ky * a.kernel + kx) * a.out_channels * a.in_channels;
      for (int co = 0; co < a.out_channels; ++co) {
        Packet d[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
          d[v] = ei::ploadu<Packet>(dz[v] + o + static_cast<std::size_t>(co) * kLanes);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
          const Packet wb = ei::pset1<Packet>(w[c]);
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v)
            acc[c][v] = ei::pmadd(wb, d[v], acc[c][v]);
        }
        w += a.in_channels;
      }
    }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      ei::pstoreu(dx[v] + static_cast<std::size_t>(c) * kLanes, acc[c][v]);
}

template <int NV>
using InputGradTile = void (*)(const InputGradArgs&, ConstPtrs<NV>, const float*, int, int,
                               Ptrs<NV>);
template <int NV>
constexpr InputGradTile<NV> kInputGradTiles[kInputGradChannels] = {
    input_grad_tile<1, NV>, input_grad_tile<2, NV>, input_grad_tile<3, NV>,
    input_grad_tile<4, NV>, input_grad_tile<5, NV>, input_grad_tile<6, NV>};

template <int NV>
void input_grad_blocks(const ConvLayer& l, const float* wt, const float* dz, float* dx, int b0) {
  const MapShape out = l.output(), in = l.input_unpadded();
  const InputGradArgs a{l.kernel,      out.height,     out.width,
                        l.in_channels, l.out_channels, out.pixel_floats()};
  ConstPtrs<NV> dzb;
  for (int v = 0; v < NV; ++v)
    dzb[v] = dz + static_cast<std::size_t>(b0 + v) * out.block_floats();
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < in.width; ++x) {
      Ptrs<NV> dp;
      for (int v = 0; v < NV; ++v)
        dp[v] = dx + static_cast<std::size_t>(b0 + v) * in.block_floats() +
                (static_cast<std::size_t>(y) * in.width + x) * in.pixel_floats();
      for (int ci = 0; ci < l.in_channels; ci += kInputGradChannels) {
        const int c = std::min(kInputGradChannels, l.in_channels - ci);
        Ptrs<NV> dc;
        for (int v = 0; v < NV; ++v)
          dc[v] = dp[v] + static_cast<std::size_t>(ci) * kLanes;
        // (y + pad, x + pad): the pixel's position in the padded map the forward pass read.
        kInputGradTiles<NV>[c - 1](a, dzb, wt + ci, y + l.pad, x + l.pad, dc);
      }
    }
}

} // namespace

MapShape ConvLayer::input() const {
  return {in_height + 2 * pad, in_width + 2 * pad, in_channels};
}

MapShape ConvLayer::output() const {
  return {in_height + 2 * pad - kernel + 1, in_width + 2 * pad - kernel + 1, out_channels};
}

std::size_t ConvLayer::num_weights() const {
  return static_cast<std::size_t>(kernel) * kernel * in_channels * out_channels;
}

double ConvLayer::macs_per_example() const {
  const MapShape out = output();
  return static_cast<double>(out.height) * out.width * static_cast<double>(num_weights());
}

std::size_t ConvLayer::scratch_floats() const {
  // Lane-wise partial sums of dW and db, or the transposed weights of the input gradient.
  return num_params() * kLanes;
}

void ConvLayer::init(std::span<float> params, double limit, Rng& rng) const {
  DTSIM_ASSERT(offset + num_params() <= params.size(), "ConvLayer::init: params too short");
  float* w = params.data() + offset;
  for (std::size_t i = 0; i < num_weights(); ++i)
    w[i] = static_cast<float>(rng.uniform(-limit, limit));
  std::fill(w + num_weights(), w + num_params(), 0.0f);
}

void ConvLayer::forward(std::span<const float> params, const float* x, int blocks, float* z) const {
  const float* w = params.data() + offset;
  const float* bias = w + num_weights();
  int b = 0;
  for (; b + kTileBlocks <= blocks; b += kTileBlocks)
    forward_blocks<kTileBlocks>(*this, w, bias, x, z, b);
  if (b < blocks)
    forward_blocks<1>(*this, w, bias, x, z, b);
}

void ConvLayer::backward_params(const float* x, const float* dz, int blocks, std::span<float> grad,
                                float* scratch) const {
  const MapShape in = input(), out = output();
  std::fill(scratch, scratch + num_params() * kLanes, 0.0f);
  for (int b = 0; b < blocks; ++b)
    weight_grad_block(*this, x + b * in.block_floats(), dz + b * out.block_floats(), scratch);
  float* g = grad.data() + offset;
  for (std::size_t i = 0; i < num_params(); ++i)
    g[i] = ei::predux(ei::ploadu<Packet>(scratch + i * kLanes));
}

void ConvLayer::backward_params_per_example(const float* x, const float* dz, int count, float scale,
                                            float* per_example, std::size_t ld,
                                            float* scratch) const {
  const MapShape in = input(), out = output();
  for (int b = 0; b < lane_blocks(count); ++b) {
    std::fill(scratch, scratch + num_params() * kLanes, 0.0f);
    weight_grad_block(*this, x + b * in.block_floats(), dz + b * out.block_floats(), scratch);
    for (int lane = 0; lane < std::min(kLanes, count - b * kLanes); ++lane) {
      float* col = per_example + static_cast<std::size_t>(b * kLanes + lane) * ld + offset;
      for (std::size_t i = 0; i < num_params(); ++i)
        col[i] = scale * scratch[i * kLanes + lane];
    }
  }
}

void ConvLayer::backward_input(std::span<const float> params, const float* dz, int blocks,
                               float* dx, float* scratch) const {
  // The tile broadcasts consecutive input channels: W as (ky, kx, co, ci).
  const float* w = params.data() + offset;
  const int taps = kernel * kernel;
  for (int t = 0; t < taps; ++t)
    for (int ci = 0; ci < in_channels; ++ci)
      for (int co = 0; co < out_channels; ++co)
        scratch[(static_cast<std::size_t>(t) * out_channels + co) * in_channels + ci] =
            w[(static_cast<std::size_t>(t) * in_channels + ci) * out_channels + co];
  int b = 0;
  for (; b + kTileBlocks <= blocks; b += kTileBlocks)
    input_grad_blocks<kTileBlocks>(*this, scratch, dz, dx, b);
  if (b < blocks)
    input_grad_blocks<1>(*this, scratch, dz, dx, b);
}

} // namespace dtsim
