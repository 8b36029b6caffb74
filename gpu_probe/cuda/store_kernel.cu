// The store kernels for the GPU (compiled with --fmad=false: the codes must equal the CPU's);
// the kernel source is store_kernels.cuh, which the SIMT emulator compiles too.
#include "gpu_probe/cuda/store_kernels.cuh"
