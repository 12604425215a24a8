# The CPU kernels' versions (baseline, AVX2, AVX-512: backend/cpu/simd.hpp)
# give bit-identical results: the same O2 bf16 and O1 f16 training runs
# under MIXP_CPU_KERNELS=baseline, avx2 and avx512 must print the same
# "state:" line (last loss and accuracy as hex floats) and save identical
# checkpoints (every weight, master and optimizer moment). On a CPU without
# AVX-512 (or AVX2) the higher pins run the best version it has.
#   cmake -DTRAIN=mixp-train -DWORK=dir -P kernel_isa_parity.cmake
file(MAKE_DIRECTORY ${WORK})
foreach(amp "O2;bf16" "O1;f16")
  list(GET amp 0 level)
  list(GET amp 1 dtype)
  set(first "")
  foreach(isa baseline avx2 avx512)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env MIXP_CPU_KERNELS=${isa}
                            ${TRAIN} --data synthetic --hidden 32 --epochs 1 --limit-train 512 --limit-test 128
                            --batch 64 --threads 1 --seed 7 --amp ${level} --amp-dtype ${dtype}
                            --save ${WORK}/${level}_${isa}.safetensors
                    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "MIXP_CPU_KERNELS=${isa} ${level} ${dtype}: exit ${rc}\n${out}${err}")
    endif()
    string(REGEX MATCH "state: [^\n]*" state "${out}")
    message("${isa} ${level} ${dtype}: ${state}")
    if(state STREQUAL "")
      message(FATAL_ERROR "no state line:\n${out}")
    endif()
    if(first STREQUAL "")
      set(first "${state}")
    elseif(NOT state STREQUAL first)
      message(FATAL_ERROR "MIXP_CPU_KERNELS=${isa} differs from baseline:\n  ${state}\n  ${first}")
    else()
      execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK}/${level}_baseline.safetensors
                              ${WORK}/${level}_${isa}.safetensors RESULT_VARIABLE same)
      if(NOT same EQUAL 0)
        message(FATAL_ERROR "MIXP_CPU_KERNELS=${isa}: the checkpoint differs from baseline's")
      endif()
    endif()
  endforeach()
endforeach()
