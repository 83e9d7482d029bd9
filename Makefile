# convgen — build, test, generate.
# ---- settings -------------------------------------------------------------
CUDA_HOME ?= /usr/local/cuda
# fat binary architectures: empty = convgen's default list (the table in runtime/cuda/aot.c)
ARCHS     ?=
CC        ?= cc
PREFIX    ?= /usr/local
# MPI compiler wrapper: build/convgen-mpi is built (and tested) only where it is found
MPICC     ?= mpicc
SPECS     := $(wildcard specs/*.yaml)
# ---------------------------------------------------------------------------

PKGS      := lua5.4 yaml-0.1
LIBDIR     = $(shell pkg-config --variable=libdir lua5.4 2>/dev/null || echo /usr/lib/x86_64-linux-gnu)
GOMP       = $(shell $(CC) -print-file-name=libgomp.a)
CFLAGS    ?= -O2 -g
override CFLAGS += -std=c11 -Wall -Wextra -Wshadow -Werror -fopenmp -fPIC \
             -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
             -Ibase -Igenerator -Iruntime $(addprefix -I,$(RT_DIRS)) -Ibuild -Ibuild/proto -I$(CUDA_HOME)/include
# Lua, libyaml, zlib, protobuf-c and OpenMP are linked statically: the GPU machine has none of them.
LDLIBS     = $(LIBDIR)/liblua5.4.a $(LIBDIR)/libyaml.a $(LIBDIR)/libz.a $(LIBDIR)/libprotobuf-c.a $(GOMP) -ldl -lm -lpthread

GEN_SRC   := $(wildcard base/*.c generator/*.c)
RT_DIRS   := runtime/formats runtime/cpu runtime/cuda runtime/measure runtime/api runtime/cli
RT_SRC    := $(filter-out runtime/api/rt_only.c,$(foreach d,$(RT_DIRS),$(wildcard $(d)/*.c)))
# every template file: templates/FOLDER/*.lua (conv2d/, fc/, ops/, lib/; generator/lua_host.h,
# cg_template_path); a file loose in templates/ is embedded too, so test_template_files refuses it
TPL       := $(sort $(wildcard templates/*.lua templates/*/*.lua))
# runtime/formats/onnx_subset.proto: the ONNX messages `convgen import` reads, compiled by
# protoc-c (protobuf-c-compiler) into build/proto/ (runtime/formats/onnx.c includes its header)
PROTO_OBJ := build/proto/onnx_subset.pb-c.o
OBJ       := $(patsubst %.c,build/%.o,$(GEN_SRC) $(RT_SRC)) build/templates_embed.o $(PROTO_OBJ)
LIB_OBJ   := $(filter-out build/runtime/cli/cli.o,$(OBJ))
TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(patsubst tests/%.c,build/tests/%,$(TEST_SRC))
HAVE_MPI  := $(shell command -v $(MPICC) 2>/dev/null)
MPI_BIN   := $(if $(HAVE_MPI),build/convgen-mpi)

.PHONY: all lib install deps test test-run test-gpu demo generate fatbin clean format sanitize bench ptx sass fuzz fuzz-build

all: build/convgen lib $(MPI_BIN)

# ---- the library (docs/library.md) ----------------------
# libconvgen: everything but the command line. The static archive carries our
# objects only (pkg-config --static adds Lua, libyaml, zlib, OpenMP); the shared
# one links those dynamically (their static archives are not position
# independent) and exports exactly the functions of runtime/convgen.h.
VERSION   := $(shell sed -n 's/^\#define CG_VERSION "\(.*\)"/\1/p' base/util.h)
SOMAJOR   := $(firstword $(subst ., ,$(VERSION)))
CGLIB_OBJ := $(filter-out build/runtime/cli/%,$(OBJ))
SO_LIBS    = -llua5.4 -lyaml -lz -lprotobuf-c -ldl -lm -lpthread

lib: build/libconvgen.a build/libconvgen.so.$(VERSION) build/libconvgen-rt.a build/libconvgen-rt.so.$(VERSION)

build/libconvgen.a: $(CGLIB_OBJ)
	rm -f $@ && ar rcs $@ $^

