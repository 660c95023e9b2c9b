# The two set-up commands: `make run` and `make test`. Both install what is
# missing (Debian packages via apt, npm packages from the lock file), build, and
# then run the demo server or every test.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
JOBS       ?= $(shell nproc)

.PHONY: all deps build build-asan build-fuzz run test test-release test-asan test-fuzz bench clean

all: build

deps:
	./deploy/install-deps.sh
	command -v npm >/dev/null 2>&1 || ./deploy/install-deps.sh clients/web/debian-packages.txt
	# npm packages from the lock files: the JavaScript client (protobufjs; typescript for its
	# tests) and the viewer's browser-test driver (playwright-core).
	for d in clients/js clients/web; do \
	  [ $$d/node_modules/.package-lock.json -nt $$d/package-lock.json ] || \
	    (cd $$d && npm ci --no-audit --no-fund) || exit 1; \
	done

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DCROWD_SANITIZE=ON -DCROWD_BROWSER_TESTS=OFF
	cmake --build $(BUILD_ASAN) -j $(JOBS)

# The libFuzzer targets (clang, ASan+UBSan, coverage): only they and what they link.
build-fuzz: deps
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCROWD_FUZZ=ON \
	  -DCROWD_BENCH=OFF -DCROWD_BROWSER_TESTS=OFF
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target crowd_fuzz_all

run: build
	$(BUILD)/server/crowd-server --demo

# Every test in the Release build, then again under ASan+UBSan, then each fuzz
# target over its corpus (replay only; long runs: tests/bench/fuzz.sh).
test: test-release test-asan test-fuzz

test-release: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd $(BUILD_ASAN) && ctest --output-on-failure -j $(JOBS) -LE 'bench'

test-fuzz: build-fuzz
	cd $(BUILD_FUZZ) && ctest --output-on-failure -j $(JOBS) -L fuzz

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
