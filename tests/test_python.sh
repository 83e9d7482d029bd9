#!/usr/bin/env bash
# test_python.sh — python/convgen.py (ctypes over build/libconvgen.so) on the
# CPU backend. Without numpy: opening a bundle, its shape and classes, and the
# errors (a missing file: Error with status 3). With numpy (python3, or the
# system's /usr/bin/python3, if either imports it): examples/classify.py on an
# .npy prints convgen run's predictions for the same images, uint8 and
# float32 agree, and a wrong shape or dtype is refused. Skipped, saying so,
# without python3; the NumPy half is skipped, saying so, without numpy. The
# PyTorch CUDA path needs a GPU: tests/gpu/python_torch.py (docs/library.md).
set -u
. tests/lib.sh
if ! command -v python3 >/dev/null; then
  echo "skip: no python3 (python/convgen.py untested)"
  echo "test_python: 0 passed, 0 failed"; exit 0
fi
export PYTHONPATH=$PWD/python CONVGEN_LIB=$(ls "$PWD"/build/libconvgen.so.*.*.* 2>/dev/null | head -1)
# a library built by make sanitize needs the ASan runtime loaded first, which python is not
if [ -n "$CONVGEN_LIB" ] && nm -D "$CONVGEN_LIB" 2>/dev/null | grep -q ' U __asan_init'; then
  echo "skip: build/libconvgen.so is built with sanitizers (make sanitize); python cannot load it"
  echo "test_python: 0 passed, 0 failed"; exit 0
fi
[ -n "$CONVGEN_LIB" ] && ok || bad "build/libconvgen.so.* missing (make lib)"
# _Options mirrors cg_net_options field by field: the offsets C's compiler gives
# each field are the ones ctypes computes
fields="backend device fatbin tuning no_tuning no_cache streams batch profile poison weights_seed no_graphs no_pdl keep_tensors whole pdl_always"
{ echo '#include <stddef.h>'; echo '#include <stdio.h>'; echo '#include "convgen.h"'
  echo 'int main(void) {'
  for f in $fields; do echo "printf(\"$f %zu\\n\", offsetof(cg_net_options, $f));"; done
  echo 'printf("size %zu\n", sizeof(cg_net_options)); return 0; }'; } >"$t/off.c"
if cc -Iruntime "$t/off.c" -o "$t/off" 2>"$t/e"; then
  "$t/off" >"$t/c_off"
  python3 -c "
import ctypes, convgen
for name, _ in convgen._Options._fields_:
    if name != '_reserved': print(name, getattr(convgen._Options, name).offset)
print('size', ctypes.sizeof(convgen._Options))" >"$t/py_off" 2>&1
  # the C struct fits in ctypes' (whose reserved room takes later fields)
  awk 'NR==FNR { c[$1] = $2; next } $1 == "size" { if (c["size"] > $2) exit 1; next } c[$1] != $2 { exit 1 }' \
    "$t/c_off" "$t/py_off" && [ "$(grep -vc '^size' "$t/py_off")" -eq "$(grep -vc '^size' "$t/c_off")" ] && ok \
    || bad "_Options differs from cg_net_options: C $(tr '\n' ' ' <"$t/c_off"); python $(tr '\n' ' ' <"$t/py_off")"
else bad "offsetof program: $(cat "$t/e")"; fi
"$cg" build specs/ece408-2017.yaml --arch 75 -o "$t/net.cgb" >"$t/e" 2>&1 && ok || bad "build: $(cat "$t/e")"
python3 - "$t/net.cgb" >"$t/out" 2>&1 <<'PY' && ok || bad "ctypes part: $(cat "$t/out")"
import sys, convgen
with convgen.Net(sys.argv[1]) as n:
    assert n.input_shape == (1, 28, 28) and n.classes == 10, (n.input_shape, n.classes)
    assert n.backend == "cpu" and abs(n.scaling[0] - 1 / 255) < 1e-12, (n.backend, n.scaling)
try:
    convgen.Net(sys.argv[1] + ".none")
    raise SystemExit("a missing bundle opened")
except convgen.Error as e:
    assert e.status == 3 and ".none" in str(e), (e.status, str(e))
try:
    convgen.Net(sys.argv[1], backend="gpu")
    raise SystemExit("backend 'gpu' accepted")
except ValueError:
    pass
