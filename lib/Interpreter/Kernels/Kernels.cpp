// TODO(kernels) Kernels
