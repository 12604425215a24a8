# mixp-bench --device cuda: without a GPU it must fail at once (exit 1) with
# the session's device error; with one, a quick GEMM run must print its row.
execute_process(COMMAND ${BENCH} --device cuda --only gemm --quick --no-torch
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 240)
if(rc EQUAL 0)
  if(NOT out MATCHES "gemm bf16 [0-9]+x[0-9]+x[0-9]+ +\\| +[0-9.]+ TFLOP/s")
    message(FATAL_ERROR "mixp-bench --device cuda succeeded without a GEMM row:\n${out}")
  endif()
  message(STATUS "GPU present; quick GEMM row printed")
else()
  if(NOT rc EQUAL 1 OR NOT err MATCHES "device 'cuda' is unavailable: .*(no GPU|no CUDA backend plugin)")
    message(FATAL_ERROR "mixp-bench --device cuda failed (rc ${rc}) without the device error:\n${err}\n${out}")
  endif()
  message(STATUS "no GPU: mixp-bench stopped with: ${err}")
endif()
