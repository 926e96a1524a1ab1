# Makefile — builds build/edged and its tests. Knobs: CC NVCC GPU=auto|0|1 NPP=auto|0|1
# FFT=auto|0|1 NVJPEG=auto|0|1 (NVJPEG_INC NVJPEG_LIBS) CFLAGS CPPFLAGS LDFLAGS CUDA_HOME CUDA_ARCHS PYTHON PREFIX
# DESTDIR V=1 (full command lines). Targets:
# all deps deps-build run test test-gpu bench bench-service plots install uninstall clean asan.

CC ?= cc
BUILD ?= build
GPU ?= auto
NPP ?= auto
FFT ?= auto
NVJPEG ?= auto
CUDA_HOME ?= $(firstword $(wildcard /usr/local/cuda) /usr/local/cuda)
NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard $(CUDA_HOME)/bin/nvcc))
# sm_80 and sm_90 machine code plus compute_90 PTX for GPUs newer than the build.
CUDA_ARCHS ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
PORT ?= 8080
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/edged
DATADIR ?= $(PREFIX)/share/edged
NPROC := $(shell nproc 2>/dev/null || echo 1)
VERSION := $(shell sed -n 's/^\#define EDGED_VERSION "\(.*\)"/\1/p' server/ops/version.h)

# Quiet command lines ("  CC server/cli/main.c"); V=1 prints the full commands.
ifeq ($(V),1)
  Q :=
  say :=
else
  Q := @
  say = @printf '  %s %s\n' $(1) $(2)
endif

ifeq ($(GPU),auto)
  GPU := $(if $(NVCC),1,0)
endif
# cuFFT (variant fft) is linked as the shared libcufft with an rpath, as NPP is: libcufft_static.a
# would add the FFT kernels of every architecture to the binary (hundreds of MB). auto is 1 when
# the toolkit has the library; FFT=0 builds list fft as unavailable.
ifeq ($(GPU),1)
  ifeq ($(NPP),auto)
    NPP := $(if $(wildcard $(CUDA_HOME)/lib64/libnppif.so $(CUDA_HOME)/targets/x86_64-linux/lib/libnppif.so),1,0)
  endif
  ifeq ($(FFT),auto)
    FFT := $(if $(wildcard $(CUDA_HOME)/lib64/libcufft.so $(CUDA_HOME)/targets/x86_64-linux/lib/libcufft.so),1,0)
  endif
else
  NPP := 0
  FFT := 0
endif
# nvJPEG, linked statically so the runtime image needs nothing more: auto is 1 when the toolkit has
# the header and libnvjpeg_static.a. NVJPEG_INC and NVJPEG_LIBS override where they come from (a
# compile check against an unpacked header and the shared library).
NVJPEG_INC ?= $(CUDA_HOME)/include
NVJPEG_LIBS ?= -L$(CUDA_HOME)/lib64 -lnvjpeg_static -lculibos
ifeq ($(GPU),1)
  ifeq ($(NVJPEG),auto)
    NVJPEG := $(if $(and $(wildcard $(NVJPEG_INC)/nvjpeg.h),$(wildcard $(CUDA_HOME)/lib64/libnvjpeg_static.a)),1,0)
  endif
else
  NVJPEG := 0
endif

PKGS := libpng libmicrohttpd libcjson zlib libdeflate libturbojpeg libjpeg libwebp
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(or $(shell pkg-config --libs $(PKGS) 2>/dev/null),-lpng16 -lmicrohttpd -lcjson -lz -ldeflate -lturbojpeg -ljpeg -lwebp)

CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes
override CFLAGS += -std=c11 $(WARN) -pthread
override CPPFLAGS += -D_DEFAULT_SOURCE -Iapi -Icpu_ref -Igpu -Iserver -DEDGED_GPU=$(GPU) \
                     -DEDGED_NPP=$(NPP) -DEDGED_FFT=$(FFT) -DEDGED_NVJPEG=$(NVJPEG) $(PKG_CFLAGS) -MMD -MP
