# make demo: install missing packages, build, run the main job.
# make test: install missing packages, build, run the test suite.
BUILD ?= build
# ccache keys on relative paths, so clones in other folders (CI) reuse the cache.
export CCACHE_BASEDIR := $(CURDIR)
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: all deps configure build test python-test demo docs clean asan asan-ci tsan fuzz fuzz-smoke

all: build

deps:
	@scripts/install-deps.sh
	@scripts/fetch-models.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) > /dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	scripts/python-check.sh

# Sanitizer builds, siblings of build/ (ccache keys on paths relative to CCACHE_BASEDIR).
# make asan: every test under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on);
# any report fails its test. make tsan: the threaded tests under ThreadSanitizer, built with clang-14
# and libomp so that TSan sees OpenMP's synchronisation (scripts/tsan.sh says how).
# BACKPLANE_TEST_SIZE=lean (set here) shrinks the few tests that are slow under ASan.
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
SAN_ENV := BACKPLANE_TEST_SIZE=lean \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=0 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/sanitizers/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# -O1 -g1 and no SSSE3/SSE4 kernels (6144 = HWY_SSSE3 | HWY_SSE4; the plain conformance matrix
# covers them) shorten the cold build; scalar, AVX2 and AVX-512 kernels remain.
# make asan-ci (what .ci/run calls) and make tsan also drop AVX2 (SAN_LEAN_TARGETS: 6656 = 6144 |
# HWY_AVX2): the emulated 128-bit and the AVX-512 kernels remain. asan-ci also compiles the test
# sources at -O0, which keeps the cold build and the suite inside CI's budget.
SAN_LEAN_TARGETS := 6656
ASAN_DISABLED_TARGETS ?= 6144
ASAN_TEST_CXX_FLAGS ?=
ASAN_TESTS := core_tests catalog_tests cpu_reference_tests conformance_tests llm_tests encoder_tests \
	runtime_tests onnx_tests
asan: deps
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS=-DHWY_DISABLED_TARGETS=$(ASAN_DISABLED_TARGETS)" \
	    -DBACKPLANE_XLA=OFF -DBACKPLANE_SANITIZE=address,undefined \
	    "-DBACKPLANE_TEST_CXX_FLAGS=$(ASAN_TEST_CXX_FLAGS)" > /dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS) --target backplane_cli $(ASAN_TESTS) fuzz_replays
	$(SAN_ENV) ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) $(ASAN_CTEST_ARGS)

asan-ci:
	@$(MAKE) --no-print-directory asan ASAN_BUILD=build-asan-ci ASAN_DISABLED_TARGETS=$(SAN_LEAN_TARGETS) \
	    ASAN_TEST_CXX_FLAGS=-O0

tsan: deps
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS=-DHWY_DISABLED_TARGETS=$(SAN_LEAN_TARGETS)" \
	    -DBACKPLANE_SANITIZE=thread -DBACKPLANE_XLA=OFF > /dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS) --target core_tests runtime_tests conformance_tests
	scripts/tsan.sh $(TSAN_BUILD)

# libFuzzer targets (fuzz/): clang-14, library built with fuzzer-no-link,address,undefined, with
# the emulated 128-bit kernels only (the fuzzers exercise parsers and planning, not kernels).
FUZZ_BUILD ?= build-fuzz
fuzz: deps
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	    "-DCMAKE_CXX_FLAGS=-DHWY_COMPILE_ONLY_EMU128" -DBACKPLANE_FUZZ=ON -DBACKPLANE_XLA=OFF > /dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers

# Every fuzz target over its committed corpus for a fixed number of runs (CI).
fuzz-smoke: fuzz
	scripts/fuzz-smoke.sh $(FUZZ_BUILD)

# The Python package: builds the wheel, installs it into a fresh venv, runs pytest against it.
python-test: deps
	scripts/python-check.sh

# The main job: train the digits classifier from its graph file, generate text with SmolLM2-135M
# (the GGUF fetched by scripts/fetch-models.sh), embed three sentences with all-MiniLM-L6-v2, then
# print the inventory summary.
DIGITS := $(BUILD)/examples/digits
BACKPLANE_CACHE ?= $(HOME)/.cache/backplane
SMOLLM2 := $(BACKPLANE_CACHE)/models/SmolLM2-135M-Instruct.Q4_1.gguf
MINILM := $(BACKPLANE_CACHE)/models/all-MiniLM-L6-v2
demo: build
	$(BUILD)/backplane info
	/usr/bin/python3 examples/digits/prepare.py $(DIGITS)
	$(BUILD)/backplane train examples/digits/train.json \
	    --data x=$(DIGITS)/train_x.npy --data y=$(DIGITS)/train_y.npy \
	    --epochs 15 --batch-size 32 --seed 1 \
	    --eval examples/digits/eval.json \
	    --eval-data x=$(DIGITS)/test_x.npy --eval-data onehot=$(DIGITS)/test_onehot.npy \
	    --save-params $(DIGITS)/params.safetensors
	$(BUILD)/backplane generate --model $(SMOLLM2) --prompt "Once upon a time, there was a little" -n 32
	$(BUILD)/backplane generate --model $(SMOLLM2) --chat "What is the capital of France?" -n 48
	$(BUILD)/backplane embed --model $(MINILM) -q --similarity --output $(BUILD)/embeddings.npy \
	    --text "A man is eating food." --text "A man is eating a piece of bread." --text "The girl is carrying a baby."
	$(BUILD)/backplane inventory --format summary

# Regenerates the committed documents from the live catalog and a conformance run on this machine.
docs: build
	$(BUILD)/backplane inventory --format md > docs/backend-inventory.md
	$(BUILD)/backplane verify --write-docs docs
	$(BUILD)/backplane verify --device xla --write-docs docs

clean:
	rm -rf $(BUILD)
