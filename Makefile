# Ayatori: the two commands that matter are `make demo` and `make test`.
BUILD_DIR ?= build
CTEST_FLAGS ?= --output-on-failure --no-tests=error
TESTENV := hack/testenv/testenv.sh

.PHONY: all deps configure build testenv test test-unit test-integration test-e2e demo demo-down \
        demo-kubernetes demo-kubernetes-down chaos format format-check tidy bench bench-kubernetes clean

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

# Jobs on the Docker and Kubernetes backends while two leader-elected controller replicas are
# SIGKILLed and dockerd and kube-apiserver restart once each; then a verdict on every Job
# (docs/chaos.md). CHAOS_JOBS=40, CHAOS_SEED=<seed to replay>, CHAOS_SETTLE=180 (seconds).
chaos: build testenv
	@AYATORI_BUILD_DIR=$(BUILD_DIR) hack/chaos.sh

bench: build testenv
	@hack/bench.sh

# N=1000 by default; N=10000 for the large run.
bench-kubernetes: build testenv
	@AYATORI_BUILD_DIR=$(BUILD_DIR) hack/bench-kubernetes.sh --n=$(or $(N),1000)

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

format-check:
	@git ls-files '*.h' '*.cc' | xargs clang-format --dry-run --Werror

tidy: configure
	@git ls-files 'src/*.cc' 'cmd/*.cc' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	@rm -rf $(BUILD_DIR)
