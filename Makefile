# Entry points. Each target installs what it needs first (scripts/setup.sh), so
# `make demo` and `make test` work on a fresh Debian 12 machine.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

JOBS       ?= 2
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
CMAKE_ARGS ?=
DEMO_DIR   ?= $(BUILD)/demo-trace
# Sanitizer builds skip tests labelled `slow`.
SAN_CTEST_ARGS ?= -LE slow
# libFuzzer: seconds per target in `make test` (smoke) and in `make fuzz`.
FUZZ_SMOKE_SECONDS ?= 15
FUZZ_SECONDS ?= 600
FUZZ_CORPUS ?= fuzz/corpus
# `make soak`: seconds of tests/soak in the ASan+UBSan and in the TSan build (ctest runs 30 s).
SOAK_SECONDS ?= 600

HUSH  := $(BUILD)/tools/hushtrace/hushtrace
CTEST := ctest --output-on-failure --no-tests=error -j$(JOBS) --test-dir
# The sanitizer, fuzz and aarch64 builds keep line tables and function names (-g1: what their
# reports and backtraces print) but no full debug information. Measured on one TU each (user CPU,
# g++ 12): tools/hushtrace/cmd_record.cc (CLI11) 13.2 s with -g, 7.9 s with -g1; a GoogleTest file
# (tests/sched/process_lifecycle_test.cc) 9.6 s and 8.0 s. Not -O1 (tried: an ASan compile of
# tools/hushtrace/cmd_report.cc takes 38 s instead of 64 s), because the function-tracing tests
# assume the code gcc makes at -O2 for their traced programs (FuncViewsTest.ReportAgreesWithUftrace
# OnRecursion failed under ASan at -O1). `make test` compiles the tree five times on 2 cores.
LEAN_DEBUG := "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
SAN_CMAKE_ARGS := -DHUSH_BUILD_BENCHMARKS=OFF $(LEAN_DEBUG)
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
TSAN_ENV := TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
SOURCES = $(shell find include src tools tests bench examples -type f \
            \( -name '*.h' -o -name '*.cc' -o -name '*.hpp' -o -name '*.cpp' \) 2>/dev/null)

# $(call configure_build,DIR,EXTRA_CMAKE_ARGS)
configure_build = cmake -S . -B $(1) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(2) $(CMAKE_ARGS) \
                  && cmake --build $(1) -j$(JOBS)

.PHONY: all build setup setup-peers demo test check test-normal test-install test-asan test-tsan \
        test-fuzz fuzz fuzz-build soak bench clean format format-check tidy test-aarch64

all: build

setup:
	@scripts/setup.sh

setup-peers:
	@scripts/setup-peers.sh

build: setup
	$(call configure_build,$(BUILD))

demo: build
	rm -rf $(DEMO_DIR)
	$(HUSH) record -o $(DEMO_DIR) -e 'demo:*' -- $(BUILD)/examples/demo_server
	$(HUSH) report $(DEMO_DIR)
	@echo "demo: trace written to $(DEMO_DIR); babeltrace2 $(DEMO_DIR) reads it too"

# The edit-build-test loop: the normal build's fast tests (< 3 min on 2 cores) and the layer
# check. Tests labelled `slow` (also skipped by the sanitizer builds), `long` (minutes; run by
# `make test` in every build), `soak` and `install` are left to `make test`.
CHECK_EXCLUDE ?= slow|long|soak|install
check: setup
	$(call configure_build,build)
	python3 scripts/check_layers.py
	$(CTEST) build -LE '$(CHECK_EXCLUDE)'
	@echo "check: passed (make test runs everything, in every build)"

# Stops at the first failing step.
test: setup
	@$(MAKE) --no-print-directory -j1 test-normal test-install test-asan test-tsan test-fuzz test-aarch64
	@echo "test: all builds passed"

test-normal: setup
	$(call configure_build,build)
	$(CTEST) build

# Skipped here once the install test is registered with ctest as install_consumer.
test-install: test-normal
	@if ctest --test-dir build -N -R '^install_consumer$$' | grep -q 'Total Tests: 0'; then \
	  tests/install/run.sh build; \
	else echo "test-install: run by ctest"; fi

