# Tests of the Python binding (one CTest entry per pytest file, the notebook,
# pip install) and the cross-language training run. Included from
# tests/CMakeLists.txt; the Go and Java bindings register their own tests in
# bindings/go and bindings/java. A missing toolchain makes the test report
# SKIPPED (exit 77), never pass.
set(MIXP_PY_TEST_DIR ${PROJECT_SOURCE_DIR}/bindings/python/tests)
file(GLOB MIXP_PY_TEST_FILES CONFIGURE_DEPENDS ${MIXP_PY_TEST_DIR}/test_*.py)

if(TARGET mixp_python)
  set(MIXP_PY_ENV "PYTHONPATH=${MIXP_PYTHON_PATH}" "MIXP_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
      "MIXP_BUILD_DIR=${PROJECT_BINARY_DIR}" "OMP_NUM_THREADS=2")
  set(MIXP_PY_RUN ${MIXP_PYTHON_EXECUTABLE} ${MIXP_PY_TEST_DIR}/run_pytest.py)
else()
  # No SWIG or no Python headers: every Python test says so and skips.
  set(MIXP_PY_ENV "")
  set(MIXP_PY_RUN ${MIXP_PY_TEST_DIR}/skip.sh "the Python binding was not built (needs swig and python3-dev)")
endif()

foreach(file ${MIXP_PY_TEST_FILES})
  get_filename_component(name ${file} NAME_WE)
  string(REGEX REPLACE "^test_" "" name ${name})
  add_test(NAME python_${name} COMMAND ${MIXP_PY_RUN} ${file})
  set_tests_properties(python_${name} PROPERTIES ENVIRONMENT "${MIXP_PY_ENV}"
    SKIP_RETURN_CODE 77 SKIP_REGULAR_EXPRESSION "SKIPPED:" TIMEOUT 300)
endforeach()

# mixp.dist over MPI: mpi_dist.py under mpirun with 2 ranks, loopback only
# (the single-process transport is covered by test_dist.py above).
# --oversubscribe: 2 ranks may exceed the cores; --allow-run-as-root: CI runs
# as root (Open MPI refuses otherwise).
if(TARGET mixp_python AND MIXP_MPI_ENABLED AND MPIEXEC_EXECUTABLE)
  add_test(NAME python_dist_mpi_2ranks
    COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe ${MPIEXEC_NUMPROC_FLAG} 2
            ${MIXP_PYTHON_EXECUTABLE} ${MIXP_PY_TEST_DIR}/mpi_dist.py)
  # Every rank gets one OpenMP thread: the ranks share the machine's cores.
  set_tests_properties(python_dist_mpi_2ranks PROPERTIES ENVIRONMENT "${MIXP_PY_ENV};OMP_NUM_THREADS=1"
    PROCESSORS 2 SKIP_RETURN_CODE 77 SKIP_REGULAR_EXPRESSION "SKIPPED:" TIMEOUT 300 LABELS "dist"
    RESOURCE_LOCK mpirun)  # one Open MPI start at a time (tests/dist.cmake)
endif()

if(EXISTS ${PROJECT_SOURCE_DIR}/tests/cross_language/CMakeLists.txt)
  add_subdirectory(${PROJECT_SOURCE_DIR}/tests/cross_language ${PROJECT_BINARY_DIR}/tests/cross_language)
endif()

# pip install ./bindings/python against this build's library (about a
# minute: SWIG and the wrapper's compile run again inside pip).
if(TARGET mixp_python AND NOT MIXP_SANITIZE)
  add_test(NAME python_pip_install
    COMMAND ${MIXP_PY_TEST_DIR}/pip_install.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${MIXP_PYTHON_EXECUTABLE})
else()
  add_test(NAME python_pip_install
    COMMAND ${MIXP_PY_TEST_DIR}/skip.sh "the Python binding was not built, or a sanitizer build")
endif()
set_tests_properties(python_pip_install PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)

# The wheel: pip wheel (libmixp bundled), auditwheel repair (oneDNN, libgomp,
# libOpenCL vendored), auditwheel show names only manylinux libraries, and
# the wheel trains from a fresh virtual environment (about 90 s on 2 cores).
if(TARGET mixp_python AND NOT MIXP_SANITIZE)
  add_test(NAME python_wheel_manylinux
    COMMAND ${MIXP_PY_TEST_DIR}/wheel.sh ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/wheel
            ${MIXP_PYTHON_EXECUTABLE})
  set_tests_properties(python_wheel_manylinux PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1200
                       FIXTURES_SETUP mixp_cpu_wheel)
endif()

# The GPU for pip: the mixp-cuda13 wheel (bindings/python-cuda) made from
# this build's plugin, inspected (links, RUNPATH into NVIDIA's wheels),
# repaired, and installed with the CPU wheel above and NVIDIA's wheels from
# PyPI into a fresh environment (downloads ~1.3 GB; 2-4 minutes).
if(TARGET mixp_python AND TARGET mixp_cuda AND NOT MIXP_SANITIZE)
  add_test(NAME python_cuda_wheel
    COMMAND ${MIXP_PY_TEST_DIR}/cuda_wheel.sh ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/cuda_wheel
            ${MIXP_PYTHON_EXECUTABLE} $<TARGET_FILE:mixp_cuda> ${CMAKE_CURRENT_BINARY_DIR}/wheel/repaired)
  set_tests_properties(python_cuda_wheel PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1200
                       FIXTURES_REQUIRED mixp_cpu_wheel)
endif()

# The bindings' native libraries export their language's entry points only.
foreach(pair "mixp_go|_wrap_" "mixp_jni|Java_" "mixp_python|PyInit_")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 target)
  list(GET pair 1 pattern)
  if(TARGET ${target})
    add_test(NAME ${target}_exports_only_entry_points
             COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:${target}> -DPATTERN=${pattern}
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_exports.cmake)
  endif()
endforeach()

# pip install ./bindings/python without an installed mixp builds libmixp from
# this tree: with nvcc present it must build the CUDA plugin too and install
# it inside the package beside libmixp (configure only: the build is the
# same as this tree's).
if(TARGET mixp_python AND TARGET mixp_cuda AND NOT MIXP_SANITIZE)
  add_test(NAME python_package_ships_cuda_plugin
    COMMAND ${MIXP_PY_TEST_DIR}/bundled_cuda_plugin.sh ${PROJECT_SOURCE_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/pip_bundle_configure ${MIXP_PYTHON_EXECUTABLE})
  set_tests_properties(python_package_ships_cuda_plugin PROPERTIES TIMEOUT 300)
endif()
