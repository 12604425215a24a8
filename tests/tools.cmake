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
# --channels-last adds the zoo key channels_last=1 (here to MobileNetV3,
# whose default is 0) and is refused, with status 2, for a model without
# convolutions.
add_test(NAME mixp_train_channels_last
  COMMAND sh -c "\"$0\" --model mobilenet_v3_small --model-config width_mult=0.25 --data synthetic-images:3x32x32 --limit-train 32 --limit-test 16 --batch 16 --epochs 1 --threads 2 --channels-last 2>&1 | grep -q '^model: mobilenet_v3_small .*channels_last=1 ' || exit 1; \"$0\" --data synthetic --limit-train 64 --epochs 1 --channels-last 2>&1 | grep -q 'needs a convolutional model' || exit 1; \"$0\" --data synthetic --limit-train 64 --epochs 1 --channels-last >/dev/null 2>&1; test $? -eq 2"
          $<TARGET_FILE:mixp-train>)
set_tests_properties(mixp_train_channels_last PROPERTIES TIMEOUT 120)
# Runs that must not report success: a --limit-train of INT64_MAX is "no
# limit" (it once overflowed and trained nothing); a run whose loss ends
# non-finite exits 1 saying so; an unwritable --save is refused before
# training, not after.
add_test(NAME mixp_train_run_misuse
  COMMAND sh -c "t=\"$0\"; \"$t\" --data synthetic --hidden 8 --batch 256 --epochs 1 --limit-test 64 --limit-train 9223372036854775807 >out.txt 2>&1 || exit 1; grep -q 'epoch 1/1: train_loss=[0-9]' out.txt || exit 1; \"$t\" --data synthetic --hidden 8 --epochs 1 --limit-train 256 --limit-test 64 --weight-decay 1e30 >/dev/null 2>err.txt; [ $? -eq 1 ] && grep -q 'training diverged' err.txt || exit 1; \"$t\" --data synthetic --epochs 1 --save /nonexistent/x.safetensors >out.txt 2>&1; [ $? -eq 1 ] && grep -q \"cannot write in '/nonexistent'\" out.txt && ! grep -q '^epoch' out.txt"
          $<TARGET_FILE:mixp-train>)
# Own folders for the tests that write out.txt/err.txt: ctest -j runs them at once.
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_run_misuse ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_check_numerics_filters)
set_tests_properties(mixp_train_run_misuse PROPERTIES WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_run_misuse TIMEOUT 300)
# The kernels' baseline/AVX2/AVX-512 versions train bit-identically
# (MIXP_CPU_KERNELS pins one; tests/kernel_isa_parity.cmake).
add_test(NAME cpu_kernel_versions_bitwise_equal
  COMMAND ${CMAKE_COMMAND} -DTRAIN=$<TARGET_FILE:mixp-train> -DTEXT=${PROJECT_SOURCE_DIR}/README.md
          -DWORK=${CMAKE_CURRENT_BINARY_DIR}/kernel_isa -P ${CMAKE_CURRENT_SOURCE_DIR}/kernel_isa_parity.cmake)
set_tests_properties(cpu_kernel_versions_bitwise_equal PROPERTIES TIMEOUT 300)
# mixp-train names the CPU's units and each precision's path, and says once
# when the requested half type cannot be faster than fp32: with oneDNN held
# to AVX2 no CPU has a bf16 unit in use, on every machine.
add_test(NAME mixp_train_names_precision_paths
  COMMAND sh -c "ONEDNN_MAX_CPU_ISA=AVX2 \"$0\" --data synthetic --hidden 8 --epochs 1 --limit-train 256 --limit-test 64 --compare >out_paths.txt 2>&1 || exit 1; grep -q '^cpu: .*; fp32: oneDNN on AVX2/FMA; bf16: .*(not faster than fp32); f16: ' out_paths.txt || exit 1; test \"$(grep -c 'cannot be faster than O0' out_paths.txt)\" -eq 1"
          $<TARGET_FILE:mixp-train>)
set_tests_properties(mixp_train_names_precision_paths PROPERTIES WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR} TIMEOUT 120)
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

# The zoo models through mixp-train, on tiny synthetic images and a text.
# The CNN must learn the synthetic task in three short epochs.
add_test(NAME mixp_train_cnn_smoke
  COMMAND mixp-train --model cnn --data synthetic-images:1x16x16 --epochs 3 --limit-train 512
          --limit-test 256 --batch 32 --lr 0.003 --model-config "width=8 hidden=32" --threads 2
          --seed 1)
