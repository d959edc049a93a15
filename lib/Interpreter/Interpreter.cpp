// TODO(interpreter)
