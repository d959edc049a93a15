// TODO(numerics) E8M0
