# Shared by the exact-resume scripts (state/train_resume.cmake and
# dist/train_resume_dist.cmake): running the trainer and comparing a resumed
# run with the uninterrupted one.

# run_train(NAME COMMAND...): runs COMMAND (at most 200 s), fails the test on
# a non-zero exit, and sets NAME_out (its output) and NAME_state (its
# "state:" line: last loss and accuracy as hex floats) in the caller's scope.
function(run_train name)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 200)
  message("---- ${name}: ${ARGN}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} failed (exit ${rc})")
  endif()
  string(REGEX MATCH "state: [^\n]*" line "${out}")
  set(${name}_state "${line}" PARENT_SCOPE)
  set(${name}_out "${out}" PARENT_SCOPE)
endfunction()

# expect_same_run(WHAT STRAIGHT_STATE RESUMED_STATE STRAIGHT_FILE RESUMED_FILE):
# the two runs printed the same state line and saved identical checkpoints.
function(expect_same_run what straight resumed straight_file resumed_file)
  if(NOT straight OR NOT straight STREQUAL resumed)
    message(FATAL_ERROR "resumed ${what} differs:\n  straight: ${straight}\n  resumed:  ${resumed}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${straight_file} ${resumed_file} RESULT_VARIABLE same)
  if(NOT same EQUAL 0)
    message(FATAL_ERROR "the final checkpoints of the straight and the resumed ${what} differ")
  endif()
endfunction()
