// The decode kernels for the GPU: the kernel source is decode_kernels.cuh, which the SIMT
// emulator compiles too (emu/emulated_kernels.cpp).
#include "gpu_probe/cuda/decode_kernels.cuh"
