# Finds nvcc and enables CUDA for seedance::trim's CUDA tiers; sets SEEDANCE_WITH_CUDA.
# Included by the top-level project (CUDA must be enabled in the highest directory whose
# targets link CUDA objects: the runtime links seedance_trim) and by src/trim when built alone.
if(SEEDANCE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
endif()
if(SEEDANCE_CUDA AND CMAKE_CUDA_COMPILER)
  # Default: sm_80 and sm_90 code and sm_90 PTX for newer GPUs (-DCMAKE_CUDA_ARCHITECTURES=...
  # to change). The runtime is linked statically and the driver reached through the runtime's
  # entry-point lookup, so binaries start (and say why they cannot run) without a driver.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 90-virtual)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
  set(SEEDANCE_WITH_CUDA ON)
  message(STATUS "seedance::trim: CUDA tiers enabled (${CMAKE_CUDA_COMPILER}, ${CMAKE_CUDA_ARCHITECTURES})")
else()
  set(SEEDANCE_WITH_CUDA OFF)
  message(STATUS "seedance::trim: CUDA tiers disabled (nvcc not found or SEEDANCE_CUDA=OFF)")
endif()

