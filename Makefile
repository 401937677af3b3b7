# make demo: install missing packages, build, run the main job.
# make test: install missing packages, build, run the test suite.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: all deps configure build test demo docs clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) > /dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	$(BUILD)/backplane info
	$(BUILD)/backplane inventory

# Regenerates the committed documents from the live catalog.
docs: build
	$(BUILD)/backplane inventory --format md > docs/backend-inventory.md

clean:
	rm -rf $(BUILD)
