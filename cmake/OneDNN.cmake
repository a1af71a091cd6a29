# DOPPIO_ONEDNN: AUTO builds the ONEDNN engine (the CPU's default) when oneDNN is found, ON
# requires it, OFF leaves it out. Debian's oneDNN runs on OpenMP, whose thread count Doppio
# sets per call (src/device/onednn.cpp), so the part using it links OpenMP too.
doppio_check_switch(DOPPIO_ONEDNN "AUTO|ON|OFF")
set(DOPPIO_HAVE_ONEDNN OFF)
if(NOT DOPPIO_ONEDNN STREQUAL "OFF")
  find_package(OneDNN QUIET)
  find_package(OpenMP QUIET COMPONENTS CXX)
  if(OneDNN_FOUND AND OpenMP_CXX_FOUND)
    set(DOPPIO_HAVE_ONEDNN ON)
  elseif(DOPPIO_ONEDNN STREQUAL "ON")
    message(FATAL_ERROR "DOPPIO_ONEDNN=ON but oneDNN (dnnl.hpp, libdnnl) or OpenMP was not "
                        "found: apt-get install libdnnl-dev")
  endif()
endif()

function(doppio_configure_onednn target)
  if(DOPPIO_HAVE_ONEDNN)
    target_compile_definitions(${target} PUBLIC DOPPIO_WITH_ONEDNN)
    target_include_directories(${target} PUBLIC ${OneDNN_INCLUDE_DIR})
    target_link_libraries(${target} PUBLIC ${OneDNN_LIBRARY} PRIVATE OpenMP::OpenMP_CXX)
  endif()
endfunction()
