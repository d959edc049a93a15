# Writes OUTPUT: a C++ raw string literal kKernelLibrary holding the text of INPUT (Kernels.mlir), so that the
# dsa-to-gpu pass carries its kernel library without reading files at run time.
file(READ "${INPUT}" DSA_KERNELS_TEXT)
string(FIND "${DSA_KERNELS_TEXT}" ")dsakernels\"" DSA_KERNELS_DELIM)
if(NOT DSA_KERNELS_DELIM EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter )dsakernels\"")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by EmbedKernels.cmake; do not edit.\n"
  "static const char kKernelLibrary[] = R\"dsakernels(${DSA_KERNELS_TEXT})dsakernels\";\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
