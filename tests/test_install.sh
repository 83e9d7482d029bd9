#!/usr/bin/env bash
# test_install.sh — make install PREFIX=tmp places the four kinds of files; a
# program using only convgen.h builds against them through pkg-config alone
# (shared, and static with --static) and, on the CPU backend, gets the same
# accuracy as `convgen run` for the same images; the shared library's soname
# carries the major version and it exports exactly what convgen.h declares.
set -u
. tests/lib.sh
p="$t/prefix"
make --no-print-directory install PREFIX="$p" >"$t/make.log" 2>&1 && ok || { bad "make install: $(tail -3 "$t/make.log")"; }
for f in bin/convgen lib/libconvgen.a lib/libconvgen.so lib/libconvgen.so.0 include/convgen.h lib/pkgconfig/convgen.pc \
         lib/libconvgen-rt.a lib/libconvgen-rt.so lib/libconvgen-rt.so.0 lib/pkgconfig/convgen-rt.pc; do
  [ -e "$p/$f" ] && ok || bad "make install did not place $f"
done
# the Python module, placed beside the library's prefix, finds the library there by itself
if command -v python3 >/dev/null; then
  m=$(find "$p/lib" -name convgen.py | head -1)
  [ -n "$m" ] && ok || bad "make install did not place convgen.py under $p/lib"
  if [ -n "$m" ] && ! nm -D "$p/lib/libconvgen.so" 2>/dev/null | grep -q ' U __asan_init'; then
    (cd "$t" && env -u CONVGEN_LIB -u LD_LIBRARY_PATH PYTHONPATH="$(dirname "$m")" python3 -c \
      'import convgen; convgen.version(); print(convgen._lib._name)') >"$t/out" 2>&1
    grep -qx "$p/lib/libconvgen.so.0" "$t/out" && ok || bad "installed convgen.py loaded: $(cat "$t/out")"
  fi
fi
soname=$(objdump -p "$p/lib/libconvgen.so" 2>/dev/null | awk '$1 == "SONAME" {print $2}')
[ "$soname" = libconvgen.so.0 ] && ok || bad "soname '$soname', expected libconvgen.so.0"
# exported = declared: every function in the header, and nothing else
grep -oE '\bcg_[a-z_0-9]+\(' "$p/include/convgen.h" | tr -d '(' | sort -u > "$t/declared"
nm -D --defined-only "$p/lib/libconvgen.so" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' | sort -u > "$t/exported"
diff "$t/declared" "$t/exported" >"$t/d" && ok || bad "exported symbols differ from convgen.h: $(cat "$t/d")"
# the runtime-only library: the same exports, and neither Lua nor libyaml needed at run time
nm -D --defined-only "$p/lib/libconvgen-rt.so" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' | sort -u > "$t/exported_rt"
diff "$t/declared" "$t/exported_rt" >"$t/d" && ok || bad "libconvgen-rt exports differ from convgen.h: $(cat "$t/d")"
objdump -p "$p/lib/libconvgen-rt.so" | awk '$1 == "NEEDED" {print $2}' > "$t/needed"
grep -qE 'lua|yaml' "$t/needed" && bad "libconvgen-rt.so needs $(tr '\n' ' ' < "$t/needed")" || ok
# the header stands alone, in strict C99 and in C++
printf '#include <convgen.h>\nint main(void) { return cg_net_error(0)[0] == 0; }\n' > "$t/h.c"
cc -std=c99 -pedantic -Wall -Wextra -Werror -I"$p/include" -c "$t/h.c" -o "$t/h.o" 2>"$t/e" && ok || bad "convgen.h in C99: $(cat "$t/e")"
if command -v c++ >/dev/null; then
  c++ -x c++ -Wall -Werror -I"$p/include" -c "$t/h.c" -o "$t/h2.o" 2>"$t/e" && ok || bad "convgen.h in C++: $(cat "$t/e")"
fi
# a library built by make sanitize needs its sanitizers in the program too
san=; nm -D "$p/lib/libconvgen.so" | grep -q ' U __asan_init' && san="-fsanitize=address,undefined"
export PKG_CONFIG_PATH="$p/lib/pkgconfig"
flags=$(pkg-config --cflags --libs convgen) && ok || bad "pkg-config convgen failed"
cc $san -std=c11 -Wall -Wextra -Werror tests/api_client.c $flags -o "$t/client" 2>"$t/e" && ok || bad "client (shared): $(cat "$t/e")"
cc $san -std=c11 -Wall -Wextra -Werror tests/api_client.c $(pkg-config --cflags convgen) "$p/lib/libconvgen.a" \
  $(pkg-config --static --libs-only-other --libs-only-l convgen | sed 's/-lconvgen//') -o "$t/client_static" 2>"$t/e" \
  && ok || bad "client (static): $(cat "$t/e")"
