# cmake/hip.cmake — the ROCm HIP device: the kernel sources of backends/cuda
# compiled a second time by Debian's hipcc, into swadiff_core next to the
# host code (and the CUDA objects, when those are built too).
#
#   -DSWADIFF_HIP=AUTO|ON|OFF            AUTO: on when hipcc, libamdhip64 and a
#                                        test compile for every target work
#   -DSWADIFF_HIP_ARCHITECTURES=gfx90a;gfx940   AMD targets (64-lane CDNA)
#   -DSWADIFF_PORTABLE_KERNELS=ON        CUDA build with the portable engine
#
# hipcc is driven directly (one add_custom_command per .cu): CMake 3.25's HIP
# language does not work with Debian's ROCm layout.  The objects carry one
# code object per target; the symbols live in namespace swa_hip and the
# device table is swa_hip_device_ops (backends/cuda/vendor.cuh).
# The kernel benchmark (bench/bench_cuda.cu, `swadiff bench --device cuda`,
# NVIDIA only) is not among them.
#
# Sets SWADIFF_WITH_HIP.  Test: tests/test_hip_build.c (code objects for
# every target, `list devices`, `run --device hip` exits 77 without a GPU).

# The ROCm engine compiled into the CUDA build instead of the tensor-core
# one, so what AMD runs can be validated on an NVIDIA GPU
# (tests/gpu_test_kernels.c); never the default.
option(SWADIFF_PORTABLE_KERNELS "CUDA build: compile the portable (ROCm) attention engine instead of the tensor-core one" OFF)
if(SWADIFF_PORTABLE_KERNELS AND SWADIFF_WITH_CUDA)
  target_compile_definitions(swadiff_core PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:SWADIFF_PORTABLE_KERNELS>)
  message(STATUS "swadiff: CUDA kernels use the portable engine (SWADIFF_PORTABLE_KERNELS)")
endif()

set(SWADIFF_WITH_HIP OFF)
if(SWADIFF_HIP STREQUAL "OFF")
  return()
endif()

find_program(SWADIFF_HIPCC NAMES hipcc PATHS /usr/bin /opt/rocm/bin
             DOC "hipcc used for the ROCm build of the kernels")
find_library(SWADIFF_AMDHIP64 NAMES amdhip64 PATHS /usr/lib/x86_64-linux-gnu /opt/rocm/lib
             DOC "the HIP runtime (libamdhip64)")

set(_swa_hip_missing "")
if(NOT SWADIFF_HIPCC)
  list(APPEND _swa_hip_missing "hipcc (Debian: apt-get install hipcc)")
endif()
if(NOT SWADIFF_AMDHIP64)
  list(APPEND _swa_hip_missing "libamdhip64 (Debian: apt-get install libamdhip64-dev)")
endif()
if(NOT SWADIFF_HIP_ARCHITECTURES)
  list(APPEND _swa_hip_missing "a target list (SWADIFF_HIP_ARCHITECTURES is empty)")
endif()
# hipcc's offload bundler reads /dev/null as the host input of each fatbin:
# where /dev/null is a regular file holding an object, it writes the bundle
# in another format and the kernels cannot be loaded (ci/setup-deps.sh
# repairs /dev/null as root)
execute_process(COMMAND test -c /dev/null RESULT_VARIABLE _swa_devnull_rc)
if(NOT _swa_devnull_rc EQUAL 0)
  list(APPEND _swa_hip_missing
       "/dev/null as the character device (it is not, and hipcc's bundler would read what it holds. As root: rm /dev/null && mknod -m 666 /dev/null c 1 3)")
endif()

set(_swa_hip_arch_flags "")
foreach(arch ${SWADIFF_HIP_ARCHITECTURES})
  if(NOT arch MATCHES "^gfx[0-9a-f]+$")
    message(FATAL_ERROR "SWADIFF_HIP_ARCHITECTURES: '${arch}' is not an AMD target name (expected e.g. gfx90a;gfx940)")
  endif()
  list(APPEND _swa_hip_arch_flags --offload-arch=${arch})
endforeach()
# -Wno-unused-result: the release paths ignore hip* statuses on purpose, as
# the CUDA build does (HIP marks them nodiscard, CUDA does not)
set(_swa_hip_flags -x hip -std=c++17 ${_swa_hip_arch_flags} -fPIC -O2 -Wno-unused-result -DSWADIFF_HIP_BUILD)

