export XDG_CACHE_HOME=/tmp/cgc
D=bench/one-image-2026-11-30/specs
for r in 1 2 3; do for s in sp s17 sp-noconv2-h32; do for c in 0 512 1024 2048; do
  rm -f /tmp/j.json
  CG_UPLOAD_CHUNK=$c timeout 60 .dev/chunk/convgen run $D/$s.yaml --random-input 1 --images 1 --batch 1 --repeat 300 --whole off --json /tmp/j.json >/dev/null 2>&1
  echo "r$r $s chunk$c $(python3 -c "import json;j=json.load(open('/tmp/j.json'));print('gpu %.1f p50 %.1f' % (j['total_s']*1e6, j['latency_ms']['p50']*1e3))")"
done; done; done | tee $OUT/chunk.txt
