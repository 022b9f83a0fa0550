#!/usr/bin/env bash
# Megatron-LM's own launch scripts (tests/data/megatron/), run as shipped
# with a torchrun that hands pretrain_gpt.py's arguments to ptsim simulate:
# the world size is torchrun's --nproc_per_node × --nnodes, or PTSIM_GPUS
# where a script's node count is a placeholder (the GPT-3 175B example says
# "Change for multinode config" and keeps one node for TP 8 × PP 16).
#   tests/cli/megatron_launch_test.sh PTSIM_BINARY
set -euo pipefail
ptsim="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/run"
touch "$work/run/pretrain_gpt.py"  # the Llama script checks that it exists

cat > "$work/bin/torchrun" <<'SHIM'
#!/usr/bin/env bash
# torchrun's own options, then the script, then its arguments.
set -euo pipefail
nproc=1 nnodes=1
while [ $# -gt 0 ]; do
  case "$1" in
    --nproc_per_node|--nproc-per-node) nproc=$2; shift 2 ;;
    --nnodes) nnodes=$2; shift 2 ;;
    --node_rank|--node-rank|--master_addr|--master-addr|--master_port|--master-port|--rdzv_endpoint|--rdzv-endpoint) shift 2 ;;
    *.py) shift; break ;;
    *) echo "torchrun shim: unexpected $1" >&2; exit 64 ;;
  esac
done
exec "$PTSIM" simulate --hw "$PTSIM_HW" --gpus "${PTSIM_GPUS:-$((nproc * nnodes))}" --allow-oom \
  --json "$PTSIM_JSON" -- "$@"
SHIM
chmod +x "$work/bin/torchrun"
export PATH="$work/bin:$PATH" PTSIM="$ptsim"

fail() { echo "megatron_launch_test: $*" >&2; exit 1; }
json_value() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'j': j}))" "$@"; }

# The scripts end in `set +x`, so their exit status says nothing: each run
# is judged by its report, its error and ptsim's exit status in the shim.
run_script() {  # NAME HW SCRIPT [ARGS...]: the JSON is $work/NAME.json
  local name=$1 hw=$2 script=$3
  shift 3
  rm -f "$work/$name.json"
  (cd "$work/run" && PTSIM_HW="$hw" PTSIM_JSON="$work/$name.json" bash "$script" "$@" \
    > "$work/$name.out" 2> "$work/$name.err") || true
}

# Llama 3 8B in FP8 on one H100 node, as shipped.
run_script llama "$src/hw_profiles/h100-sxm5-80gb.json" "$src/tests/data/megatron/train_llama3_8b_h100_fp8.sh"
[ -s "$work/llama.json" ] || { cat "$work/llama.err" >&2; fail "the Llama 3 8B FP8 example did not simulate"; }
cat "$work/llama.out"
# What the script sets, read back from the report: 8 GPUs, TP 1, DP 8,
# global batch 128 of 8192 tokens, FP8; the vocabulary 128,256 (a multiple of 128).
[ "$(json_value "$work/llama.json" "j['run']['gpus'], j['run']['tp'], j['run']['dp']")" = "(8, 1, 8)" ] ||
  fail "Llama: gpus/tp/dp $(json_value "$work/llama.json" "j['run']['gpus'], j['run']['tp'], j['run']['dp']")"
[ "$(json_value "$work/llama.json" "j['run']['precision'], j['run']['seq_length'], j['run']['global_batch_size']")" = "('fp8', 8192, 128)" ] ||
  fail "Llama: precision/seq/batch $(json_value "$work/llama.json" "j['run']['precision'], j['run']['seq_length'], j['run']['global_batch_size']")"
