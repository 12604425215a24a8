# End-to-end runs of the tools (included from tests/CMakeLists.txt). Kept
# short: together they run in well under a minute on two cores.
if(NOT TARGET mixp-train)
  return()
endif()

# Synthetic data needs nothing installed; the class prototypes are easy to
# separate, so even a short run must reach high accuracy.
add_test(NAME mixp_train_synthetic_smoke
  COMMAND mixp-train --data synthetic --epochs 2 --limit-train 4096 --limit-test 1000
          --hidden 64 --batch 64 --threads 2 --seed 3)
set_tests_properties(mixp_train_synthetic_smoke PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "final: test_accuracy=(0\\.9[0-9]*|1\\.0*) epochs=2 time=[0-9.]+s samples_per_sec=[0-9]+"
  FAIL_REGULAR_EXPRESSION "failed:")

# A bad flag prints the usage and exits with status 2 exactly.
add_test(NAME mixp_train_bad_flag
  COMMAND sh -c "\"$0\" --no-such-flag 2>&1 | grep -q '^usage: mixp-train' && { \"$0\" --no-such-flag >/dev/null 2>&1; test $? -eq 2; }"
          $<TARGET_FILE:mixp-train>)
add_test(NAME mixp_train_help COMMAND mixp-train --help)
set_tests_properties(mixp_train_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: mixp-train")

# A missing dataset directory falls back to synthetic data and says how to
# install the real one.
add_test(NAME mixp_train_missing_dataset_fallback
  COMMAND mixp-train --data fashion-mnist --data-dir ${CMAKE_CURRENT_BINARY_DIR}/no-such-dir
          --epochs 1 --limit-train 512 --limit-test 200 --hidden 32 --threads 2)
set_tests_properties(mixp_train_missing_dataset_fallback PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "apt-get install dataset-fashion-mnist.*final: test_accuracy="
  FAIL_REGULAR_EXPRESSION "failed:")

# The real data, when the Debian package is installed.
set(MIXP_FASHION_DIR /usr/share/datasets/fashion-mnist)
if(EXISTS ${MIXP_FASHION_DIR}/train-images-idx3-ubyte.gz OR EXISTS ${MIXP_FASHION_DIR}/train-images-idx3-ubyte)
  add_test(NAME mixp_train_fashion_mnist_smoke
    COMMAND mixp-train --data fashion-mnist --epochs 1 --limit-train 6000 --limit-test 2000
            --hidden 64 --threads 2)
  set_tests_properties(mixp_train_fashion_mnist_smoke PROPERTIES
    TIMEOUT 120
    PASS_REGULAR_EXPRESSION "data: fashion-mnist.*final: test_accuracy=0\\.[6-9][0-9]* epochs=1"
    FAIL_REGULAR_EXPRESSION "failed:")
endif()

# The README's quick start compiles (tools/CMakeLists.txt) and trains.
if(TARGET mixp-quickstart)
  add_test(NAME quickstart_example COMMAND mixp-quickstart)
  set_tests_properties(quickstart_example PROPERTIES
    TIMEOUT 120
    ENVIRONMENT "OMP_NUM_THREADS=2"
    PASS_REGULAR_EXPRESSION "epoch 3: mean loss [0-9.]+")
endif()
