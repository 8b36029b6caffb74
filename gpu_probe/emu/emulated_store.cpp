// The store kernels' own source (cuda/store_kernels.cuh) compiled as host C++ for the SIMT
// emulator, in namespace kvl::probe::emulated.
#define KVL_EMULATED_CUDA 1
#include "gpu_probe/cuda/store_kernels.cuh"