override CPPFLAGS += $(if $(filter 1,$(DEBUG)),-DEDGED_DEBUG=1)
LDLIBS += $(PKG_LIBS) -lm -pthread

NVCCFLAGS ?= -O3 -lineinfo
# -ftz=false: the gray edge kernel computes exactly in denormals (gpu/fast_edge.cu), so no flag
# given in NVCCFLAGS (--use_fast_math) may flush them
override NVCCFLAGS += -std=c++17 $(CUDA_ARCHS) -ftz=false -Xcompiler -Wall,-Wextra -Werror all-warnings

C_SRCS := $(wildcard api/*.c cpu_ref/*.c server/*/*.c)
ifeq ($(GPU),1)
  CU_SRCS := $(wildcard gpu/*.cu)
  GPU_C_SRCS := $(filter-out %_stub.c,$(wildcard gpu/*.c))
  ifeq ($(NVJPEG),1)
    LDLIBS += $(NVJPEG_LIBS)
    override CPPFLAGS += -I$(NVJPEG_INC)
  else
    CU_SRCS := $(filter-out gpu/gconv_jpeg%.cu,$(CU_SRCS))
    GPU_C_SRCS += gpu/gconv_jpeg_stub.c
  endif
  LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
  ifeq ($(NPP),1)
    LDLIBS += -lnppif -lnppc -Wl,-rpath,$(CUDA_HOME)/lib64
  endif
  ifeq ($(FFT),1)
    LDLIBS += -lcufft $(if $(filter 1,$(NPP)),,-Wl,-rpath,$(CUDA_HOME)/lib64)
  endif
  override CPPFLAGS += -I$(CUDA_HOME)/include
else
  CU_SRCS :=
  GPU_C_SRCS := $(wildcard gpu/*.c) # the stubs, and the host C of gpu/ (gpinned.c)
endif

LIB_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(filter-out server/cli/main.c,$(C_SRCS)) $(GPU_C_SRCS)) \
            $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRCS))
MAIN_OBJ := $(BUILD)/server/cli/main.o
TEST_SRCS := $(wildcard tests/unit/test_*.c)
# The nvJPEG test needs the GPU build with nvJPEG.
ifneq ($(NVJPEG),1)
  TEST_SRCS := $(filter-out tests/unit/test_gpu_jpeg.c,$(TEST_SRCS))
endif
TEST_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
# The worker's GPU loop against a fake gconv, under ASan/UBSan: linked on its own because the
# fake replaces the gconv symbols (and the pinned pool's allocator) every other program links for real.
MOCK_SRCS := $(wildcard tests/unit/worker_mock/*.c) server/jobs/worker.c server/jobs/backend.c server/jobs/backend_png.c server/jobs/px_job.c server/jobs/queue.c server/jobs/budget.c gpu/gpinned.c gpu/gconv_jpeg_stub.c \
             server/ops/log.c api/utf8.c api/errors.c api/result.c api/params.c api/params_field.c api/image.c api/variant.c api/filter.c api/tuning.c $(wildcard cpu_ref/*.c)
MOCK_BIN := $(BUILD)/tests/test_worker_mock
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

.PHONY: all deps deps-build run test test-gpu bench bench-service plots man install uninstall clean asan test-asan test-valgrind fuzz fuzz-smoke debug
# Keep the test objects make would treat as intermediate, so a second make does not rebuild them.
.SECONDARY:
all: $(BUILD)/edged $(BUILD)/openapi.yaml $(TEST_BINS) $(BENCH_BINS) $(MOCK_BIN)

$(BUILD)/edged: $(MAIN_OBJ) $(LIB_OBJS)
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/tests/%.o: override CPPFLAGS += -Itests

$(MOCK_BIN): $(MOCK_SRCS)
	@mkdir -p $(dir $@)
	$(call say,CC+LD,$@)
	$(Q)$(CC) $(filter-out -DEDGED_GPU=% -DEDGED_DEBUG=% -MMD -MP,$(CPPFLAGS)) -DEDGED_GPU=1 -Itests -O1 -g -std=c11 $(WARN) -pthread \
	  -fsanitize=address,undefined -fno-omit-frame-pointer $(LDFLAGS) -o $@ $(MOCK_SRCS) $(PKG_LIBS) -lm

$(BUILD)/bench/%: $(BUILD)/tests/bench/%.o $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The API description: its parts (api/openapi/*.yaml, split along the document's sections) joined
# in name order into one openapi.yaml, the file the binary serves, make install installs and the
# tests read.
OPENAPI_PARTS := $(sort $(wildcard api/openapi/*.yaml))
$(BUILD)/openapi.yaml: $(OPENAPI_PARTS)
	$(call say,GEN,$@)
	@mkdir -p $(@D)
	$(Q)cat $(OPENAPI_PARTS) > $@

# The web page (server/http/web) and openapi.yaml as C arrays in $(BUILD)/gen/web_data.inc,
# included by server/http/web_assets.c.
WEB_FILES := $(sort $(wildcard server/http/web/*.html server/http/web/*.js server/http/web/*.css))
$(BUILD)/gen/web_data.inc: $(WEB_FILES) $(BUILD)/openapi.yaml server/http/web/embed.sh
	$(call say,GEN,$@)
	$(Q)sh server/http/web/embed.sh $@ $(WEB_FILES) /openapi.yaml=$(BUILD)/openapi.yaml
$(BUILD)/server/http/web_assets.o: $(BUILD)/gen/web_data.inc
$(BUILD)/server/http/web_assets.o: override CPPFLAGS += -I$(BUILD)/gen

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)
	$(Q)$(NVCC) $(filter-out -MMD -MP -D_DEFAULT_SOURCE,$(CPPFLAGS)) $(NVCCFLAGS) -MMD -c -o $@ $<

# Installs the missing Debian/Ubuntu packages (the list lives in docker/deps.sh): what building
# needs (deps-build, all `make run` asks for) and what the tests need besides.
deps:
	@sh docker/deps.sh build test
deps-build:
	@sh docker/deps.sh build

# Builds only the service (in parallel) and runs it.
run: deps-build
	@$(MAKE) --no-print-directory -j$(NPROC) $(BUILD)/edged
	$(BUILD)/edged serve --port $(PORT)

# Runs every unit test program and the Python suites; the last line sums them all.
test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@PYTHON=$(PYTHON) BUILD=$(BUILD) sh tests/run_tests.sh

# GPU tests only; fails when no CUDA device is present.
test-gpu: all
	EDGED_REQUIRE_GPU=1 $(BUILD)/tests/test_gpu
	$(if $(filter 1,$(NVJPEG)),EDGED_REQUIRE_GPU=1 $(BUILD)/tests/test_gpu_jpeg)
	EDGED_REQUIRE_GPU=1 $(BUILD)/tests/test_gpu_png

bench: all
	$(BUILD)/edged bench

# Load figures of `edged serve` under wrk (req/s, p50/p99, CPU, stage split); knobs BASE_BIN BACKEND
# DURATION SIZES FILTERS CONNS PORT OUT as in tests/bench/service.sh. Without apt (a GPU host), the
# script finds wrk in the carried .debs.
bench-service: $(BUILD)/edged
	-@sh docker/deps.sh bench
	BIN=$${BIN:-$(BUILD)/edged} PYTHON=$(PYTHON) sh tests/bench/service.sh

# Charts of a bench CSV (default: the measurements in docs/perf) into PLOTS (default docs/perf).
plots:
	$(PYTHON) tests/bench/plots.py $(or $(CSV),docs/perf/bench.csv) $(or $(PLOTS),docs/perf)

# The man page: `edged --help`, then a section COMMANDS with every subcommand's --help
# (server/cli/man_commands.sh), through help2man (Debian package help2man); --version from the
# binary when it has it, else the version in server/ops/version.h. install skips it without help2man.
HAVE_HELP2MAN := $(shell command -v help2man 2>/dev/null)
man: $(BUILD)/edged.1
$(BUILD)/edged.1: $(BUILD)/edged server/cli/man_commands.sh
	@command -v help2man >/dev/null 2>&1 || { echo "man: help2man not found (Debian package help2man)" >&2; exit 1; }
	@echo "  MAN $@"
	$(Q)sh server/cli/man_commands.sh $(BUILD)/edged > $(BUILD)/edged.h2m
	$(Q)v=; $(BUILD)/edged --version >/dev/null 2>&1 || v="--version-string=$(VERSION)"; \
	  help2man --no-info --no-discard-stderr -n "GPU image convolution and edge detection service" \
	    --include $(BUILD)/edged.h2m $$v -o $@ $(BUILD)/edged

INSTALL_DOCS := README.md $(wildcard docs/*.md)
CLIENT_FILES := $(wildcard docs/clients/*.py docs/clients/*.mjs)
# The binary into $(DESTDIR)$(BINDIR), its man page, the docs into $(DOCDIR) and openapi.yaml
# into $(DATADIR) (EDGED_OPENAPI names it).
install: $(BUILD)/edged $(BUILD)/openapi.yaml $(if $(HAVE_HELP2MAN),$(BUILD)/edged.1)
	install -D -m 0755 $(BUILD)/edged $(DESTDIR)$(BINDIR)/edged
	$(if $(HAVE_HELP2MAN),install -D -m 0644 $(BUILD)/edged.1 $(DESTDIR)$(MANDIR)/man1/edged.1,\
	  @echo "install: help2man not found (Debian package help2man): no man page installed")
	install -d $(DESTDIR)$(DOCDIR)
	install -m 0644 $(INSTALL_DOCS) $(DESTDIR)$(DOCDIR)
	install -d $(DESTDIR)$(DOCDIR)/clients
	install -m 0644 $(CLIENT_FILES) $(DESTDIR)$(DOCDIR)/clients
	install -D -m 0644 $(BUILD)/openapi.yaml $(DESTDIR)$(DATADIR)/openapi.yaml

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/edged $(DESTDIR)$(MANDIR)/man1/edged.1 $(DESTDIR)$(DATADIR)/openapi.yaml
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(INSTALL_DOCS))) \
	  $(addprefix $(DESTDIR)$(DOCDIR)/clients/,$(notdir $(CLIENT_FILES)))
	@rmdir $(DESTDIR)$(DOCDIR)/clients $(DESTDIR)$(DOCDIR) $(DESTDIR)$(DATADIR) 2>/dev/null || true

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan GPU=0 \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined" all

# The whole suite against an ASan+UBSan build (CPU backend).
test-asan: deps asan
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 PYTHON=$(PYTHON) BUILD=build-asan sh tests/run_tests.sh

# The C tests and the server under valgrind memcheck (CPU backend).
test-valgrind: deps
	@sh docker/deps.sh dev
	@PYTHON=$(PYTHON) sh tests/valgrind/run.sh

# libFuzzer targets (clang): PNG decode, multipart+params request parser, params validator, the
# speculative inflate against libdeflate.
FUZZ_SECONDS ?= 60
fuzz: deps
	@sh docker/deps.sh dev
	sh tests/fuzz/build.sh build-fuzz

# Each fuzz target for FUZZ_SECONDS; fails on any crash, leak or sanitizer report.
fuzz-smoke: fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run.sh build-fuzz

# Debug build with the fault-injection switch (EDGED_FAULT, see tests/gpu_host/gpu_faults.sh); never
# part of a release build.
debug:
	@$(MAKE) --no-print-directory BUILD=build-debug DEBUG=1 CFLAGS="-O1 -g" build-debug/edged

clean:
	rm -rf $(BUILD) build-asan build-debug build-fuzz build-vg

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
