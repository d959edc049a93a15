// TODO(numerics) Quant
