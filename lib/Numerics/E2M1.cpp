// TODO(numerics) E2M1
