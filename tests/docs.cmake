# Documentation (included from tests/CMakeLists.txt): the Doxygen reference
# builds without a single warning, the guides' links resolve and their C
# code is quoted from programs that are compiled and run here.

# The `docs` target (top-level CMakeLists.txt) runs Doxygen with
# WARN_AS_ERROR: an undocumented declaration or parameter fails it.
find_package(Doxygen QUIET)
if(DOXYGEN_FOUND)
  add_test(NAME docs_build COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target docs)
  set_tests_properties(docs_build PROPERTIES TIMEOUT 300 FAIL_REGULAR_EXPRESSION "[Ww]arning:")
else()
  add_test(NAME docs_build
    COMMAND sh -c "echo 'SKIP: doxygen is not installed (apt-get install doxygen)'; exit 77")
  set_tests_properties(docs_build PROPERTIES SKIP_RETURN_CODE 77)
endif()

add_test(NAME docs_links_and_quotes
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_docs.py ${PROJECT_SOURCE_DIR})

# The programs the guides quote (built in tools/CMakeLists.txt).
if(TARGET mixp-example-amp)
  add_test(NAME example_amp_train COMMAND mixp-example-amp)
  set_tests_properties(example_amp_train PROPERTIES
    TIMEOUT 120
    ENVIRONMENT "OMP_NUM_THREADS=2"
    PASS_REGULAR_EXPRESSION "epoch 3: mean loss [0-9.]+, loss scale [0-9.e+]+, skipped steps so far [0-9]+.*test accuracy (0\\.9[0-9]*|1\\.0+) on 1000 samples")
endif()
if(TARGET mixp-example-amp-recipes)
  add_test(NAME example_amp_recipes COMMAND mixp-example-amp-recipes)
  set_tests_properties(example_amp_recipes PROPERTIES
    TIMEOUT 120
    ENVIRONMENT "OMP_NUM_THREADS=2"
    PASS_REGULAR_EXPRESSION "non-finite values in the forward pass of op 'log'.*op calls recorded on cpu.*all recipes ran")
endif()
if(TARGET mixp-example-dlopen)
  add_test(NAME example_dlopen_host COMMAND mixp-example-dlopen $<TARGET_SONAME_FILE:mixp>)
  set_tests_properties(example_dlopen_host PROPERTIES
    TIMEOUT 60
    PASS_REGULAR_EXPRESSION "loaded libmixp [0-9]+\\.[0-9]+\\.[0-9]+\ndevice \"tpu\": status -1: mixp_session_create: [^\n]*tpu[^\n]*\nsum of 1..4 = 10\n")
endif()
