// The decode kernels' own source (cuda/decode_kernels.cuh) compiled as host C++ for the SIMT
// emulator: the same text nvcc compiles for the GPU, in namespace kvl::probe::emulated.
#define KVL_EMULATED_CUDA 1
#include "gpu_probe/cuda/decode_kernels.cuh"
