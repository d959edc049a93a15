//===- StandaloneMain.cpp - run a fuzz target on files, without libFuzzer -----------------------------------===//
//
// The main() of the fuzz targets in the ordinary build (g++, no -fsanitize=fuzzer): each argument is a file or a
// directory of files, each file is one input given once to LLVMFuzzerTestOneInput. CTest's FuzzRegression.* run it
// on the seed corpus and on every reproducer in fuzz/regressions/<target>/ (crashes the fuzzers found, kept as
// regression tests), so both run on every machine, with or without clang. Prints "N inputs, no crash" at the end.
//
//===----------------------------------------------------------------------------------------------------------===//
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto &entry : std::filesystem::recursive_directory_iterator(p))
        if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') // not .gitkeep
          files.push_back(entry.path());
    } else if (std::filesystem::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto &f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "input %s (%zu bytes)\n", f.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  }
  std::printf("%zu inputs, no crash\n", files.size());
  return 0;
}