# A tiny test compile: hipcc runs, the device libraries (rocm-device-libs)
# are there for every target, and the target is a 64-lane one (vendor.cuh
# refuses others).
if(NOT _swa_hip_missing)
  set(_swa_probe_dir ${PROJECT_BINARY_DIR}/CMakeFiles/swadiff_hip_probe)
  file(MAKE_DIRECTORY ${_swa_probe_dir})
  file(WRITE ${_swa_probe_dir}/probe.cu
       "#include <hip/hip_runtime.h>\n"
       "#if defined(__HIP_DEVICE_COMPILE__) && __AMDGCN_WAVEFRONT_SIZE != 64\n"
       "#error not a 64-lane target\n"
       "#endif\n"
       "__global__ void probe(float *x) { x[threadIdx.x] = exp2f(x[threadIdx.x]) + __shfl_xor(1.0f, 1); }\n"
       "int probe_launch(float *x) { probe<<<1, 64>>>(x); return hipGetLastError() == hipSuccess; }\n")
  execute_process(COMMAND ${SWADIFF_HIPCC} ${_swa_hip_flags} -c probe.cu -o probe.o
                  WORKING_DIRECTORY ${_swa_probe_dir}
                  RESULT_VARIABLE _swa_probe_rc OUTPUT_VARIABLE _swa_probe_out ERROR_VARIABLE _swa_probe_out)
  if(NOT _swa_probe_rc EQUAL 0)
    string(SUBSTRING "${_swa_probe_out}" 0 600 _swa_probe_out)
    list(APPEND _swa_hip_missing
         "a working hipcc for ${SWADIFF_HIP_ARCHITECTURES} (test compile failed; rocm-device-libs installed?): ${_swa_probe_out}")
  endif()
endif()

if(_swa_hip_missing)
  string(REPLACE ";" "; " _swa_hip_why "${_swa_hip_missing}")
  if(SWADIFF_HIP STREQUAL "ON")
    message(FATAL_ERROR "SWADIFF_HIP=ON but the ROCm build cannot work here; missing: ${_swa_hip_why}")
  endif()
  message(STATUS "swadiff: HIP device skipped (SWADIFF_HIP=AUTO); missing: ${_swa_hip_why}")
  return()
endif()
set(SWADIFF_WITH_HIP ON)

# --- one hipcc call per kernel source -----------------------------------------
file(GLOB _swa_hip_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/backends/cuda/*.cu)
# every header a kernel source can include: a change rebuilds the objects
file(GLOB _swa_hip_headers CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/backends/cuda/*.cuh
     ${PROJECT_SOURCE_DIR}/backends/*.h
     ${PROJECT_SOURCE_DIR}/core/*.h)
string(REPLACE ";" "," _swa_hip_targets "${SWADIFF_HIP_ARCHITECTURES}")
set(_swa_hip_obj_dir ${PROJECT_BINARY_DIR}/hip)
file(MAKE_DIRECTORY ${_swa_hip_obj_dir})
set(SWADIFF_HIP_OBJECTS "")
foreach(src ${_swa_hip_sources})
  get_filename_component(name ${src} NAME_WE)
  set(obj ${_swa_hip_obj_dir}/${name}.o)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${SWADIFF_HIPCC} ${_swa_hip_flags} "-DSWADIFF_HIP_TARGETS=\"${_swa_hip_targets}\""
            -I${PROJECT_SOURCE_DIR} -c ${src} -o ${obj}
    DEPENDS ${src} ${_swa_hip_headers}
    COMMENT "hipcc ${name}.cu for ${_swa_hip_targets}"
    VERBATIM)
  list(APPEND SWADIFF_HIP_OBJECTS ${obj})
endforeach()
set_source_files_properties(${SWADIFF_HIP_OBJECTS} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
target_sources(swadiff_core PRIVATE ${SWADIFF_HIP_OBJECTS})
target_link_libraries(swadiff_core PUBLIC ${SWADIFF_AMDHIP64})
target_compile_definitions(swadiff_core PUBLIC SWADIFF_HAVE_HIP=1)
# for tests/test_hip_build.c: where the objects are and which targets they must carry
target_compile_definitions(swadiff_core PUBLIC SWADIFF_HIP_OBJECT_DIR="${_swa_hip_obj_dir}"
                           SWADIFF_HIP_TARGET_LIST="${_swa_hip_targets}")
message(STATUS "swadiff: HIP targets ${SWADIFF_HIP_ARCHITECTURES} (${SWADIFF_HIPCC}, ${SWADIFF_AMDHIP64})")