set_tests_properties(mixp_train_cnn_smoke PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "model: cnn in_channels=1 classes=10 image_size=16 width=8 hidden=32.*final: test_accuracy=0\\.[5-9][0-9]* epochs=3 time=[0-9.]+s samples_per_sec=[0-9]+ peak_mem_mb=[0-9.]+"
  FAIL_REGULAR_EXPRESSION "failed:")

# A character-level GPT on the README, with activation checkpointing: the
# loss of the last steps must be well below that of the first step.
add_test(NAME mixp_train_gpt_smoke
  COMMAND sh -c "out=$(\"$0\" --model gpt --data text:\"$1\" --block-size 32 --epochs 2 --limit-train 1024 --limit-test 256 --batch 16 --lr 0.003 --model-config 'n_layer=1 n_head=2 n_embd=32' --threads 2 --checkpoint-activations) || exit 1; echo \"$out\"; echo \"$out\" | awk '/^final: val_loss=/ { for (i = 2; i <= NF; ++i) { split($i, kv, \"=\"); v[kv[1]] = kv[2] } found = 1 } END { if (!found) { print \"no final line\"; exit 1 } if (!(v[\"last_loss\"] < 0.8 * v[\"first_loss\"])) { print \"loss did not fall: \" v[\"first_loss\"] \" -> \" v[\"last_loss\"]; exit 1 } print \"loss fell: \" v[\"first_loss\"] \" -> \" v[\"last_loss\"] }'"
          $<TARGET_FILE:mixp-train> ${PROJECT_SOURCE_DIR}/README.md)
set_tests_properties(mixp_train_gpt_smoke PROPERTIES TIMEOUT 120 FAIL_REGULAR_EXPRESSION "failed:")

# --checkpoint-activations on a deeper GPT: the zoo config gets
# checkpoint=1 (one region per transformer block), the loss falls and the
# peak tensor memory is reported.
add_test(NAME mixp_train_gpt_block_checkpoint
  COMMAND sh -c "out=$(\"$0\" --model gpt --data text:\"$1\" --block-size 32 --epochs 1 --limit-train 768 --limit-test 128 --batch 16 --lr 0.003 --model-config 'n_layer=4 n_head=2 n_embd=32' --threads 2 --checkpoint-activations) || exit 1; echo \"$out\"; echo \"$out\" | grep -q '^model: gpt vocab=[0-9]* block_size=32 n_layer=4 n_head=2 n_embd=32 checkpoint=1 (.*| activation checkpointing' || { echo 'no checkpoint=1 in the model line'; exit 1; }; echo \"$out\" | awk '/^final: val_loss=/ { for (i = 2; i <= NF; ++i) { split($i, kv, \"=\"); v[kv[1]] = kv[2] } found = 1 } END { if (!found) { print \"no final line\"; exit 1 } if (!(v[\"peak_mem_mb\"] > 0)) { print \"no peak_mem_mb\"; exit 1 } if (!(v[\"last_loss\"] < 0.8 * v[\"first_loss\"])) { print \"loss did not fall: \" v[\"first_loss\"] \" -> \" v[\"last_loss\"]; exit 1 } print \"loss fell: \" v[\"first_loss\"] \" -> \" v[\"last_loss\"] \", peak \" v[\"peak_mem_mb\"] \" MB\" }'"
          $<TARGET_FILE:mixp-train> ${PROJECT_SOURCE_DIR}/README.md)
set_tests_properties(mixp_train_gpt_block_checkpoint PROPERTIES TIMEOUT 120 FAIL_REGULAR_EXPRESSION "failed:")

# ResNet-18 and MobileNetV3-Small (narrow) train a few steps on 3x32x32.
add_test(NAME mixp_train_resnet18_synthetic_smoke
  COMMAND mixp-train --model resnet18 --data synthetic-images:3x32x32 --epochs 1 --limit-train 128
          --limit-test 64 --batch 32 --model-config "width=8" --threads 2)
set_tests_properties(mixp_train_resnet18_synthetic_smoke PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "model: resnet18 in_channels=3 classes=10 width=8.*final: test_accuracy=[01]\\.[0-9]+ epochs=1 .*peak_mem_mb=[0-9.]+"
  FAIL_REGULAR_EXPRESSION "failed:")
