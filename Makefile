# Makefile — builds build/edged and its tests. Knobs: CC NVCC GPU=auto|0|1 NPP=auto|0|1 CFLAGS
# CPPFLAGS LDFLAGS CUDA_HOME CUDA_ARCHS PYTHON. Targets: all deps run test test-gpu bench plots
# clean asan.

CC ?= cc
BUILD ?= build
GPU ?= auto
NPP ?= auto
CUDA_HOME ?= $(firstword $(wildcard /usr/local/cuda) /usr/local/cuda)
NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard $(CUDA_HOME)/bin/nvcc))
# sm_80 and sm_90 machine code plus compute_90 PTX for GPUs newer than the build.
CUDA_ARCHS ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
PORT ?= 8080

ifeq ($(GPU),auto)
  GPU := $(if $(NVCC),1,0)
endif
ifeq ($(GPU),1)
  ifeq ($(NPP),auto)
    NPP := $(if $(wildcard $(CUDA_HOME)/lib64/libnppif.so $(CUDA_HOME)/targets/x86_64-linux/lib/libnppif.so),1,0)
  endif
else
  NPP := 0
endif

PKGS := libpng libmicrohttpd libcjson zlib libdeflate
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(or $(shell pkg-config --libs $(PKGS) 2>/dev/null),-lpng16 -lmicrohttpd -lcjson -lz -ldeflate)

CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes
override CFLAGS += -std=c11 $(WARN) -pthread
override CPPFLAGS += -D_DEFAULT_SOURCE -Iapi -Icpu_ref -Igpu -Iserver -DEDGED_GPU=$(GPU) \
                     -DEDGED_NPP=$(NPP) $(PKG_CFLAGS) -MMD -MP
override CPPFLAGS += $(if $(filter 1,$(DEBUG)),-DEDGED_DEBUG=1)
LDLIBS += $(PKG_LIBS) -lm -pthread

NVCCFLAGS ?= -O3 -lineinfo
# -ftz=false: the gray edge kernel computes exactly in denormals (gpu/edge_fast.cu), so no flag
# given in NVCCFLAGS (--use_fast_math) may flush them
override NVCCFLAGS += -std=c++17 $(CUDA_ARCHS) -ftz=false -Xcompiler -Wall,-Wextra -Werror all-warnings

C_SRCS := $(wildcard api/*.c cpu_ref/*.c server/*.c)
ifeq ($(GPU),1)
  CU_SRCS := $(wildcard gpu/*.cu)
  GPU_C_SRCS := $(filter-out %_stub.c,$(wildcard gpu/*.c))
  LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
  ifeq ($(NPP),1)
    LDLIBS += -lnppif -lnppc -Wl,-rpath,$(CUDA_HOME)/lib64
  endif
  override CPPFLAGS += -I$(CUDA_HOME)/include
else
  CU_SRCS :=
  GPU_C_SRCS := $(wildcard gpu/*_stub.c)
endif

LIB_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(filter-out server/main.c,$(C_SRCS)) $(GPU_C_SRCS)) \
            $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRCS))
MAIN_OBJ := $(BUILD)/server/main.o
TEST_SRCS := $(wildcard tests/test_*.c)
TEST_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
# The worker's GPU loop against a fake gconv, under ASan/UBSan: linked on its own because the
# fake replaces the gconv and engine symbols every other program links for real.
MOCK_SRCS := tests/worker_mock/worker_mock.c tests/worker_mock/mock_gpu.c server/worker.c server/queue.c \
             server/log.c api/errors.c api/image.c api/variant.c api/filter.c api/tuning.c $(wildcard cpu_ref/*.c)
MOCK_BIN := $(BUILD)/tests/test_worker_mock
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

.PHONY: all deps run test test-gpu bench plots clean asan test-asan test-valgrind fuzz fuzz-smoke debug
# Keep the test objects make would treat as intermediate, so a second make does not rebuild them.
.SECONDARY:
all: $(BUILD)/edged $(TEST_BINS) $(BENCH_BINS) $(MOCK_BIN)

$(BUILD)/edged: $(MAIN_OBJ) $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(MOCK_BIN): $(MOCK_SRCS)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -DEDGED_GPU=% -DEDGED_DEBUG=% -MMD -MP,$(CPPFLAGS)) -DEDGED_GPU=1 -Itests -O1 -g -std=c11 $(WARN) -pthread \
	  -fsanitize=address,undefined -fno-omit-frame-pointer $(LDFLAGS) -o $@ $(MOCK_SRCS) $(PKG_LIBS) -lm

$(BUILD)/bench/%: $(BUILD)/tests/bench/%.o $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The web page (server/web) as C arrays in $(BUILD)/gen/web_data.inc, included by server/web_assets.c.
WEB_FILES := $(sort $(wildcard server/web/*.html server/web/*.js server/web/*.css))
$(BUILD)/gen/web_data.inc: $(WEB_FILES) server/web/embed.sh
	sh server/web/embed.sh $@ $(WEB_FILES)
$(BUILD)/server/web_assets.o: $(BUILD)/gen/web_data.inc
$(BUILD)/server/web_assets.o: override CPPFLAGS += -I$(BUILD)/gen

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(filter-out -MMD -MP -D_DEFAULT_SOURCE,$(CPPFLAGS)) $(NVCCFLAGS) -MMD -c -o $@ $<

# Installs the missing Debian/Ubuntu packages (the list lives in docker/deps.sh).
deps:
	@sh docker/deps.sh build test

run: deps
	@$(MAKE) --no-print-directory all
	$(BUILD)/edged serve --port $(PORT)

# Runs every unit test program and the Python suites; the last line sums them all.
test: deps
	@$(MAKE) --no-print-directory all
	@PYTHON=$(PYTHON) BUILD=$(BUILD) sh tests/run_tests.sh

# GPU tests only; fails when no CUDA device is present.
test-gpu: all
	EDGED_REQUIRE_GPU=1 $(BUILD)/tests/test_gpu

bench: all
	$(BUILD)/edged bench

plots:
	$(PYTHON) tests/bench/plots.py $(or $(CSV),tests/bench/results/bench.csv) $(or $(PLOTS),tests/bench/results)

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

# libFuzzer targets (clang): PNG decode, multipart+params request parser, params validator.
FUZZ_SECONDS ?= 60
fuzz: deps
	@sh docker/deps.sh dev
	sh tests/fuzz/build.sh build-fuzz

# Each fuzz target for FUZZ_SECONDS; fails on any crash, leak or sanitizer report.
fuzz-smoke: fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run.sh build-fuzz

# Debug build with the fault-injection switch (EDGED_FAULT, see tests/gpu_faults.sh); never
# part of a release build.
debug:
	@$(MAKE) --no-print-directory BUILD=build-debug DEBUG=1 CFLAGS="-O1 -g" build-debug/edged

clean:
	rm -rf $(BUILD) build-asan build-debug build-fuzz build-vg

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
