#!/usr/bin/env python3
"""ncu_top_stalls.py CSV: from Nsight Compute's source page of one kernel (`ncu -i REPORT --page source
--print-source sass --csv`), the twenty SASS lines with the most warp-stall samples, each with its share."""
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
if rows and rows[0] and rows[0][0] == "Kernel Name":
    rows = rows[1:]   # newer Nsight Compute: the kernel's name on a line of its own first
if not rows:
    print("no source page"); sys.exit()
head = rows[0]
def col(*names):
    for n in names:
        for i, h in enumerate(head):
            if h.strip().lower() == n.lower():
                return i
    return None
src = col("Source")
stall = col("Warp Stall Sampling (All Samples)", "Sampling Data (All)")
if src is None or stall is None:
    print("columns:", head[:30]); sys.exit()
def num(s):
    try: return float(s.replace(",", ""))
    except ValueError: return 0.0
body = [r for r in rows[1:] if len(r) > max(src, stall)]
total = sum(num(r[stall]) for r in body) or 1
print(f"SASS lines {len(body)}, stall samples {total:.0f}; the top twenty:")
for r in sorted(body, key=lambda r: -num(r[stall]))[:20]:
    print(f"  {100 * num(r[stall]) / total:5.1f}%  {r[src][:110]}")
