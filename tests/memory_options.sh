#!/bin/sh
# The optimizer's memory options against the fp32-master run (issue 14,
# item 6): O2 bf16 with fp32 master weights is the reference; bf16
# parameters without masters updated with stochastic rounding, bf16 Adam
# moments, and both together must end within REL (5%) of its loss, on the
# Fashion-MNIST MLP (last epoch's train loss; synthetic data when the
# dataset is not installed) and on a small character-level GPT (validation
# loss). Rounding to nearest without masters is shown for comparison, not
# judged. Prints one table.
#   memory_options.sh MIXP_TRAIN TEXT_FILE
set -u
train=$1
text=$2
REL=0.05
mlp="--epochs 3 --seed 1 --threads 2"
gpt_cfg="n_layer=2 n_head=2 n_embd=32"
status=0
ref_mlp=""
ref_gpt=""
printf '%-44s %12s %12s %12s\n' "O2 bf16 optimizer" "MLP loss" "GPT val_loss" "MLP peak MB"
for cfg in "masters" "no-masters nearest" "no-masters stochastic" "masters state-bf16" "no-masters stochastic state-bf16"; do
  flags=""
  case $cfg in *no-masters*) flags="$flags --master-weights off" ;; esac
  case $cfg in *stochastic*) flags="$flags --stochastic-rounding" ;; esac
  case $cfg in *state-bf16*) flags="$flags --optimizer-state bf16" ;; esac
  # shellcheck disable=SC2086
  out_mlp=$("$train" --amp O2 --amp-dtype bf16 $mlp $flags 2>&1) || { echo "$out_mlp"; exit 1; }
  # shellcheck disable=SC2086
  out_gpt=$("$train" --amp O2 --amp-dtype bf16 --model gpt --data "text:$text" --block-size 32 --epochs 6 \
    --limit-train 1024 --limit-test 256 --batch 16 --lr 0.003 --model-config "$gpt_cfg" --threads 2 $flags 2>&1) ||
    { echo "$out_gpt"; exit 1; }
  l_mlp=$(echo "$out_mlp" | sed -n 's/^epoch 3\/3: train_loss=\([0-9.]*\).*/\1/p')
  peak=$(echo "$out_mlp" | sed -n 's/^final: .*peak_mem_mb=\([0-9.]*\).*/\1/p')
  l_gpt=$(echo "$out_gpt" | sed -n 's/^final: val_loss=\([0-9.]*\).*/\1/p')
  [ -n "$l_mlp" ] && [ -n "$l_gpt" ] || { echo "no loss in the output of '$cfg'"; echo "$out_mlp"; echo "$out_gpt"; exit 1; }
  verdict="reference"
  if [ -z "$ref_mlp" ]; then
    ref_mlp=$l_mlp
    ref_gpt=$l_gpt
  else
    case $cfg in
      *nearest*) verdict="(not judged)" ;;
      *) if awk -v a="$l_mlp" -v b="$ref_mlp" -v c="$l_gpt" -v d="$ref_gpt" -v r="$REL" \
             'BEGIN { exit !((a - b <= r * b) && (b - a <= r * b) && (c - d <= r * d) && (d - c <= r * d)) }'; then
           verdict="within ${REL} of the reference"
         else
           verdict="FAILED: more than ${REL} from the reference"
           status=1
         fi ;;
    esac
  fi
  printf '%-44s %12s %12s %12s  %s\n' "$cfg" "$l_mlp" "$l_gpt" "$peak" "$verdict"
done
exit $status
