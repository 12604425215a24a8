# Training-state files beyond the CMocka suites (included from
# tests/CMakeLists.txt): crash safety under SIGKILL, interoperability with
# the Python safetensors package, mixp-train --save/--resume, and bounded
# fuzzing of the file readers.

# SIGKILL during saves, 25 times: the previous file always loads complete.
add_executable(kill_during_save ${CMAKE_CURRENT_SOURCE_DIR}/state/kill_during_save.c)
target_link_libraries(kill_during_save PRIVATE mixp)
target_compile_options(kill_during_save PRIVATE -Wall -Wextra)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/state_kill)
add_test(NAME state_kill_during_save
  COMMAND kill_during_save ${CMAKE_CURRENT_BINARY_DIR}/state_kill)
set_tests_properties(state_kill_during_save PROPERTIES TIMEOUT 300)

# mixp checkpoints read by Python's safetensors, Python files read by mixp.
add_executable(state_py_helper ${CMAKE_CURRENT_SOURCE_DIR}/state/state_py_helper.c)
target_link_libraries(state_py_helper PRIVATE mixp)
target_compile_options(state_py_helper PRIVATE -Wall -Wextra)
find_program(MIXP_SYSTEM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(MIXP_SYSTEM_PYTHON)
  add_test(NAME state_safetensors_python
    COMMAND ${MIXP_SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/state/test_safetensors_python.py
            $<TARGET_FILE:state_py_helper> ${CMAKE_CURRENT_BINARY_DIR}/state_py)
else()
  add_test(NAME state_safetensors_python
    COMMAND sh -c "echo 'SKIPPED: /usr/bin/python3 not found'; exit 77")
endif()
set_tests_properties(state_safetensors_python PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)

# mixp-train: N steps, save, resume for the rest == the whole run straight,
# bit for bit, under O0, O2 f16 with a dynamic loss scale, and O2 bf16
# without masters (bf16 moments, stochastic rounding).
if(TARGET mixp-train)
  foreach(amp O0 O2 O2lowmem)
    add_test(NAME mixp_train_resume_exact_${amp}
      COMMAND ${CMAKE_COMMAND} -DTRAIN=$<TARGET_FILE:mixp-train> -DAMP=${amp}
              -DWORK=${CMAKE_CURRENT_BINARY_DIR}/train_resume_${amp}
              -P ${CMAKE_CURRENT_SOURCE_DIR}/state/train_resume.cmake)
    set_tests_properties(mixp_train_resume_exact_${amp} PROPERTIES TIMEOUT 300)
  endforeach()
  # Its checkpoints load strictly as weights; forged counters are refused.
  if(MIXP_SYSTEM_PYTHON)
    add_test(NAME mixp_train_checkpoint_weights_and_forgeries
      COMMAND ${MIXP_SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/state/test_train_checkpoint_python.py
              $<TARGET_FILE:mixp-train> $<TARGET_FILE:state_py_helper> ${CMAKE_CURRENT_BINARY_DIR}/train_ckpt_py)
    set_tests_properties(mixp_train_checkpoint_weights_and_forgeries PROPERTIES TIMEOUT 300)
  endif()
  # Flag misuse exits 2 with the usage; a missing checkpoint exits 1 naming it.
  add_test(NAME mixp_train_state_flag_misuse
    COMMAND sh -c "t=\"$0\"; \"$t\" --save-every 5 >/dev/null 2>&1; [ $? -eq 2 ] || exit 1; \"$t\" --save-every 5 2>&1 | grep -q 'needs --save' || exit 1; \"$t\" --accum-steps 2 --max-steps 3 2>&1 | grep -q 'multiple of --accum-steps' || exit 1; \"$t\" --compare --save x 2>&1 | grep -q 'takes no --save' || exit 1; \"$t\" --data synthetic --resume /nonexistent/run.safetensors >/dev/null 2>err.txt; [ $? -eq 1 ] && grep -q \"cannot open '/nonexistent/run.safetensors'\" err.txt"
            $<TARGET_FILE:mixp-train>)
  # Its own folder: other tests write an err.txt too, at the same time.
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_state_flag_misuse)
  set_tests_properties(mixp_train_state_flag_misuse PROPERTIES
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_state_flag_misuse)
endif()

# libFuzzer targets of the checkpoint and IDX readers, 25 s each (SKIPPED
# without clang-14's libFuzzer). Longer runs: fuzz/README.md.
add_test(NAME fuzz_readers_bounded
  COMMAND ${PROJECT_SOURCE_DIR}/fuzz/run_fuzz.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz 25)
set_tests_properties(fuzz_readers_bounded PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)

# The API-sequence fuzzer (fuzz/fuzz_api.cpp: sequences of public calls with
# NULLs, released handles and absurd numbers; oracles: no crash or sanitizer
# report, messages that begin with the called function, outputs untouched on
# failure, never MIXP_ERR_INTERNAL), 60 s, and the CMocka suites against the
# same library build (clang, ASan + UBSan, with the sanitizer options the
# suites need, set by that project's CTest). Building the instrumented
# library takes a few minutes on 2 cores; SKIPPED without clang-14's
# libFuzzer.
add_test(NAME sanitizers_c_suites_and_api_fuzz
  COMMAND ${PROJECT_SOURCE_DIR}/fuzz/run_fuzz.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz-api 60 c-suites api)
set_tests_properties(sanitizers_c_suites_and_api_fuzz PROPERTIES TIMEOUT 2400 SKIP_RETURN_CODE 77)
