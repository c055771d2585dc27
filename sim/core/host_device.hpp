// SPDX-License-Identifier: MIT
// DTSIM_HD marks a function that both the host and a CUDA device run: the one definition
// that host tests check and device kernels call.
#pragma once

#if defined(__CUDACC__)
#define DTSIM_HD __host__ __device__
#else
#define DTSIM_HD
#endif
