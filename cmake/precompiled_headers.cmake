# Precompiled headers for the test and benchmark executables: one header per
# kind, shared by all of them (REUSE_FROM), with the standard and third-party
# headers every test includes. Measured with g++ 12 on one core, a file
# holding only the include: nlohmann/json 2.0 s, GoogleTest 1.2 s, yaml-cpp
# 0.9 s, fmt 0.5 s. On 30 objects sampled from the build (AMD EPYC), the test
# objects (with -O1, below) took 38.5 s against 63.9 s. The library's
# objects are left alone: most are small, and loading a 140 MB header made
# them slower as often as faster (CLI11's, header-only in Debian, doubled
# some of cli/'s). Only headers kvsim does not write go in, so a change to
# one of kvsim's own headers rebuilds what includes it and nothing more.
#
# A compiler cache caches objects built on a precompiled header only when
# told to ignore the header's timestamp and __DATE__/__TIME__ (ccache's
# documentation, "Precompiled headers"); kvsim_use_ccache says so for its
# own calls and leaves the user's configuration alone.
option(KVSIM_PCH "Precompile the headers the test and benchmark executables share" ON)

set(KVSIM_PCH_HEADERS <algorithm> <array> <cmath> <cstddef> <cstdint> <cstring> <filesystem>
                      <fstream> <functional> <limits> <map> <memory> <numeric> <optional> <random>
                      <set> <span> <sstream> <stdexcept> <string> <string_view> <unordered_map>
                      <utility> <vector> <fmt/format.h> <nlohmann/json.hpp> <yaml-cpp/yaml.h>)

# Through a precompiled header g++ 12 no longer takes the standard library's
# inlined std::string code for a system header's and reports its false
# positives there (string + "literal": "forming offset [32, 36] is out of the
# bounds [0, 32]"). They stay warnings; a real overrun is ASan's to find.
set(KVSIM_PCH_WARNINGS)
if(KVSIM_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(KVSIM_PCH_WARNINGS -Wno-error=array-bounds -Wno-error=stringop-overread
                         -Wno-error=stringop-overflow)
endif()

function(kvsim_use_ccache ccache)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=pch_defines,time_macros ${ccache}
      PARENT_SCOPE)
endfunction()

# kvsim_precompile(TARGET FIRST EXTRA...): the first target of a kind (FIRST
# empty) builds the header, with EXTRA added to it; the others, compiled
# with the same flags, reuse it.
function(kvsim_precompile target first)
  if(NOT KVSIM_PCH)
    return()
  endif()
  if(first)
    target_precompile_headers(${target} REUSE_FROM ${first})
  else()
    target_precompile_headers(${target} PRIVATE ${KVSIM_PCH_HEADERS} ${ARGN})
  endif()
endfunction()
