// TODO(golden) Filler
