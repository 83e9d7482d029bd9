#!/usr/bin/env bash
# planes_profile_device.sh — on an sm_90 GPU with Nsight Compute: what bounds one layer's kernel
# at 10,000 images. For each CELL "network:layer:strategy:params" (bf16 copies with the spec's
# strategies dropped; the strategy and params as `convgen kernel` takes them, either may be empty),
# one `--set full` profile of the timed launch after the check; printed: its time, the details
# page's lines that say what bounds it (throughputs, the tensor pipe, shared memory, stalls,
# occupancy) and the SASS lines with the most stall samples. OUTDIR (default: a temporary folder)
# keeps the reports and the whole details pages.
#
#   OUTDIR=DIR bash bench/scripts/planes_profile_device.sh CONVGEN CELL...
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
shift
out=${OUTDIR:-$(mktemp -d)}
mkdir -p "$out"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for cell in "$@"; do
  IFS=':' read -r n l st pa <<<"$cell"
  c=$(auto_copy "$(cell_spec "$n")" bf16)
  name=$n-$l${st:+-$st}${pa:+-${pa//[=,]/_}}
  ncu --set full -k regex:conv2d --launch-skip 1 -c 1 -f -o "$out/$name" "$cg" kernel "$c" --layer "$l" \
    ${st:+--strategy "$st"} ${pa:+--params "$pa"} --repeat 1 --check-images 16 >"$out/$name.run" 2>&1 ||
    echo "ncu failed on $name: $(tail -2 "$out/$name.run")"
  ncu -i "$out/$name.ncu-rep" --page details >"$out/$name-details.txt" 2>&1
  echo "== $name: $(grep -E 'params|median' "$out/$name.run" | tr '\n' ' ' | tr -s ' ' | cut -c1-200)"
  grep -E 'Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Executed Ipc A|Issue Slots Busy|No Eligible|Active Warps Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Registers Per|Shared Memory Configuration Size|Bank Conflicts|Warp Cycles Per Issued|Dynamic Shared' \
    "$out/$name-details.txt" | tr -s ' ' | head -30
  ncu -i "$out/$name.ncu-rep" --page raw --csv 2>/dev/null >"$out/$name-raw.csv"
  python3 - "$out/$name-raw.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
if len(rows) < 3:
    sys.exit()
head, vals = rows[0], rows[2]
want = ("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio")
for i, h in enumerate(head):
    if h in want or "gmma" in h and "pct" in h:
        print(f"  {h} = {vals[i]}")
PY
  ncu -i "$out/$name.ncu-rep" --page source --print-source sass --csv 2>/dev/null >"$out/$name-sass.csv"
  python3 "$(dirname "$0")/ncu_top_stalls.py" "$out/$name-sass.csv" | sed -n 1,14p
  rm -f "$c"
done