add_test(NAME mixp_train_mobilenet_small_synthetic_smoke
  COMMAND mixp-train --model mobilenet_v3_small --data synthetic-images:3x32x32 --epochs 1
          --limit-train 64 --limit-test 64 --batch 32 --model-config "width_mult=0.25" --threads 2)
set_tests_properties(mixp_train_mobilenet_small_synthetic_smoke PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "model: mobilenet_v3_small in_channels=3 classes=10 width_mult=0.25.*final: test_accuracy=[01]\\.[0-9]+ epochs=1 .*peak_mem_mb=[0-9.]+"
  FAIL_REGULAR_EXPRESSION "failed:")

# Flags that cannot go together, or a malformed image size, exit with 2.
add_test(NAME mixp_train_bad_model_data
  COMMAND sh -c "for args in '--model gpt --data synthetic' '--model cnn --data text:/dev/null' '--data synthetic-images:3x0x8' '--model mlp --model-config width=8' '--model vgg'; do \"$0\" $args >/dev/null 2>&1; st=$?; if [ $st -ne 2 ]; then echo \"$args: exit $st, expected 2\"; exit 1; fi; done"
          $<TARGET_FILE:mixp-train>)

# The README's quick start compiles (tools/CMakeLists.txt) and trains.
if(TARGET mixp-quickstart)
  add_test(NAME quickstart_example COMMAND mixp-quickstart)
  set_tests_properties(quickstart_example PROPERTIES
    TIMEOUT 120
    ENVIRONMENT "OMP_NUM_THREADS=2"
    PASS_REGULAR_EXPRESSION "epoch 3: mean loss [0-9.]+")
endif()

# docs/amp-op-policy.md is generated by mixp-op-table: regenerate it into the
# build tree and fail (showing the diff) when the committed file is stale.
if(TARGET mixp-op-table)
  add_test(NAME op_policy_table_up_to_date
    COMMAND sh -c "\"$0\" > \"$1\" && { cmp -s \"$1\" \"$2\" || { echo \"$2 is stale; regenerate it: mixp-op-table > docs/amp-op-policy.md\"; diff -u \"$2\" \"$1\"; exit 1; }; }"
            $<TARGET_FILE:mixp-op-table> ${CMAKE_CURRENT_BINARY_DIR}/amp-op-policy.md
            ${PROJECT_SOURCE_DIR}/docs/amp-op-policy.md)
  add_test(NAME mixp_op_table_help COMMAND mixp-op-table --help)
  set_tests_properties(mixp_op_table_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: mixp-op-table")
  add_test(NAME mixp_op_table_bad_flag
    COMMAND sh -c "\"$0\" --bogus >/dev/null 2>&1; test $? -eq 2" $<TARGET_FILE:mixp-op-table>)
endif()

# mixp-bench's CPU workloads run end to end (one timed step each, no
# PyTorch), and an interpreter without torch 2.x is refused in words rather
# than compared against.
if(TARGET mixp-bench)
  add_test(NAME mixp_bench_cpu_smoke
    COMMAND sh -c "\"$0\" --steps 1 --python /bin/false > bench.txt 2>&1 || exit 1; for w in 'gemm 1024' 'mlp 784-256-128-10' 'cnn (1x28x28' 'resnet18 (3x32x32)' 'gpt (4 layers, 128 wide, T=64)' 'gpt (4 layers, 128 wide, T=256)'; do grep -qF \"$w\" bench.txt || { echo \"missing $w\"; cat bench.txt; exit 1; }; done; grep -q 'PyTorch reference not run: /bin/false has no torch >= 2.0' bench.txt || exit 1; test \"$(grep -c '^mixp O2 f16' bench.txt)\" -eq 5"
            $<TARGET_FILE:mixp-bench>)
  set_tests_properties(mixp_bench_cpu_smoke PROPERTIES WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR} TIMEOUT 600
                       FAIL_REGULAR_EXPRESSION "failed:")
  # The --device cuda workloads' code on the CPU at tiny sizes (--device cpu
  # --quick): every kernel row and every whole-model row (GPT-2, ResNet-50,
  # MobileNetV3-Large, ResNet-18; each precision and layout) has numbers, the
  # mixp models have the twins' parameter counts; with a python that imports
  # torch ($MIXP_BENCH_PYTHON, else python3; skipped without) the PyTorch
  # twins run too and their counts must equal mixp's.
  # The twins start seven Python processes (each imports torch) and train
  # 16 tiny models: ~2 minutes on 2 idle cores, alone so as not to slow the
  # other tests past their timeouts.
  foreach(side mixp twins)
    add_test(NAME mixp_bench_gpu_workloads_cpu_${side}
      COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/bench_gpu_workloads_cpu.sh $<TARGET_FILE:mixp-bench> ${side})
    set_tests_properties(mixp_bench_gpu_workloads_cpu_${side} PROPERTIES
      WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR} TIMEOUT 900 SKIP_RETURN_CODE 77
      ENVIRONMENT "OMP_NUM_THREADS=1")
  endforeach()
  set_tests_properties(mixp_bench_gpu_workloads_cpu_twins PROPERTIES RUN_SERIAL ON)
