export XDG_CACHE_HOME=/tmp/cgc
D=bench/one-image-2026-11-30/specs
for r in 1 2 3; do for s in fa sp; do for c in 0 1024 P; do
  rm -f /tmp/j.json
  if [ $c = P ]; then export CG_UPLOAD_PAGEABLE=1; c=0; else unset CG_UPLOAD_PAGEABLE; fi
  CG_UPLOAD_CHUNK=$c timeout 60 .dev/chunk/convgen run $D/$s.yaml --random-input 1 --images 1 --batch 1 --repeat 300 --json /tmp/j.json >/dev/null 2>&1
  echo "r$r $s chunk$c${CG_UPLOAD_PAGEABLE:+pageable} $(python3 -c "import json;j=json.load(open('/tmp/j.json'));print('gpu %.1f p50 %.1f' % (j['total_s']*1e6, j['latency_ms']['p50']*1e3), 'whole' if j.get('whole') else j.get('launch'))")"
done; done; done | tee $OUT/chunk-fa.txt
