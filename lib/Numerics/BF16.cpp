// TODO(numerics) BF16