endif()

# --label-smoothing: the training loss is the smoothed one (higher than the
# plain loss of the same run: the targets are no longer one-hot), accuracy
# is unharmed, and a value outside [0, 1] is a usage error (exit 2).
add_test(NAME mixp_train_label_smoothing
  COMMAND sh -c "t=\"$0\"; set -- --data synthetic --epochs 2 --limit-train 2048 --limit-test 500 --hidden 64 --seed 5; \"$t\" \"$@\" >plain.txt 2>&1 && \"$t\" \"$@\" --label-smoothing 0.1 >smooth.txt 2>&1 || exit 1; p=$(sed -n 's/^epoch 2.2: train_loss=\\([0-9.]*\\).*/\\1/p' plain.txt); q=$(sed -n 's/^epoch 2.2: train_loss=\\([0-9.]*\\).*/\\1/p' smooth.txt); awk -v p=\"$p\" -v q=\"$q\" 'BEGIN { exit !(q > p) }' || exit 1; grep -q 'final: test_accuracy=0\\.9[0-9]*\\|final: test_accuracy=1\\.0' smooth.txt || exit 1; \"$t\" --data synthetic --label-smoothing 1.5 >/dev/null 2>&1; test $? -eq 2"
          $<TARGET_FILE:mixp-train>)
set_tests_properties(mixp_train_label_smoothing PROPERTIES WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR} TIMEOUT 120)

# --explain-overflow names the parameters whose gradients overflowed on a
# skipped step: an f16 scale of 2^40 overflows every gradient of the MLP
# (a hidden layer, so 4 parameters), and the scaler skips the step.
add_test(NAME mixp_train_explain_overflow
  COMMAND mixp-train --data synthetic --epochs 1 --limit-train 512 --limit-test 100 --hidden 32
          --amp O2 --amp-dtype f16 --init-scale 1099511627776 --explain-overflow)
set_tests_properties(mixp_train_explain_overflow PROPERTIES TIMEOUT 120
  PASS_REGULAR_EXPRESSION "step 1: overflow, step skipped; non-finite gradients in 4 parameters: 1\\.weight 1\\.bias 3\\.weight 3\\.bias\n")

# --op-stats prints which op ran in which dtype during the first step: under
# O1 bf16 the MLP's two linears and relu ran in bf16, the loss in fp32, and
# their backward passes are counted apart.
add_test(NAME mixp_train_op_stats
  COMMAND mixp-train --data synthetic --epochs 1 --limit-train 512 --limit-test 100 --hidden 32
          --amp O1 --amp-dtype bf16 --op-stats)
set_tests_properties(mixp_train_op_stats PROPERTIES TIMEOUT 120
  PASS_REGULAR_EXPRESSION "op stats \\(first step\\):\nop +\\| fp16 calls[^\n]*\n[-+]+\nlinear +\\| +0 \\| +2 \\| +0 \\| +0 \\| +0 \\| +0\nlinear \\(backward\\) +\\| +0 \\| +2 \\|[^\n]*\nrelu +\\| +0 \\| +1 \\|[^\n]*\n[^\n]*\ncross_entropy +\\| +0 \\| +0 \\| +1 \\|")

