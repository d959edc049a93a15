// TODO(numerics) TopK