python3 - "$work/llama.json" <<'PY' || fail "Llama: parameter count"
import json, sys
p = json.load(open(sys.argv[1]))["run"]["parameters"]
# Untied: 2·128256·4096 embeddings + 32·(QKV 4096·6144 + out 4096² + SwiGLU 3·4096·14336 + 2 norms) + final norm.
expected = 2 * 128256 * 4096 + 32 * (4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096) + 4096
assert p == expected, (p, expected)
PY
grep -q "ignored: .*--lr " "$work/llama.err" || fail "Llama: --lr is not listed as ignored"
grep -q "ignored: .*--save " "$work/llama.err" || fail "Llama: --save is not listed as ignored"
grep -q "Megatron-LM disables sequence parallelism" "$work/llama.err" || fail "Llama: SP at TP 1 not noted"

# GPT-3 175B as shipped: its TRAINING_ARGS hold a quoted batch-size schedule
# that the unquoted ${TRAINING_ARGS[@]} splits into words, which
# pretrain_gpt.py's argparse refuses ("unrecognized arguments"), and so does ptsim.
gpt3="$src/tests/data/megatron/train_gpt3_175b_distributed.sh"
run_script gpt3-shipped "$src/hw_profiles/a100-sxm4-80gb.json" "$gpt3" ckpt tb vocab.json merges.txt data
[ ! -e "$work/gpt3-shipped.json" ] || fail "GPT-3 as shipped simulated, though its arguments have a stray word"
grep -q "'2.4B:320' is not a flag" "$work/gpt3-shipped.err" &&
  grep -q "follows --step-batch-size-schedule 0:16" "$work/gpt3-shipped.err" ||
  { cat "$work/gpt3-shipped.err" >&2; fail "GPT-3: the refusal does not name the split schedule"; }
# With its array expansions quoted, the line Megatron would take.
sed 's/\${\([A-Z_]*\)\[@\]}/"${\1[@]}"/g' "$gpt3" > "$work/gpt3-quoted.sh"
# TP 8 × PP 16 on the script's one node of 8 GPUs cannot run, and ptsim says so.
run_script gpt3-one-node "$src/hw_profiles/a100-sxm4-80gb.json" "$work/gpt3-quoted.sh" ckpt tb vocab.json merges.txt data
[ ! -e "$work/gpt3-one-node.json" ] || fail "GPT-3 175B on 8 GPUs simulated, though TP 8 × PP 16 needs 128"
grep -q "128" "$work/gpt3-one-node.err" || { cat "$work/gpt3-one-node.err" >&2; fail "GPT-3: the refusal does not name 128 GPUs"; }
# On 1,024 GPUs (DP 8): simulated; GPT-2's vocabulary padded to 51,200 (50,257 up to a multiple of 128 × 8).
PTSIM_GPUS=1024 run_script gpt3 "$src/hw_profiles/a100-sxm4-80gb.json" "$work/gpt3-quoted.sh" ckpt tb vocab.json merges.txt data
[ -s "$work/gpt3.json" ] || { cat "$work/gpt3.err" >&2; fail "GPT-3 175B on 1024 GPUs did not simulate"; }
cat "$work/gpt3.out"
[ "$(json_value "$work/gpt3.json" "j['run']['tp'], j['run']['pp'], j['run']['dp'], j['run']['global_batch_size']")" = "(8, 16, 8, 1536)" ] ||
  fail "GPT-3: tp/pp/dp/batch $(json_value "$work/gpt3.json" "j['run']['tp'], j['run']['pp'], j['run']['dp'], j['run']['global_batch_size']")"
python3 - "$work/gpt3.json" <<'PY' || fail "GPT-3: parameter count"
import json, sys
p = json.load(open(sys.argv[1]))["run"]["parameters"]
h, l, v, s = 12288, 96, 51200, 2048
# Tied embeddings, learned positions, biases, LayerNorm: 12·l·h² + 13·l·h + (v + s)·h + 2h.
expected = 12 * l * h * h + 13 * l * h + (v + s) * h + 2 * h
assert p == expected, (p, expected)
PY
echo "megatron_launch_test: both Megatron-LM examples read from their own launch lines"
