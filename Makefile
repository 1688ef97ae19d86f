# Thin wrapper over CMake presets: `make run` builds and runs the main job, `make test`
# builds and runs the whole suite.
PRESET ?= default
BUILD  ?= build
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all build run test asan windows clean

all: build

build:
	cmake --preset $(PRESET)
	cmake --build --preset $(PRESET) -j $(JOBS)

run: build
	./$(BUILD)/kiln check
	./$(BUILD)/kiln bench attention --batch 1 --heads 16 --head-dim 64 --dtype bf16 --seqlen 128,512,1024

# ctest's status is the result; the skip list after it says what did not run and why.
test: build
	ctest --preset $(PRESET) -j $(JOBS); status=$$?; \
	cmake -DLOG=$(BUILD)/Testing/Temporary/LastTest.log -P tests/list_skips.cmake; exit $$status

asan:
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

windows:
	JOBS=$(JOBS) tests/windows/run-wine.sh

clean:
	rm -rf build build-asan build-windows-mingw
