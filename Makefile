# Thin wrapper around CMake. `make demo` and `make test` install what they
# need first (scripts/install-deps.sh, idempotent), so both work on a fresh
# Debian machine.
BUILD ?= build
PREFIX ?= /usr/local
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps build test test-sanitize test-hog demo accuracy bench install clean fuzz

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
# The preloaded shim comes before the runtime in the library list (hence
# verify_asan_link_order=0); leaks at exit do not fail a test, the fuzzers
# check leaks per input (docs/reliability.md). Label nosan: no sanitizer;
# notsan: ASan+UBSan only.
SAN_ASAN_ENV = ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:abort_on_error=0 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
SAN_TSAN_ENV = TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0
test-sanitize: deps
	cmake -S . -B build-asan -DCS_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-asan -j $(JOBS)
	cd build-asan && $(SAN_ASAN_ENV) ctest --output-on-failure -LE 'gpu|nosan' -j $(JOBS) --timeout 600
	cmake -S . -B build-tsan -DCS_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && $(SAN_TSAN_ENV) ctest --output-on-failure -LE 'gpu|nosan|notsan' -j $(JOBS) --timeout 600

# The timing-sensitive tests (label timing) once more beside a CPU hog
# (test/hog.sh), one at a time: CI's check that they hold on a busy box.
test-hog: build
	cd $(BUILD) && sh $(CURDIR)/test/hog.sh ctest --output-on-failure -L timing -LE gpu --timeout 600

demo: deps
	$(MAKE) build
	bash scripts/demo.sh $(BUILD)

# The accuracy corpus (docs/accuracy.md): every planted cause recorded
# ACCURACY_COUNT times and scored against the workloads' own meters.
# ACCURACY_ARGS adds options, e.g. ACCURACY_ARGS="--cases pipe_fork --keep /tmp/acc".
ACCURACY_COUNT ?= 10
ACCURACY_ARGS ?=
accuracy: deps
	$(MAKE) build
	python3 scripts/accuracy.py --build $(BUILD) --count $(ACCURACY_COUNT) $(ACCURACY_ARGS)

bench: build
	bash bench/run.sh $(BUILD)

fuzz: deps
	bash scripts/fuzz.sh

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-tsan