build/libconvgen.so.$(VERSION): $(CGLIB_OBJ) tools/libconvgen.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libconvgen.so.$(SOMAJOR) -Wl,--version-script=tools/libconvgen.map \
	  -Wl,--no-undefined $(CGLIB_OBJ) $(SO_LIBS) -o $@

# libconvgen-rt: the runtime-only library, for programs that open bundles
# (docs/library.md, "What the library links"): no generator, Lua or embedded templates,
# no tuning records (runtime/api/rt_only.c answers in their place); libyaml (the
# spec inside a bundle is YAML) is linked into it statically, so the shared
# one needs neither liblua nor libyaml at run time. Same header, same exports.
# nor the ONNX importer (runtime/formats/onnx.c, the command's `import`)
RTLIB_OBJ := $(filter-out build/generator/% build/templates_embed.o \
               build/runtime/measure/% build/runtime/formats/onnx.o $(PROTO_OBJ),$(CGLIB_OBJ)) build/runtime/api/rt_only.o
RT_SO_LIBS = $(LIBDIR)/libyaml.a -lz -ldl -lm -lpthread

build/libconvgen-rt.a: $(RTLIB_OBJ)
	rm -f $@ && ar rcs $@ $^

build/libconvgen-rt.so.$(VERSION): $(RTLIB_OBJ) tools/libconvgen.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libconvgen-rt.so.$(SOMAJOR) -Wl,--version-script=tools/libconvgen.map \
	  -Wl,--no-undefined $(RTLIB_OBJ) $(RT_SO_LIBS) -o $@

# make install PREFIX=DIR: bin/convgen, lib/libconvgen{,-rt}.{a,so*}, include/convgen.h,
# lib/pkgconfig/convgen{,-rt}.pc, and the Python module python/convgen.py in PYTHONDIR
# (default: DIR's site-packages for $(PYTHON), DIR/lib/pythonX.Y/site-packages; none
# without a python3), which finds the library in DIR/lib by itself
# (DESTDIR is prepended to every path, as packagers expect)
PYTHON    ?= python3
PYTHONDIR ?= $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("purelib", "posix_prefix", vars={"base": "$(PREFIX)"}))' 2>/dev/null)
install: build/convgen lib
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 build/convgen $(DESTDIR)$(PREFIX)/bin/convgen
	install -m 644 build/libconvgen.a $(DESTDIR)$(PREFIX)/lib/libconvgen.a
	install -m 755 build/libconvgen.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libconvgen.so.$(VERSION)
	ln -sf libconvgen.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libconvgen.so.$(SOMAJOR)
	ln -sf libconvgen.so.$(SOMAJOR) $(DESTDIR)$(PREFIX)/lib/libconvgen.so
	install -m 644 build/libconvgen-rt.a $(DESTDIR)$(PREFIX)/lib/libconvgen-rt.a
	install -m 755 build/libconvgen-rt.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libconvgen-rt.so.$(VERSION)
	ln -sf libconvgen-rt.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libconvgen-rt.so.$(SOMAJOR)
	ln -sf libconvgen-rt.so.$(SOMAJOR) $(DESTDIR)$(PREFIX)/lib/libconvgen-rt.so
	install -m 644 runtime/convgen.h $(DESTDIR)$(PREFIX)/include/convgen.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' tools/convgen.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/convgen.pc
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' tools/convgen-rt.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/convgen-rt.pc
	$(if $(PYTHONDIR),install -d $(DESTDIR)$(PYTHONDIR) && install -m 644 python/convgen.py $(DESTDIR)$(PYTHONDIR)/convgen.py)

deps:
	@tools/deps.sh

build/%.o: %.c $(wildcard base/*.h generator/*.h runtime/*.h $(addsuffix /*.h,$(RT_DIRS)))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

build/proto/%.pb-c.c build/proto/%.pb-c.h: runtime/formats/%.proto
	@mkdir -p build/proto
	protoc-c --proto_path=runtime/formats --c_out=build/proto $<

build/proto/%.o: build/proto/%.c build/proto/%.h
	$(CC) $(CFLAGS) -c $< -o $@

build/runtime/formats/onnx.o: build/proto/onnx_subset.pb-c.h

# Templates are embedded in the binary so it runs anywhere without the source tree.
build/embed: tools/embed.c
	@mkdir -p build
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror $< -o $@

# the folders too: a file moved or removed changes its folder, not the files left
build/templates_embed.c: build/embed $(TPL) $(wildcard templates templates/*/)
	build/embed $(TPL) > $@.tmp && mv $@.tmp $@

