# Thin wrapper around CMake. `make demo` and `make test` install what they
# need first (scripts/install-deps.sh, idempotent), so both work on a fresh
# Debian machine.
BUILD ?= build
PREFIX ?= /usr/local
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps build test test-sanitize demo bench install clean fuzz

all: build

deps:
	bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -LE gpu -j $(JOBS) --timeout 300

# The suite again under ASan+UBSan and under TSan, each in its own tree.
test-sanitize: deps
	cmake -S . -B build-asan -DCS_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -LE 'gpu|nosan' -j $(JOBS) --timeout 600
	cmake -S . -B build-tsan -DCS_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && ctest --output-on-failure -LE 'gpu|nosan' -j $(JOBS) --timeout 600

demo: deps
	$(MAKE) build
	bash scripts/demo.sh $(BUILD)

bench: build
	bash bench/run.sh $(BUILD)

fuzz: deps
	bash scripts/fuzz.sh

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-tsan
