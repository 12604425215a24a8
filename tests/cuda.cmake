# CUDA runs of the test suite (included from tests/CMakeLists.txt).
#
# cuda_<suite>: every CMocka suite that opens its sessions with mt_session()
# runs a second time with MIXP_TEST_DEVICE=cuda. Without a usable GPU (no
# plugin, driver or device) test_util.h's gate exits with 77 before any test
# runs and CTest reports SKIPPED, at the cost of one process start. The
# test_cuda_* suites open a cpu and a cuda session themselves.
set(MIXP_HAVE_CUDA_PLUGIN OFF)
if(TARGET mixp_cuda)
  set(MIXP_HAVE_CUDA_PLUGIN ON)
endif()

foreach(src ${MIXP_TEST_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  if(MIXP_HAVE_CUDA_PLUGIN)
    add_dependencies(${name} mixp_cuda)  # the plugin is part of what a suite tests
  endif()
  if(name MATCHES "^test_cuda_")
    if(MIXP_HAVE_CUDA_PLUGIN)
      target_compile_definitions(${name} PRIVATE MIXP_TEST_CUDA_PLUGIN="$<TARGET_FILE:mixp_cuda>")
    endif()
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS cuda)
    continue()
  endif()
  file(READ ${src} body)
  if(NOT body MATCHES "mt_session\\(")
    continue()
  endif()
  add_test(NAME cuda_${name} COMMAND ${name})
  set_tests_properties(cuda_${name} PROPERTIES
    ENVIRONMENT "MIXP_TEST_DEVICE=cuda;CMOCKA_MESSAGE_OUTPUT=stdout"
    SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS cuda)
endforeach()

# libmixp.so itself never links CUDA: no cudart/cuBLAS/cuDNN/driver in its
# NEEDED entries (the plugin is dlopen'ed on demand).
add_test(NAME libmixp_needs_no_cuda
  COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:mixp> -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_no_cuda.cmake)

if(MIXP_HAVE_CUDA_PLUGIN)
  # The plugin exports its one versioned entry point and nothing else.
  add_test(NAME cuda_plugin_exports_one_symbol
    COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:mixp_cuda> "-DPATTERN=mixp_backend_plugin_v2$"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_exports.cmake)
endif()

if(TARGET mixp-bench)
  # mixp-bench --device cuda: on a machine without a GPU it must stop at once
  # with the device error (exit 1); with a GPU the quick GEMM run must print
  # its table row.
  add_test(NAME mixp_bench_cuda_device
    COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:mixp-bench>
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cuda_bench_check.cmake)
  set_tests_properties(mixp_bench_cuda_device PROPERTIES TIMEOUT 300 LABELS cuda)
  if(MIXP_HAVE_CUDA_PLUGIN)
    add_dependencies(mixp-bench mixp_cuda)
  endif()
endif()

# The CPU/CUDA parity suites with both sides on the CPU: checks the suites'
# own logic (shapes, calls, comparisons) where no GPU is, so that a GPU run
# is not spent on a broken test. Device-only cases report skipped.
foreach(suite test_cuda_parity test_cuda_parity_ops test_cuda_attention)
  add_test(NAME ${suite}_harness COMMAND ${suite})
  set_tests_properties(${suite}_harness PROPERTIES
    ENVIRONMENT "MIXP_PARITY_HARNESS_CHECK=1;CMOCKA_MESSAGE_OUTPUT=stdout" TIMEOUT 600)
endforeach()

if(MIXP_HAVE_CUDA_PLUGIN)
  # tools/gpu-check.sh's build phase as on the bare GPU machine: oneDNN,
  # CMocka and zlib only from tools/gpu-deps.sh's packages unpacked into a
  # prefix, Ninja, sm_90 (tests/gpu/check_deps_prefix_build.sh). Needs
  # apt-get to reach Debian's registry; skipped without nvcc, ninja or apt-get.
  add_test(NAME gpu_check_builds_against_deps_prefix
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu/check_deps_prefix_build.sh ${PROJECT_SOURCE_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/gpu_deps_prefix)
  set_tests_properties(gpu_check_builds_against_deps_prefix PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1500)
endif()
