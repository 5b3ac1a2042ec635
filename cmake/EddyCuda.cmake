# CUDA is optional: EDDY_HAVE_CUDA is ON when EDDY_CUDA is on and nvcc (on
# PATH or /usr/local/cuda/bin) and the toolkit are found. Included by the
# top-level CMakeLists.txt and by tests/gpu/fw.
set(EDDY_HAVE_CUDA OFF)
if(EDDY_CUDA)
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(EDDY_HAVE_CUDA ON)
    endif()
  endif()
endif()
message(STATUS "Eddy: CUDA backend ${EDDY_HAVE_CUDA}")
