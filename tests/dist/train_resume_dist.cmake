# mixp-train --dist --save/--resume is exact (tests/state/train_resume.cmake's
# proof, on 2 ranks): a run stopped after its first epoch and resumed equals
# the uninterrupted run bit for bit. Rank 0 writes the checkpoints, every rank
# loads them; the two final checkpoints (parameters, optimizer moments, scaler,
# loader position, RNG position, the run's counters, all as rank 0 holds them)
# must be identical files and the "state:" lines (last global loss and test
# accuracy, hex floats) equal.
# MLP: fp32 SGD, 16 steps per epoch (the last global batch 20/20 samples).
# CNN: batch norm (its running statistics follow each rank's batches; rank
# 0's are broadcast before each evaluation) and dropout, O2 fp16 with a
# dynamic loss scale that starts far too high, so that the ranks skip their
# first steps together, and 2 accumulated micro-batches per step; also saved
# every 8 steps.
# A 2-rank checkpoint is refused by a single process (its batch is per rank).
#   cmake -DMPIEXEC=mpiexec -DTRAIN=mixp-train -DMODEL=mlp|cnn -DWORK=dir -P train_resume_dist.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
if(MODEL STREQUAL "cnn")
  set(common --model cnn --model-config "width=4 hidden=16 dropout=0.2" --limit-train 500 --batch 16
             --amp O2 --amp-dtype f16 --loss-scale dynamic --init-scale 1e9 --accum-steps 2)
  set(extra --save-every 8)
  set(saves "checkpoint: saved [^\n]* at step 8\n.*checkpoint: saved [^\n]* at step 16\n")
else()
  set(common --hidden 32 --limit-train 1000 --batch 32 --optimizer sgd)
  set(extra)
  set(saves "checkpoint: saved [^\n]* at step 16\n")
endif()
list(APPEND common --data synthetic-images:1x8x8 --limit-test 300 --epochs 3 --threads 1 --seed 7)
set(mpi ${MPIEXEC} --allow-run-as-root --oversubscribe -np 2)

include(${CMAKE_CURRENT_LIST_DIR}/../resume_check.cmake)
macro(run name)
  run_train(${name} ${ARGN})
endmacro()

run(straight ${mpi} ${TRAIN} ${common} --dist --save ${WORK}/straight.safetensors)
if(NOT straight_out MATCHES "dist: MPI \\([^\n]*\\), rank 0 of 2\n")
  message(FATAL_ERROR "no 'dist: MPI (...), rank 0 of 2' line")
endif()
run(part1 ${mpi} ${TRAIN} ${common} --dist --save ${WORK}/part1.safetensors --max-steps 16 ${extra})
if(NOT part1_out MATCHES "${saves}")
  message(FATAL_ERROR "part1 did not print its saves (rank 0 saves and prints)")
endif()
run(part2 ${mpi} ${TRAIN} ${common} --dist --resume ${WORK}/part1.safetensors --save ${WORK}/resumed.safetensors)
if(NOT part2_out MATCHES "resumed: [^\n]* at step 16, epoch 1 \\(16 batches into it\\)")
  message(FATAL_ERROR "part2 did not resume at step 16, after epoch 1")
endif()
expect_same_run("2-rank run" "${straight_state}" "${part2_state}" ${WORK}/straight.safetensors
                ${WORK}/resumed.safetensors)

# One process cannot continue a 2-rank run: refused, naming both configurations.
execute_process(COMMAND ${TRAIN} ${common} --resume ${WORK}/part1.safetensors
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 100)
if(rc EQUAL 0 OR NOT err MATCHES "saved by another configuration" OR NOT err MATCHES "\"ranks\":2")
  message(FATAL_ERROR "a single process resuming a 2-rank checkpoint was not refused:\n${out}${err}")
endif()
message("resume exact on 2 ranks (${MODEL}): ${straight_state}")
