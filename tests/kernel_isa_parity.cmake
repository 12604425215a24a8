# The CPU kernels' versions (baseline, AVX2, AVX-512: src/cpu/simd.hpp)
# give bit-identical results: the same training runs under
# MIXP_CPU_KERNELS=baseline, avx2 and avx512 must print the same "state:"
# line (last loss and accuracy as hex floats) and save identical checkpoints
# (every weight, master and optimizer moment). The runs cover the MLP under
# O2 bf16 (AdamW) and O1 f16 (SGD with momentum and weight decay, loss
# scaling), a CNN under O2 bf16 and O2 f16 (batch norm, max pooling,
# dropout; f16 staged through F16C in the AVX2/AVX-512 versions and
# converted in software in the baseline one) and a GPT under O1 bf16 (layer norm, GELU's erf,
# softmax and its exp). On a CPU without AVX-512 (or AVX2) the higher pins
# run the best version it has.
#   cmake -DTRAIN=mixp-train -DTEXT=any-text-file -DWORK=dir -P kernel_isa_parity.cmake
file(MAKE_DIRECTORY ${WORK})
set(common --epochs 1 --threads 1 --seed 7)
set(mlp_O2_bf16 --data synthetic --hidden 32 --limit-train 512 --limit-test 128 --batch 64 --amp O2 --amp-dtype bf16)
set(mlp_O1_f16 --data synthetic --hidden 32 --limit-train 512 --limit-test 128 --batch 64 --amp O1 --amp-dtype f16
    --optimizer sgd --weight-decay 1e-4)
set(cnn_O2_bf16 --model cnn --data synthetic-images:1x12x12 --model-config "width=4 hidden=16" --limit-train 128
    --limit-test 32 --batch 32 --amp O2 --amp-dtype bf16)
set(cnn_O2_f16 --model cnn --data synthetic-images:1x12x12 --model-config "width=4 hidden=16" --limit-train 128
    --limit-test 32 --batch 32 --amp O2 --amp-dtype f16)
set(gpt_O1_bf16 --model gpt --data text:${TEXT} --block-size 16 --model-config "n_layer=1 n_head=2 n_embd=16"
    --limit-train 128 --limit-test 32 --batch 16 --amp O1 --amp-dtype bf16)
foreach(run mlp_O2_bf16 mlp_O1_f16 cnn_O2_bf16 cnn_O2_f16 gpt_O1_bf16)
  set(first "")
  foreach(isa baseline avx2 avx512)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env MIXP_CPU_KERNELS=${isa}
                            ${TRAIN} ${${run}} ${common} --save ${WORK}/${run}_${isa}.safetensors
                    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "MIXP_CPU_KERNELS=${isa} ${run}: exit ${rc}\n${out}${err}")
    endif()
    string(REGEX MATCH "state: [^\n]*" state "${out}")
    message("${isa} ${run}: ${state}")
    if(state STREQUAL "")
      message(FATAL_ERROR "no state line:\n${out}")
    endif()
    if(first STREQUAL "")
      set(first "${state}")
    elseif(NOT state STREQUAL first)
      message(FATAL_ERROR "MIXP_CPU_KERNELS=${isa} ${run} differs from baseline:\n  ${state}\n  ${first}")
    else()
      execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK}/${run}_baseline.safetensors
                              ${WORK}/${run}_${isa}.safetensors RESULT_VARIABLE same)
      if(NOT same EQUAL 0)
        message(FATAL_ERROR "MIXP_CPU_KERNELS=${isa} ${run}: the checkpoint differs from baseline's")
      endif()
    endif()
  endforeach()
endforeach()
