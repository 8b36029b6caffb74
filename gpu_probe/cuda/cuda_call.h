#pragma once
// KVL_CUDA_CALL, alone: the CUDA runtime's cudaError_t and cudaSuccess come from whoever
// includes it, the real runtime (cuda_check.h) or the SIMT emulator's dialect (dialect.cuh under
// KVL_EMULATED_CUDA), so both builds of the kernels' launchers share the one definition.

// In functions returning cudaError_t: returns the first failing call's error.
#define KVL_CUDA_CALL(call)                                                                        \
    do {                                                                                           \
        const cudaError_t kvl_err_ = (call);                                                       \
        if (kvl_err_ != cudaSuccess)                                                               \
            return kvl_err_;                                                                       \
    } while (false)
