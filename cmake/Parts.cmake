# doppio_add_part(<part> [DEPENDS targets...] [PRIVATE_DEPENDS targets...]
#                 [PRECOMPILE headers...]) makes the object library doppio_<part> of
# src/<part>/*.cpp (and *.cu with CUDA) and appends it to DOPPIO_PARTS. Its headers, include/doppio/<part>/, are reachable only through a
# per-part include root in the build tree (a link to the folder), so only the part itself
# and the parts that link it can include them.
set(DOPPIO_PARTS)
set(DOPPIO_PART_INCLUDE_ROOT ${PROJECT_BINARY_DIR}/include-parts)

function(doppio_add_part part)
  cmake_parse_arguments(P "" "" "DEPENDS;PRIVATE_DEPENDS;PRECOMPILE" ${ARGN})
  set(target doppio_${part})
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${part}/*.cpp)
  if(DOPPIO_HAVE_CUDA)
    file(GLOB cuda_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${part}/*.cu)
    if(DOPPIO_CUDA_EMULATED)
      # The kernels are host C++ under the emulation.
      set_source_files_properties(${cuda_sources} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS -xc++)
    endif()
    list(APPEND sources ${cuda_sources})
  endif()
  add_library(${target} OBJECT ${sources})

  set(root ${DOPPIO_PART_INCLUDE_ROOT}/${part})
  file(MAKE_DIRECTORY ${root}/doppio)
  if(NOT EXISTS ${root}/doppio/${part})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/doppio/${part} ${root}/doppio/${part} SYMBOLIC)
  endif()
  target_include_directories(${target} PUBLIC ${root})

  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
  target_link_libraries(${target} PUBLIC ${P_DEPENDS} PRIVATE ${P_PRIVATE_DEPENDS})
  doppio_precompile(${target} ${DOPPIO_PCH_COMMON} ${P_PRECOMPILE})
  set(DOPPIO_PARTS ${DOPPIO_PARTS} ${target} PARENT_SCOPE)
endfunction()

# Precompiled headers (DOPPIO_PCH): the schema's generated header alone is 1.5 MB and takes
# about 2 of a layer source's 3.5 seconds to parse; every C++ source of a part parses it.
# Only the host compiler's C++ sources use them (nvcc has no precompiled headers).
set(DOPPIO_PCH_COMMON <algorithm> <cmath> <cstdint> <functional> <map> <memory> <sstream>
    <string> <vector> <glog/logging.h> <doppio/proto/doppio.pb.h>)

function(doppio_precompile target)
  if(DOPPIO_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
