# Training logs (included from tests/CMakeLists.txt): the TensorBoard event
# writer against known answers, mixp-train's --logdir/--csv output read back
# by TensorBoard's own loader and an independent CRC-checking reader, and
# tools/plot_runs.py on that output. Together they run in a few seconds.

add_executable(test_tfevents ${CMAKE_CURRENT_SOURCE_DIR}/logs/test_tfevents.c
                             ${PROJECT_SOURCE_DIR}/tools/tfevents.c)
target_include_directories(test_tfevents PRIVATE ${CMOCKA_INCLUDE_DIR} ${PROJECT_SOURCE_DIR}/tools)
target_link_libraries(test_tfevents PRIVATE ${CMOCKA_LIBRARY})
target_compile_options(test_tfevents PRIVATE -Wall -Wextra)
add_test(NAME test_tfevents COMMAND test_tfevents)
set_tests_properties(test_tfevents PROPERTIES ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=stdout")

if(NOT TARGET mixp-train)
  return()
endif()

set(MIXP_PYTHON /usr/bin/python3)
set(MIXP_LOGS_DIR ${CMAKE_CURRENT_BINARY_DIR}/train-logs)

# O0, O1 and O2 (f16, dynamic loss scale) on tiny synthetic data: 2 epochs
# of 16 steps, the loss logged every 2 steps. The initial scale of 2^32
# makes the first fp16 steps overflow, so the logs hold skipped steps and a
# falling scale. A fixture: the checks below read its output.
add_test(NAME train_logs_compare_run
  COMMAND sh -c "rm -rf \"$1\" && mkdir -p \"$1\" && exec \"$0\" --data synthetic --compare --amp O2 --amp-dtype f16 --epochs 2 --limit-train 1024 --limit-test 256 --hidden 32 --batch 64 --threads 2 --seed 1 --log-every 2 --init-scale 4294967296 --logdir \"$1/tb\" --csv \"$1/train.csv\""
          $<TARGET_FILE:mixp-train> ${MIXP_LOGS_DIR}/compare)
set_tests_properties(train_logs_compare_run PROPERTIES
  TIMEOUT 120 FIXTURES_SETUP train_logs FAIL_REGULAR_EXPRESSION "failed:")

add_test(NAME train_logs_tensorboard_reader
  COMMAND ${MIXP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/logs/check_tfevents.py
          --logdir ${MIXP_LOGS_DIR}/compare/tb --csv ${MIXP_LOGS_DIR}/compare/train.csv
          --runs O0,O1,O2 --subdirs --log-every 2 --steps-per-epoch 16 --epochs 2
          --dynamic-scale-from 4294967296)
set_tests_properties(train_logs_tensorboard_reader PROPERTIES
  TIMEOUT 120 FIXTURES_REQUIRED train_logs SKIP_RETURN_CODE 77)

add_test(NAME plot_runs_png
  COMMAND ${MIXP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/logs/check_plots.py
          ${PROJECT_SOURCE_DIR}/tools/plot_runs.py ${MIXP_LOGS_DIR}/compare/tb
          ${MIXP_LOGS_DIR}/compare/train.csv ${MIXP_LOGS_DIR}/plots)
set_tests_properties(plot_runs_png PROPERTIES
  TIMEOUT 120 FIXTURES_REQUIRED train_logs SKIP_RETURN_CODE 77)

# Without --compare the events go straight into --logdir (one run, named by
# its level in the CSV); one epoch of 8 steps, the loss at every 3rd step.
add_test(NAME train_logs_single_run
  COMMAND sh -c "rm -rf \"$1\" && mkdir -p \"$1\" && \"$0\" --data synthetic --amp O1 --epochs 1 --limit-train 512 --limit-test 128 --hidden 16 --batch 64 --threads 2 --log-every 3 --logdir \"$1/tb\" --csv \"$1/train.csv\" && exec \"$2\" \"$3\" --logdir \"$1/tb\" --csv \"$1/train.csv\" --runs O1 --log-every 3 --steps-per-epoch 8 --epochs 1"
          $<TARGET_FILE:mixp-train> ${MIXP_LOGS_DIR}/single ${MIXP_PYTHON}
          ${CMAKE_CURRENT_SOURCE_DIR}/logs/check_tfevents.py)
set_tests_properties(train_logs_single_run PROPERTIES
  TIMEOUT 120 SKIP_RETURN_CODE 77 FAIL_REGULAR_EXPRESSION "failed:")

# A log directory that cannot be created, or a CSV that cannot be written,
# fails at once (exit 1, naming the path); --log-every 0 is a usage error.
add_test(NAME train_logs_bad_paths
  COMMAND sh -c "d=\"$1\"; rm -rf \"$d\"; mkdir -p \"$d\" && : > \"$d/file\" || exit 1; out=$(\"$0\" --data synthetic --epochs 1 --limit-train 64 --hidden 8 --logdir \"$d/file/tb\" 2>&1); st=$?; [ $st -eq 1 ] && echo \"$out\" | grep -q \"cannot create '$d/file/tb'\" || { echo \"logdir: exit $st: $out\"; exit 1; }; out=$(\"$0\" --data synthetic --epochs 1 --limit-train 64 --hidden 8 --csv \"$d/no-dir/x.csv\" 2>&1); st=$?; [ $st -eq 1 ] && echo \"$out\" | grep -q \"cannot create '$d/no-dir/x.csv'\" || { echo \"csv: exit $st: $out\"; exit 1; }; \"$0\" --log-every 0 >/dev/null 2>&1; st=$?; [ $st -eq 2 ] || { echo \"--log-every 0: exit $st\"; exit 1; }; echo ok"
          $<TARGET_FILE:mixp-train> ${MIXP_LOGS_DIR}/bad)
set_tests_properties(train_logs_bad_paths PROPERTIES TIMEOUT 60 PASS_REGULAR_EXPRESSION "^ok")
