# The installed package: `cmake --install BUILD --prefix P`, then in a consumer's CMakeLists.txt
#   find_package(DSA REQUIRED)                        # everything that was built (the compiler parts need MLIR 22)
#   find_package(DSA REQUIRED COMPONENTS Runtime)     # only the MLIR-free libraries (e.g. on a GPU machine)
# and link the namespaced targets. MLIR-free (export set DSARuntimeTargets): DSA::Numerics, DSA::Core, DSA::Kernels,
# DSA::Golden, DSA::HostRuntime, DSA::CPURuntime, DSA::CudaRuntime, DSA::GpuStepRuntime, and DSA::RuntimeC (the C API,
# libdsa_runtime_c.so, header dsa-c/runtime.h: links nothing else of the package). With MLIR (DSACompilerTargets):
# DSA::Dialect, DSA::Transforms, DSA::Interpreter, DSA::ConversionCPU, DSA::ConversionGPU, DSA::Conversion (both),
# DSA::BackendCPU, DSA::BackendGPU. Headers (generated .inc included) under P/include, libraries under P/lib, the
# package under P/lib/cmake/DSA, tools under P/bin, libDSAPlugin.so under P/lib.
include(CMakePackageConfigHelpers)

set(DSA_RUNTIME_EXPORTS DSANumerics:Numerics DSACore:Core DSAKernels:Kernels DSAGolden:Golden
                        DSAHostRuntime:HostRuntime DSACPURuntime:CPURuntime DSACudaRuntime:CudaRuntime
                        DSAGpuStepRuntime:GpuStepRuntime DSARuntimeC:RuntimeC)
set(DSA_COMPILER_EXPORTS DSACompilerHeaders:CompilerHeaders DSADialect:Dialect DSATransforms:Transforms
                         DSAInterpreter:Interpreter DSAToCPU:ConversionCPU DSAToGPU:ConversionGPU
                         DSAConversion:Conversion DSABackendCommon:BackendCommon DSABackendCPU:BackendCPU
                         DSABackendGPU:BackendGPU)

function(dsa_install_exports set pairs)
  set(targets)
  foreach(pair ${pairs})
    string(REPLACE ":" ";" parts ${pair})
    list(GET parts 0 target)
    list(GET parts 1 name)
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
    list(APPEND targets ${target})
  endforeach()
  install(TARGETS ${targets} EXPORT ${set}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT ${set} NAMESPACE DSA:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/DSA)
endfunction()

dsa_install_exports(DSARuntimeTargets "${DSA_RUNTIME_EXPORTS}")
install(DIRECTORY core/include/ kernels/include/ golden/include/ runtime/host/include/ runtime/cpu/include/
                  runtime/cuda/include/ runtime/capi/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS dsa-golden RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

if(DSA_ENABLE_MLIR)
  # The two conversions as one target.
  add_library(DSAConversion INTERFACE)
  target_link_libraries(DSAConversion INTERFACE DSAToCPU DSAToGPU)
  dsa_install_exports(DSACompilerTargets "${DSA_COMPILER_EXPORTS}")
  install(DIRECTORY compiler/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.td" PATTERN "*.def")
  install(DIRECTORY ${CMAKE_BINARY_DIR}/compiler/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.inc" PATTERN "CMakeFiles" EXCLUDE)
  install(TARGETS dsa-opt dsa-run dsa-compile RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(TARGETS DSAPlugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

set(DSA_INSTALLED_WITH_COMPILER ${DSA_ENABLE_MLIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/DSAConfig.cmake.in ${CMAKE_BINARY_DIR}/DSAConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/DSA)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/DSAConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/DSAConfig.cmake ${CMAKE_BINARY_DIR}/DSAConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/DSA)
