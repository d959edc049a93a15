// TODO(golden) GoldenFile