build/templates_embed.o: build/templates_embed.c
	$(CC) $(CFLAGS) -c $< -o $@

build/convgen: $(OBJ)
	$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# tools/weights_dtype.c: a safetensors file rewritten as F16, BF16 or F32 (models/ are F16)
build/tools/weights_dtype: tools/weights_dtype.c $(LIB_OBJ)
	@mkdir -p build/tools
	$(CC) $(CFLAGS) $< $(LIB_OBJ) $(LDLIBS) -o $@

# the MPI driver (docs/user-guide.md, "Throughput at scale"): the library plus one main, through
# mpicc with the same compiler and flags (OMPI_CC picks Open MPI's underlying compiler)
build/convgen-mpi: runtime/mpi/convgen_mpi.c $(LIB_OBJ)
	OMPI_CC=$(CC) $(MPICC) $(CFLAGS) $< $(LIB_OBJ) $(LDLIBS) -o $@

build/tests/%: tests/%.c $(LIB_OBJ) $(wildcard tests/*.h)
	@mkdir -p build/tests
	$(CC) $(CFLAGS) -Itests $< $(LIB_OBJ) $(LDLIBS) -o $@

# GPU-only test programs (tests/gpu/*.c), run by tests/gpu/run.sh
build/tests/gpu/%: tests/gpu/%.c $(LIB_OBJ) tests/check.h
	@mkdir -p build/tests/gpu
	$(CC) $(CFLAGS) -Itests $< $(LIB_OBJ) $(LDLIBS) -o $@

# deps first, then a fresh make: the flags above ask pkg-config at parse time,
# so on a new machine they are right only once the packages are there.
test: deps
	@$(MAKE) --no-print-directory test-run

# tests/fake_cuda.c: a stand-in libcuda.so.1 on the host, for tests/test_graph.c
FAKE_CUDA := build/tests/fake/libcuda.so.1
$(FAKE_CUDA): tests/fake_cuda.c tests/fake_cuda.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -Itests -Wl,-soname,libcuda.so.1 $< -o $@

# bench/latency_embed.c: cg_net_run one image at a time, as an embedding program calls it
build/bench/latency_embed: bench/latency_embed.c $(LIB_OBJ)
	@mkdir -p build/bench
	$(CC) $(CFLAGS) $< $(LIB_OBJ) $(LDLIBS) -o $@

# the longest tests first, binaries and scripts alike, longest first by their wall time in
# make test (run-tests.sh starts them in the order given, two at a time, then the rest):
# the short ones then fill the other slot instead of one long test running alone at the end
TEST_SH   := $(wildcard tests/test_*.sh)
TEST_LONG := $(foreach t,test_kernels_compile test_generate test_models.sh test_emulate test_tune.sh test_shapes \
               test_compare.sh test_mpi.sh,$(filter build/tests/$(t) tests/$(t),$(TEST_BIN) $(TEST_SH)))
test-run: build/convgen lib $(MPI_BIN) $(TEST_BIN) $(FAKE_CUDA) build/bench/latency_embed
	@tools/run-tests.sh $(TEST_LONG) $(filter-out $(TEST_LONG),$(TEST_BIN))

test-gpu: deps
	@$(MAKE) --no-print-directory build/convgen build/tests/gpu/api_gpu build/libconvgen-rt.so.$(VERSION)
	@tests/gpu/run.sh

generate: build/convgen
	@for s in $(SPECS); do n=$$(basename $$s .yaml); \
	  build/convgen generate $$s -o generated/$$n || exit 1; done

fatbin: build/convgen
	@mkdir -p build/fatbin
	@for s in $(SPECS); do n=$$(basename $$s .yaml); \
	  build/convgen build $$s $(if $(ARCHS),--arch $(ARCHS)) -o build/fatbin/$$n.fatbin || exit 1; done

demo: deps
	@$(MAKE) --no-print-directory build/convgen
	build/convgen run specs/ece408-2017.yaml

# Under ASan the CPU reference is ~20x slower: test_models.sh runs the first
# 300 images of each model instead of all 10,000 (see its header).
sanitize:
	$(MAKE) clean && LSAN_OPTIONS=suppressions=$(CURDIR)/tools/lsan.supp CG_TEST_IMAGES=300 \
	  $(MAKE) test CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer"

# Only the lines changed since HEAD: the code is laid out by hand, and
# .clang-format reproduces most of that layout but not all (see its header).
format:
	@command -v git-clang-format >/dev/null || { echo "make format: needs git-clang-format (apt-get install clang-format)" >&2; exit 1; }
	git clang-format --force --extensions c,h HEAD -- base generator runtime tests tools

# make ptx SPEC=specs/x.yaml KERNEL=name   — dump PTX / SASS of one generated kernel
ptx sass: build/convgen
	@if [ "$@" = sass ] && ! command -v cuobjdump >/dev/null && ! [ -x $(CUDA_HOME)/bin/cuobjdump ]; then \
	  echo "make sass: needs cuobjdump (CUDA toolkit), found neither on PATH nor in $(CUDA_HOME)/bin; install the toolkit's cuobjdump package or use make ptx" >&2; exit 1; fi
	@build/convgen generate $(SPEC) -o build/dump && \
	  nvcc -arch=sm_90 $(if $(filter ptx,$@),-ptx,-cubin) build/dump/$(KERNEL).cu -o build/dump/$(KERNEL).$(if $(filter ptx,$@),ptx,cubin) && \
	  $(if $(filter ptx,$@),cat build/dump/$(KERNEL).ptx,PATH="$$PATH:$(CUDA_HOME)/bin" cuobjdump -sass build/dump/$(KERNEL).cubin)

# ---- fuzzing: make fuzz [FUZZ_SECONDS=N] (not part of make test; docs/testing.md, "Fuzzing") ----
# libFuzzer harnesses (tests/fuzz/fuzz_*.c) over the library built again with
# clang, ASan and UBSan into build/fuzz/obj. Each runs FUZZ_SECONDS (default
# 30) after replaying tests/fuzz/regress/NAME; any crash, leak, timeout or
# multi-line error fails the run and leaves the input in build/fuzz/artifacts.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?= spec gen safetensors idx idx_gz fatbin manifest cache pattern bundle npy tuning \
                bundle_sections cpu input onnx
FUZZ_CFLAGS   = -g -O1 -std=c11 -Wall -Wextra -Wshadow -Werror -Wno-pass-failed -fopenmp \
                -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
                -Ibase -Igenerator -Iruntime $(addprefix -I,$(RT_DIRS)) -Ibuild -Ibuild/proto -Itests/fuzz -I$(CUDA_HOME)/include \
                -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_LDLIBS   = $(LIBDIR)/liblua5.4.a $(LIBDIR)/libyaml.a $(LIBDIR)/libz.a $(LIBDIR)/libprotobuf-c.a -ldl -lm -lpthread
FUZZ_OBJ     := $(patsubst %.c,build/fuzz/obj/%.o,$(GEN_SRC) $(filter-out runtime/cli/cli.c,$(RT_SRC)) build/templates_embed.c \
                  build/proto/onnx_subset.pb-c.c)
FUZZ_BIN     := $(addprefix build/fuzz/fuzz_,$(FUZZ_TARGETS))

build/fuzz/obj/%.o: %.c $(wildcard base/*.h generator/*.h $(addsuffix /*.h,$(RT_DIRS)))
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

build/fuzz/obj/runtime/formats/onnx.o: build/proto/onnx_subset.pb-c.h

build/fuzz/fuzz_idx_gz: tests/fuzz/fuzz_idx.c tests/fuzz/fuzz.h $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -DFUZZ_GZIP -fsanitize=fuzzer $< $(FUZZ_OBJ) $(FUZZ_LDLIBS) -o $@

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJ) $(FUZZ_LDLIBS) -o $@

fuzz:
	@tools/deps.sh fuzz
	@$(MAKE) --no-print-directory fuzz-build
	@tools/run-fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_BIN)

clean:
	rm -rf build
