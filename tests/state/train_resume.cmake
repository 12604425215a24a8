# mixp-train --save/--resume is exact: a run stopped after K steps and
# resumed equals the uninterrupted run bit for bit (same thread count). The
# two final checkpoints (every parameter, optimizer moment, scaler state,
# loader position, RNG position and the run's counters) must be identical
# files, and the "state:" lines (last loss and test accuracy as hex floats)
# equal. O0 stops at K = 21, inside the second epoch (16 steps per epoch);
# O2 runs a CNN (batch norm, dropout) in fp16 with a dynamic loss scale that
# starts far too high, and stops at K = 9 while the scaler is still skipping
# steps and backing off, so the resumed part continues that sequence.
# O2lowmem: the MLP in bf16 without masters, with bf16 moments and
# stochastic rounding, stopped at K = 21.
#   cmake -DTRAIN=mixp-train -DAMP=O0|O2|O2lowmem -DWORK=dir -P train_resume.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
if(AMP STREQUAL "O2")
  # A CNN (batch norm buffers, dropout) in fp16.
  set(common --model cnn --model-config "width=4 hidden=16 dropout=0.2" --data synthetic-images:1x8x8
             --amp O2 --amp-dtype f16 --loss-scale dynamic --init-scale 1e9)
  set(K 9)
  set(EVERY 4)
  set(saves "4\n.*at step 8\n.*at step 9")
  set(resumed_at "step 9, epoch 1")
elseif(AMP STREQUAL "O2lowmem")
  # O2 bf16 at the least memory: no masters, bf16 moments, stochastic
  # rounding, whose Philox words follow the saved RNG position.
  set(common --data synthetic --hidden 32 --amp O2 --amp-dtype bf16 --master-weights off
             --stochastic-rounding --optimizer-state bf16)
  set(K 21)
  set(EVERY 8)
  set(saves "8\n.*at step 16\n.*at step 21")
  set(resumed_at "step 21, epoch 2")
else()
  set(common --data synthetic --hidden 32)
  set(K 21)
  set(EVERY 8)
  set(saves "8\n.*at step 16\n.*at step 21")
  set(resumed_at "step 21, epoch 2")
endif()
list(APPEND common --limit-train 1024 --limit-test 500 --batch 64 --epochs 3 --threads 2 --seed 5)

include(${CMAKE_CURRENT_LIST_DIR}/../resume_check.cmake)
macro(run name)
  run_train(${name} ${TRAIN} ${common} ${ARGN})
endmacro()

run(straight --save ${WORK}/straight.safetensors)
run(part1 --save ${WORK}/part1.safetensors --max-steps ${K} --save-every ${EVERY})
if(NOT part1_out MATCHES "checkpoint: saved [^\n]* at step ${saves}\n")
  message(FATAL_ERROR "part1 did not save every ${EVERY} steps and at step ${K}")
endif()
run(part2 --resume ${WORK}/part1.safetensors --save ${WORK}/resumed.safetensors)
if(NOT part2_out MATCHES "resumed: [^\n]* at ${resumed_at}")
  message(FATAL_ERROR "part2 did not resume at ${resumed_at}")
endif()

expect_same_run(run "${straight_state}" "${part2_state}" ${WORK}/straight.safetensors ${WORK}/resumed.safetensors)

# Another configuration is refused, naming both.
execute_process(COMMAND ${TRAIN} ${common} --batch 32 --resume ${WORK}/part1.safetensors
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "saved by another configuration")
  message(FATAL_ERROR "resuming with another --batch was not refused:\n${out}${err}")
endif()
# A damaged (truncated) checkpoint is refused with the library's message.
file(SIZE ${WORK}/part1.safetensors size)
math(EXPR keep "${size} - 64")
execute_process(COMMAND sh -c "head -c ${keep} '${WORK}/part1.safetensors' > '${WORK}/cut.safetensors'")
execute_process(COMMAND ${TRAIN} ${common} --resume ${WORK}/cut.safetensors
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "is corrupt")
  message(FATAL_ERROR "a truncated checkpoint was not refused:\n${out}${err}")
endif()
message("resume exact: ${straight_state}")
