# Data-parallel runs of test_dist (included from tests/CMakeLists.txt). The
# suite itself (CTest test_dist, and cuda_test_dist on a GPU) runs as one
# process without MPI; here it runs once more as an MPI singleton and under
# mpirun with 2 and 3 ranks, loopback only. --oversubscribe: 3 ranks on 2
# cores; --allow-run-as-root: CI runs as root (Open MPI refuses otherwise).
if(MIXP_MPI_ENABLED AND MPIEXEC_EXECUTABLE AND TARGET test_dist)
  add_dependencies(test_dist mixp_mpi)
  add_test(NAME test_dist_mpi_np1 COMMAND test_dist)
  # RESOURCE_LOCK mpirun: one Open MPI start at a time (tests/dist.cmake).
  set_tests_properties(test_dist_mpi_np1 PROPERTIES TIMEOUT 300 LABELS "c_suite;dist" RESOURCE_LOCK mpirun
    ENVIRONMENT "${MIXP_TEST_ENV};MIXP_TEST_DIST_TRANSPORT=mpi")
  foreach(np 2 3)
    add_test(NAME test_dist_mpi_np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe ${MPIEXEC_NUMPROC_FLAG} ${np}
              $<TARGET_FILE:test_dist>)
    # Every rank gets one OpenMP thread: the ranks share the machine's cores.
    set_tests_properties(test_dist_mpi_np${np} PROPERTIES TIMEOUT 300 LABELS "c_suite;dist"
      PROCESSORS ${np} RESOURCE_LOCK mpirun ENVIRONMENT "${MIXP_TEST_ENV};MIXP_TEST_THREADS=1;OMP_NUM_THREADS=1")
  endforeach()
endif()

if(TARGET mixp_mpi)
  # The MPI plugin exports its one versioned entry point and nothing else.
  add_test(NAME mpi_plugin_exports_one_symbol
    COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:mixp_mpi> "-DPATTERN=mixp_transport_plugin_v1$"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_exports.cmake)
endif()