# the client's error path: a missing spec is the API's input status (3) with its message
LD_LIBRARY_PATH="$p/lib" "$t/client" "$t/none.yaml" x y 1 >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && grep -qF "$t/none.yaml" "$t/e" && ok || bad "client on a missing spec: exit $rc $(cat "$t/e")"
d=/usr/share/datasets/fashion-mnist
if [ -e "$d/t10k-images-idx3-ubyte.gz" ]; then
  gzip -dc "$d/t10k-images-idx3-ubyte.gz" > "$t/img"; gzip -dc "$d/t10k-labels-idx1-ubyte.gz" > "$t/lab"
  want=$("$p/bin/convgen" run specs/ece408-2017.yaml --backend cpu --images 1000 2>/dev/null | sed -n 's/^Correctness: \([0-9.]*\) .*/\1/p')
  for c in client client_static; do
    out=$(LD_LIBRARY_PATH="$p/lib" "$t/$c" specs/ece408-2017.yaml "$t/img" "$t/lab" 1000 2>&1)
    got=$(printf '%s\n' "$out" | sed -n 's/^Correctness: \([0-9.]*\) .*/\1/p')
    [ -n "$want" ] && [ "$got" = "$want" ] && ok || bad "$c: accuracy '$got', convgen run says '$want': $out"
    printf '%s\n' "$out" | grep -q "^float input: 1000 of 1000 predictions the same$" && ok || bad "$c float input: $out"
  done
fi
# examples/classify.c: built through pkg-config alone, it classifies an .npy
# with a bundle and prints `convgen run`'s predictions for the same images
cc -std=c11 -Wall -Wextra -Wshadow -Werror $san examples/classify.c $flags -o "$t/classify" 2>"$t/e" && ok \
  || bad "examples/classify.c: $(cat "$t/e")"
if [ -e "$d/t10k-images-idx3-ubyte.gz" ] && "$p/bin/convgen" build specs/ece408-2017.yaml --arch 75 -o "$t/net.cgb" >"$t/e" 2>&1; then
  n=500 h="{'descr': '|u1', 'fortran_order': False, 'shape': (500, 28, 28), }"
  pad=$(( (64 - (${#h} + 11) % 64) % 64 ))
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $(( ${#h} + pad + 1 )))\\x00"; printf '%s' "$h"
    printf "%${pad}s" ''; printf '\n'; tail -c +17 "$t/img" | head -c $((n * 784)); } > "$t/im.npy"
  "$p/bin/convgen" run "$t/net.cgb" --backend cpu --input "$t/im.npy" --output "$t/run.csv" >/dev/null 2>"$t/e" \
    && ok || bad "convgen run net.cgb --input: $(cat "$t/e")"
  LD_LIBRARY_PATH="$p/lib" "$t/classify" "$t/net.cgb" "$t/im.npy" cpu > "$t/classify.csv" 2>"$t/e" && ok \
    || bad "classify: $(cat "$t/e")"
  [ "$(wc -l < "$t/classify.csv")" -eq $((n + 1)) ] && cut -d, -f1,2 "$t/run.csv" | cmp -s - "$t/classify.csv" && ok \
    || bad "classify's predictions differ from convgen run's: $(head -3 "$t/classify.csv")"
  # the same against libconvgen-rt (pkg-config convgen-rt): bundles need no generator
  cc -std=c11 -Wall -Wextra -Werror $san examples/classify.c $(pkg-config --cflags --libs convgen-rt) -o "$t/classify_rt" \
    2>"$t/e" && ok || bad "examples/classify.c against convgen-rt: $(cat "$t/e")"
  LD_LIBRARY_PATH="$p/lib" "$t/classify_rt" "$t/net.cgb" "$t/im.npy" cpu > "$t/classify_rt.csv" 2>"$t/e" \
    && cmp -s "$t/classify.csv" "$t/classify_rt.csv" && ok || bad "classify on libconvgen-rt: $(cat "$t/e")"
  # a network of another input size: the 28x28 images resized as `convgen run --input` resizes them
  if "$p/bin/convgen" build specs/ece408-2018fa.yaml --arch 75 -o "$t/net72.cgb" >"$t/e" 2>&1; then
    "$p/bin/convgen" run "$t/net72.cgb" --backend cpu --input "$t/im.npy" --output "$t/run72.csv" >/dev/null 2>"$t/e" \
      && ok || bad "convgen run net72.cgb --input: $(cat "$t/e")"
    LD_LIBRARY_PATH="$p/lib" "$t/classify" "$t/net72.cgb" "$t/im.npy" cpu > "$t/classify72.csv" 2>"$t/e" \
      && cut -d, -f1,2 "$t/run72.csv" | cmp -s - "$t/classify72.csv" && ok \
      || bad "classify on a 72x72 network: $(cat "$t/e"; head -3 "$t/classify72.csv")"
  else
    bad "build ece408-2018fa: $(cat "$t/e")"
  fi
  LD_LIBRARY_PATH="$p/lib" "$t/classify" "$t/none.cgb" "$t/im.npy" cpu >/dev/null 2>"$t/e"; rc=$?
  [ $rc -eq 3 ] && grep -qF "$t/none.cgb" "$t/e" && ok || bad "classify on a missing bundle: exit $rc $(cat "$t/e")"
else
  [ -e "$d/t10k-images-idx3-ubyte.gz" ] && bad "convgen build net.cgb: $(cat "$t/e")"
fi
echo "test_install: $pass passed, $fail failed"
[ $fail -eq 0 ]