# The optimizer's memory options (bf16 parameters without masters and
# stochastic rounding, bf16 moments) end within 5% of the fp32-master run's
# loss on the Fashion-MNIST MLP and a small GPT (tests/memory_options.sh).
# Ten O2 bf16 trainings: on a CPU without a bf16 unit (bf16 products are
# fp32 FMAs there) they took over 300 s on a busy 2-core Cascade Lake Xeon.
add_test(NAME mixp_train_memory_options
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/memory_options.sh $<TARGET_FILE:mixp-train> ${PROJECT_SOURCE_DIR}/README.md)
set_tests_properties(mixp_train_memory_options PROPERTIES TIMEOUT 900)

# The numerics checker's filters from the command line: they need
# --check-numerics, unknown op names are refused by the library, and a run
# with the fp16-overflow check and an op list trains.
add_test(NAME mixp_train_check_numerics_filters
  COMMAND sh -c "t=\"$0\"; \"$t\" --check-ops matmul >/dev/null 2>err.txt; [ $? -eq 2 ] && grep -q 'add --check-numerics' err.txt || exit 1; \"$t\" --data synthetic --check-numerics warn --check-steps 3:1 >/dev/null 2>&1; [ $? -eq 2 ] || exit 1; \"$t\" --data synthetic --check-numerics warn --skip-ops no_such_op >/dev/null 2>err.txt; [ $? -eq 1 ] && grep -q \"unknown op 'no_such_op'\" err.txt || exit 1; \"$t\" --data synthetic --hidden 16 --epochs 1 --limit-train 512 --limit-test 128 --check-numerics error --check-ops linear,relu --check-steps 0:4 --check-fp16-overflow | grep -q '^final: '"
  $<TARGET_FILE:mixp-train>)
set_tests_properties(mixp_train_check_numerics_filters PROPERTIES
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_check_numerics_filters)

# --underflow-stats prints the share of each gradient that f16 cannot hold
# and logs it per parameter (underflow/<name> in the CSV); --low-scale is
# accepted with its three values and refuses others.
add_test(NAME mixp_train_underflow_stats
  COMMAND sh -c "t=\"$0\"; out=$(\"$t\" --data synthetic --hidden 16 --epochs 1 --limit-train 1024 --limit-test 128 --amp O1 --amp-dtype f16 --low-scale warn --underflow-stats --log-every 4 --csv run.csv) || exit 1; echo \"$out\" | grep -q '^step 4: gradient underflow in f16: mean [0-9.]*% of elements, most in ' || { echo \"$out\"; exit 1; }; grep -q ',underflow/1.weight,4,' run.csv || { head run.csv; exit 1; }; \"$t\" --low-scale sometimes >/dev/null 2>&1; [ $? -eq 2 ]"
  $<TARGET_FILE:mixp-train>)

# --compare-numerics: the first batch under O0 and O2 bf16, op by op; the
# table has the forward and backward rows and a verdict line.
add_test(NAME mixp_train_compare_numerics
  COMMAND sh -c "out=$(\"$0\" --data synthetic --hidden 32 --amp O2 --amp-dtype bf16 --compare-numerics --compare-tol 0.5) || exit 1; echo \"$out\"; echo \"$out\" | grep -q '^op by op: O2 bf16 against O0 (fp32)' && echo \"$out\" | grep -q ' linear  *forward ' && echo \"$out\" | grep -q ' linear  *backward ' && echo \"$out\" | grep -qE '^(no op above|first op above) the relative tolerance 0.5'"
  $<TARGET_FILE:mixp-train>)
# --graph captures the second step and replays it: the run is bitwise the
# eager one (same losses and accuracy to every printed digit, O2 bf16 with
# dropout-free MLP and the short last batch run eagerly).
add_test(NAME mixp_train_graph_matches_eager
  COMMAND sh -c "t=\"$0\"; for g in '' --graph; do \"$t\" --data synthetic --epochs 2 --limit-train 1000 --limit-test 200 --hidden 32 --batch 64 --threads 2 --seed 5 --amp O2 --amp-dtype bf16 --clip-norm 1 $g | grep -o 'train_loss=[0-9.]* [a-z_]*=[0-9.]*' > out$g.txt || exit 1; done; test -s out.txt && cmp out.txt out--graph.txt && \"$t\" --graph --accum-steps 2 2>&1 | grep -q 'takes no --dist'"
          $<TARGET_FILE:mixp-train>)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_graph_matches_eager)
set_tests_properties(mixp_train_graph_matches_eager PROPERTIES
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/mixp_train_graph_matches_eager TIMEOUT 120)
