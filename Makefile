# Thin wrapper over CMake presets: `make run` builds and runs the main job, `make test`
# builds and runs the whole suite.
PRESET ?= default
BUILD  ?= build
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all build run test asan windows wheel wheel-windows clean

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

# dist/kiln-<version>-py3-none-<platform>.whl (GPU_ARCHS="gfx1151;gfx1201" adds code
# objects); works offline with Debian's python3-setuptools, python3-wheel, python3-build.
DIST ?= dist
PYTHON ?= python3
wheel:
	MAX_JOBS=$(JOBS) $(PYTHON) -m build --wheel --no-isolation --outdir $(DIST) .

# The same for Windows (win_amd64), cross-built with MinGW-w64.
wheel-windows:
	KILN_WHEEL_PLATFORM=win_amd64 MAX_JOBS=$(JOBS) $(PYTHON) -m build --wheel --no-isolation \
		--outdir $(DIST) .

clean:
	rm -rf build build-asan build-windows-mingw build-wheel build-wheel-win_amd64 dist
