"""jit_kernel: lightweight CUDA kernels compiled on first use (tvm-ffi + ninja + nvcc) and cached."""
