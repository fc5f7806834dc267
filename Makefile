# Ayatori: the two commands that matter are `make demo` and `make test`.
BUILD_DIR ?= build
CTEST_FLAGS ?= --output-on-failure --no-tests=error
TESTENV := hack/testenv/testenv.sh
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60

.PHONY: all deps configure build testenv test test-unit test-integration test-e2e demo demo-down \
        demo-kubernetes demo-kubernetes-down format format-check tidy bench bench-kubernetes fuzz fuzz-ci \
        clean

all: build

deps:
	@hack/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAYATORI_WERROR=ON >/dev/null

build: configure
	@cmake --build $(BUILD_DIR)

# Builds (once per machine, cached outside the repository) the pinned control-plane binaries.
testenv: deps
	@$(TESTENV) build e2e

# Installs what is missing, builds, starts what each tier needs (through CTest fixtures) and
# runs every tier: unit, integration (real kube-apiserver + etcd), e2e (real backends).
test: build testenv
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS)

test-unit: build
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -L unit

test-integration: build testenv
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -L integration

test-e2e: build testenv
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -L e2e

demo: build testenv
	@hack/demo.sh up

demo-down:
	@hack/demo.sh down

# The Kubernetes backend on the e2e control plane (kwok simulates the node): a Job that succeeds,
# one that fails and one cancelled while it runs.
demo-kubernetes: build testenv
	@hack/demo.sh up-kubernetes

demo-kubernetes-down:
	@hack/demo.sh down-kubernetes

bench: build testenv
	@hack/bench.sh

# N=1000 by default; N=10000 for the large run.
bench-kubernetes: build testenv
	@AYATORI_BUILD_DIR=$(BUILD_DIR) hack/bench-kubernetes.sh --n=$(or $(N),1000)

# libFuzzer (clang-14) on every decoder of outside bytes, FUZZ_SECONDS each (default 60) from the
# seed corpora of fuzz/corpus, in the tree FUZZ_BUILD_DIR (default build-fuzz); see hack/fuzz.sh.
fuzz: deps
	@FUZZ_BUILD_DIR=$(FUZZ_BUILD_DIR) FUZZ_SECONDS=$(FUZZ_SECONDS) hack/fuzz.sh

# The same, briefly, for CI.
fuzz-ci: deps
	@FUZZ_BUILD_DIR=$(FUZZ_BUILD_DIR) FUZZ_SECONDS=10 hack/fuzz.sh

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

format-check:
	@git ls-files '*.h' '*.cc' | xargs clang-format --dry-run --Werror

tidy: configure
	@git ls-files 'src/*.cc' 'cmd/*.cc' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	@rm -rf $(BUILD_DIR)
