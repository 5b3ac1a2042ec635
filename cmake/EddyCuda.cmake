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
    # Architectures of framework/cuda/: CMAKE_CUDA_ARCHITECTURES or
    # EDDY_CUDA_ARCHS when given (tests/gpu/check.sh passes "native"), else
    # Ampere and Hopper (set before enable_language, which picks a default).
    if(EDDY_CUDA_ARCHS)
      set(CMAKE_CUDA_ARCHITECTURES "${EDDY_CUDA_ARCHS}")
    elseif(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES "80;90")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(EDDY_HAVE_CUDA ON)
    endif()
  endif()
endif()
message(STATUS "Eddy: CUDA backend ${EDDY_HAVE_CUDA}")
if(EDDY_HAVE_CUDA)
  message(STATUS "Eddy: CUDA architectures ${CMAKE_CUDA_ARCHITECTURES}")
endif()
