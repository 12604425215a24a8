# Data-parallel training (included from tests/CMakeLists.txt): mixp-train
# --dist and docs/distributed.md's example, run under `mpirun -np N` when
# the MPI transport plugin was built (MIXP_MPI_ENABLED, top-level
# CMakeLists.txt) and FindMPI found the launcher. --allow-run-as-root: CI
# runs as root, which Open MPI refuses by default; --oversubscribe: 3 ranks
# on a 2-core machine (Open MPI otherwise allows one rank per core). Every
# rank runs --threads 1. Together these tests take under 20 s on two cores.
if(NOT TARGET mixp-train)
  return()
endif()
find_program(MIXP_DIST_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)

# --dist single: one rank without MPI or mpirun; it is the plain run bit
# for bit (same final checkpoint file, same state line).
add_test(NAME mixp_train_dist_single
  COMMAND sh -c "t=\"$0\"; set -- --data synthetic-images:1x8x8 --hidden 16 --limit-train 500 --limit-test 200 --epochs 2 --batch 64 --threads 1 --seed 3; \"$t\" \"$@\" --save plain.safetensors >plain.txt 2>&1 || { cat plain.txt; exit 1; }; \"$t\" \"$@\" --dist single --save single.safetensors >single.txt 2>&1 || { cat single.txt; exit 1; }; cat single.txt; grep -q '^dist: single process (no MPI), rank 0 of 1$' single.txt || exit 1; grep -q 'batch 64 per rank x 1 = 64' single.txt || exit 1; test \"$(grep '^state:' plain.txt)\" = \"$(grep '^state:' single.txt)\" || exit 1; cmp plain.safetensors single.safetensors"
          $<TARGET_FILE:mixp-train>)
# Its own folder: the tests run in parallel and write files of the same names.
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_dist_single)
set_tests_properties(mixp_train_dist_single PROPERTIES
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_dist_single TIMEOUT 60)

# --dist mpi where there is no MPI plugin: exit 1 with a message that names
# MPI, the missing libmixp_mpi.so and --dist single. (libmixp.so is copied
# to a directory without the plugin and found there through LD_LIBRARY_PATH,
# which precedes mixp-train's RUNPATH; MIXP_MPI_PLUGIN points nowhere.)
add_test(NAME mixp_train_dist_without_mpi_plugin
  COMMAND sh -c "rm -rf no_mpi_plugin && mkdir no_mpi_plugin && cp \"$1\" no_mpi_plugin/$2 || exit 1; MIXP_MPI_PLUGIN=/nonexistent LD_LIBRARY_PATH=$PWD/no_mpi_plugin \"$0\" --dist --data synthetic --epochs 1 >out.txt 2>err.txt; st=$?; cat err.txt; [ $st -eq 1 ] || { echo \"exit $st, expected 1\"; exit 1; }; grep -q 'mixp-train: --dist mpi (needs Open MPI and libmixp_mpi.so; --dist single needs neither): mixp_dist_create: no MPI transport plugin (libmixp_mpi.so)' err.txt && grep -q 'Tried: /nonexistent (no such file)' err.txt && ! grep -q '^epoch' out.txt"
          $<TARGET_FILE:mixp-train> $<TARGET_FILE:mixp> $<TARGET_SONAME_FILE_NAME:mixp>)
# Its own folder: the tests run in parallel and write files of the same names.
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_dist_without_mpi_plugin)
set_tests_properties(mixp_train_dist_without_mpi_plugin PROPERTIES
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_dist_without_mpi_plugin TIMEOUT 60)

# Flags: --dist takes mpi or single (or nothing: mpi, also before another
# flag); --compare and --compare-numerics are single-process: exit 2.
add_test(NAME mixp_train_dist_flags
  COMMAND sh -c "t=\"$0\"; for args in '--dist tcp' '--dist --compare' '--dist single --compare-numerics' '--compare --dist=mpi'; do \"$t\" $args >/dev/null 2>err.txt; st=$?; [ $st -eq 2 ] || { echo \"$args: exit $st, expected 2\"; exit 1; }; done; grep -q 'takes no --compare' err.txt || exit 1; \"$t\" --dist tcp 2>&1 | grep -q \"unknown value 'tcp' (known: mpi, single)\" || exit 1; \"$t\" --dist --help | grep -q '^  --dist \\[mpi|single\\]'"
          $<TARGET_FILE:mixp-train>)
