// TODO(kernels) Tensor
