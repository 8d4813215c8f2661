# Unity builds of the library (kvsim_core, kvsim_cli): CMake concatenates
# batches of sources into one translation unit each, so the standard and
# third-party headers most files include (fmt, yaml-cpp, nlohmann/json,
# CLI11) are parsed once per batch instead of once per file. That is most of
# a library object's compile time on a clean build, and a clean build is
# what CI pays for (SPEC: build and tests well under 15 minutes on 2 cores).
#
# The price is that names in one file's anonymous namespace are visible to
# the other files of its batch: such names are unique across the library
# (a clash is a compile error, "redefinition of ..."; rename the newer one).
# Files with their own compile definitions (source_paths.cpp,
# build_info.cpp) are left out by CMake itself. -DKVSIM_UNITY=OFF builds
# file by file, as an editor's incremental build may prefer.
option(KVSIM_UNITY "Build the library in unity batches (faster clean builds)" ON)
set(KVSIM_UNITY_BATCH 8 CACHE STRING "Sources per unity translation unit")

function(kvsim_unity target)
  if(KVSIM_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                                               UNITY_BUILD_BATCH_SIZE ${KVSIM_UNITY_BATCH})
  endif()
endfunction()
