// TODO(golden) Compare
