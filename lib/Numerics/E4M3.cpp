// TODO(numerics) E4M3