# Its own folder: the tests run in parallel and write files of the same names.
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_dist_flags)
set_tests_properties(mixp_train_dist_flags PROPERTIES
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_dist_flags TIMEOUT 60)

if(NOT MIXP_MPI_ENABLED OR NOT MPIEXEC_EXECUTABLE)
  message(STATUS "mixp: no MPI plugin or no mpiexec: the mpirun tests of tests/dist.cmake are not added")
  return()
endif()
set(MIXP_MPIRUN ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe)
# Every test that starts Open MPI holds RESOURCE_LOCK mpirun: two launches at
# once can race creating Open MPI's session directory ("ORTE_ERROR_LOG ...
# session_dir.c ... File exists"; seen under ctest -j2).
# mixp-train and the example load libmixp_mpi.so at run time: build it with them.
if(TARGET mixp_mpi)
  add_dependencies(mixp-train mixp_mpi)
  if(TARGET mixp-example-dist)
    add_dependencies(mixp-example-dist mixp_mpi)
  endif()
endif()

# The same global batch (96) on 1, 2 and 3 ranks: the same losses, step by
# step, and test accuracies, in fp32 and O2 bf16 (tolerances and why:
# tests/dist/ranks_agree.py; one rank must equal one process bit for bit).
if(MIXP_DIST_PYTHON)
  foreach(amp O0 O2bf16)
    add_test(NAME mixp_train_dist_ranks_agree_${amp}
      COMMAND ${MIXP_DIST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/dist/ranks_agree.py ${MPIEXEC_EXECUTABLE}
              $<TARGET_FILE:mixp-train> ${amp} ${CMAKE_CURRENT_BINARY_DIR}/dist_agree_${amp})
    set_tests_properties(mixp_train_dist_ranks_agree_${amp} PROPERTIES TIMEOUT 300 RESOURCE_LOCK mpirun)
  endforeach()
endif()

# 2 ranks, stopped after epoch 1 and resumed == uninterrupted, bit for bit
# (tests/dist/train_resume_dist.cmake).
foreach(model mlp cnn)
  add_test(NAME mixp_train_dist_resume_exact_${model}
    COMMAND ${CMAKE_COMMAND} -DMPIEXEC=${MPIEXEC_EXECUTABLE} -DTRAIN=$<TARGET_FILE:mixp-train> -DMODEL=${model}
            -DWORK=${CMAKE_CURRENT_BINARY_DIR}/dist_resume_${model}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/dist/train_resume_dist.cmake)
  set_tests_properties(mixp_train_dist_resume_exact_${model} PROPERTIES TIMEOUT 300 RESOURCE_LOCK mpirun)
endforeach()

# docs/distributed.md's example on 2 ranks: fp16 with overflowing first
# steps skipped by both ranks together, a checkpoint by rank 0, and
# parameters that end bit-identical on both ranks.
if(TARGET mixp-example-dist)
  add_test(NAME dist_example_two_ranks
    COMMAND ${MIXP_MPIRUN} -np 2 -x OMP_NUM_THREADS=1 $<TARGET_FILE:mixp-example-dist> cpu
            ${CMAKE_CURRENT_BINARY_DIR}/dist_example.safetensors)
  set_tests_properties(dist_example_two_ranks PROPERTIES
    TIMEOUT 120
    RESOURCE_LOCK mpirun
    ENVIRONMENT "OMP_NUM_THREADS=1"
    PASS_REGULAR_EXPRESSION "MPI \\([^\n]*\\), rank 0 of 2\nepoch 1: mean loss [0-9.]+ over 2000 samples, loss scale [0-9.e+]+, skipped steps so far [1-9][0-9]*\n.*epoch 3: mean loss 0\\.[0-9]+ over 2000 samples.*saved [^\n]*dist_example.safetensors\n2 ranks: parameters bit-identical on every rank\n"
    FAIL_REGULAR_EXPRESSION "DIFFER|failed")
endif()