test-asan: setup
	$(call configure_build,build-asan,$(SAN_CMAKE_ARGS) -DHUSH_SANITIZE=address)
	$(ASAN_ENV) $(CTEST) build-asan $(SAN_CTEST_ARGS)

test-tsan: setup
	$(call configure_build,build-tsan,$(SAN_CMAKE_ARGS) -DHUSH_SANITIZE=thread)
	$(TSAN_ENV) $(CTEST) build-tsan $(SAN_CTEST_ARGS)

# The aarch64 tier: cross-built (cmake/toolchains/aarch64-linux-gnu.cmake), run under qemu-aarch64
# by ctest. Traces written under the emulator are read by the native build's hush_bt_dump,
# babeltrace2 and hushtrace (the format is the same on both). Tests qemu-user cannot run skip
# with the reason. AARCH64_CTEST_ARGS picks the tests (default: all but the slow ones).
AARCH64_CTEST_ARGS ?= -LE slow
test-aarch64: setup
	cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS) \
	  && cmake --build build -j$(JOBS) --target hush_bt_dump hushtrace
	$(call configure_build,build-aarch64,$(SAN_CMAKE_ARGS) \
	  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DHUSH_HOST_BUILD_DIR=$(CURDIR)/build)
	$(CTEST) build-aarch64 $(AARCH64_CTEST_ARGS)

# The fuzz targets (fuzz/, clang + libFuzzer + ASan/UBSan). Seeds come from traces recorded by the
# normal build's test programs (fuzz/make_corpus.sh); the corpus grows in $(FUZZ_CORPUS).
fuzz-build: setup
	CC=clang CXX=clang++ $(call configure_build,build-fuzz,-DHUSH_FUZZ=ON $(LEAN_DEBUG))

test-fuzz: test-normal fuzz-build
	fuzz/make_corpus.sh build $(FUZZ_CORPUS)
	fuzz/run.sh build-fuzz $(FUZZ_CORPUS) $(FUZZ_SMOKE_SECONDS)

fuzz: build fuzz-build
	fuzz/make_corpus.sh $(BUILD) $(FUZZ_CORPUS)
	fuzz/run.sh build-fuzz $(FUZZ_CORPUS) $(FUZZ_SECONDS)

soak: setup
	$(call configure_build,build-asan,$(SAN_CMAKE_ARGS) -DHUSH_SANITIZE=address)
	$(call configure_build,build-tsan,$(SAN_CMAKE_ARGS) -DHUSH_SANITIZE=thread)
	$(ASAN_ENV) build-asan/tests/soak/hush_soak $(SOAK_SECONDS) build-asan/soak-traces
	$(TSAN_ENV) build-tsan/tests/soak/hush_soak $(SOAK_SECONDS) build-tsan/soak-traces

bench: build setup-peers
	@if [ -x $(BUILD)/bench/hushtrace_bench ]; then $(BUILD)/bench/hushtrace_bench; \
	else echo "bench: no $(BUILD)/bench/hushtrace_bench"; fi
	@if [ -f bench/run_all.sh ]; then bash bench/run_all.sh; fi

# The workload suite side by side with LTTng-UST and uftrace (bench/compare/run.py, docs/benchmarks.md
# "Workloads side by side"): ~10 min, rewrites its table in docs/benchmarks.md. ARGS=--quick (or
# bench-compare-quick): the <= 2 min smoke run, results in $(BUILD)/compare-quick.json only.
.PHONY: bench-compare bench-compare-quick
bench-compare: build setup-peers
	python3 bench/compare/run.py --build-dir $(BUILD) $(ARGS)

bench-compare-quick: build setup-peers
	python3 bench/compare/run.py --quick --build-dir $(BUILD) $(ARGS)

clean:
	rm -rf $(BUILD) build build-asan build-tsan build-fuzz build-aarch64

format:
	clang-format -i $(SOURCES)

format-check:
	clang-format --dry-run -Werror $(SOURCES)

tidy: build
	run-clang-tidy -p $(BUILD) -j$(JOBS) -quiet '^$(CURDIR)/(src|tools)/'