print("ok")
PY
# a 3-d array is one C x H x W image for a network of C > 1 channels (net.run(x[0])),
# N x H x W images for a one-channel one; H x W is one image of one channel
python3 - >"$t/out" 2>&1 <<'PY' && ok || bad "image shapes: $(cat "$t/out")"
import convgen
s = convgen._image_shape
assert s((3, 32, 32), (3, 32, 32)) == (1, 3, 32, 32), s((3, 32, 32), (3, 32, 32))
assert s((5, 3, 32, 32), (3, 32, 32)) == (5, 3, 32, 32)
assert s((5, 28, 28), (1, 28, 28)) == (5, 1, 28, 28)
assert s((28, 28), (1, 28, 28)) == (1, 1, 28, 28)
for bad, inp in (((5, 32, 32), (3, 32, 32)), ((32, 32), (3, 32, 32)), ((28,), (1, 28, 28))):
    try:
        s(bad, inp)
        raise SystemExit("shape %s accepted for input %s" % (bad, inp))
    except ValueError as e:
        assert "got shape" in str(e), str(e)
print("ok")
PY
# pip install ./python, offline (no build isolation), with whichever python has setuptools and wheel
pp=
for p in python3 /usr/bin/python3; do
  command -v "$p" >/dev/null && "$p" -c 'import setuptools, wheel' 2>/dev/null && "$p" -m pip --version >/dev/null 2>&1 && { pp=$p; break; }
done
if [ -z "$pp" ]; then
  echo "skip: pip install ./python (no python3 with pip, setuptools and wheel)"
else
  cp -r python "$t/pysrc"
  "$pp" -m pip install --no-build-isolation --no-index --no-deps --prefix "$t/pip" "$t/pysrc" >"$t/out" 2>&1 \
    && ok || bad "pip install ./python: $(tail -5 "$t/out")"
  m=$(find "$t/pip" -name convgen.py | head -1)
  [ -n "$m" ] && (cd "$t" && PYTHONPATH=$(dirname "$m") "$pp" -c 'import convgen, sys; assert convgen.__file__ == sys.argv[1], convgen.__file__; print(convgen.version())' "$m") >"$t/out" 2>&1 \
    && grep -qx "$(sed -n 's/^#define CG_VERSION "\(.*\)"/\1/p' base/util.h)" "$t/out" \
    && ok || bad "the pip-installed module: $(cat "$t/out")"
  grep -q "^version = \"$(sed -n 's/^#define CG_VERSION "\(.*\)"/\1/p' base/util.h)\"" python/pyproject.toml \
    && ok || bad "python/pyproject.toml's version is not convgen's (base/util.h)"
fi
py=
for p in python3 /usr/bin/python3; do
  command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null && { py=$p; break; }
done
d=/usr/share/datasets/fashion-mnist
if [ -z "$py" ]; then
  echo "skip: numpy not importable (python/convgen.py's NumPy path untested here)"
elif [ ! -e "$d/t10k-images-idx3-ubyte.gz" ]; then
  echo "skip: NumPy path ($d not found)"
else
  "$py" - "$d/t10k-images-idx3-ubyte.gz" "$t" <<'PY' >"$t/out" 2>&1 && ok || bad "making .npy: $(cat "$t/out")"
import gzip, sys, numpy as np
raw = gzip.open(sys.argv[1]).read()
x = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 28, 28)[:400]
np.save(sys.argv[2] + "/u8.npy", x)
np.save(sys.argv[2] + "/f32.npy", (x.astype(np.float64) * (1 / 255.0)).astype(np.float32))
np.save(sys.argv[2] + "/bad.npy", x.reshape(400, 1, 28, 28)[:, :, :20, :])
np.save(sys.argv[2] + "/i32.npy", x.astype(np.int32))
PY
  "$cg" run "$t/net.cgb" --backend cpu --input "$t/u8.npy" --output "$t/run.csv" >/dev/null 2>"$t/e" && ok || bad "run: $(cat "$t/e")"
  for f in u8 f32; do
    "$py" examples/classify.py "$t/net.cgb" "$t/$f.npy" > "$t/$f.csv" 2>"$t/e" && ok || bad "classify.py $f: $(cat "$t/e")"
    cut -d, -f1,2 "$t/run.csv" | cmp -s - "$t/$f.csv" && ok || bad "classify.py on $f.npy differs from convgen run"
  done
  "$py" - "$t/net.cgb" "$t" <<'PY' >"$t/out" 2>&1 && ok || bad "refusals: $(cat "$t/out")"
import sys, numpy as np, convgen
with convgen.Net(sys.argv[1]) as n:
    p, s = n.run(np.load(sys.argv[2] + "/u8.npy"))
    assert p.dtype == np.int32 and s.shape == (400, 10) and (s.argmax(1) == p).all()
    try:
        n.run(np.load(sys.argv[2] + "/bad.npy"))
        raise SystemExit("a 20x28 input was accepted")
    except convgen.Error as e:
        assert e.status == 2 and "1x20x28" in str(e), str(e)
    try:
        n.run(np.load(sys.argv[2] + "/i32.npy"))
        raise SystemExit("int32 was accepted")
    except TypeError:
        pass
print("ok")
PY
fi
echo "test_python: $pass passed, $fail failed"
[ $fail -eq 0 ]
