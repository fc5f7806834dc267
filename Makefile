# Ayatori: the two commands that matter are `make demo` and `make test`.
BUILD_DIR ?= build
CTEST_FLAGS ?= --output-on-failure --no-tests=error
TESTENV := hack/testenv/testenv.sh
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60

.PHONY: all deps configure build testenv test test-unit test-integration test-e2e test-realnode test-kueue testenv-kueue \
        demo demo-down \
        demo-kubernetes demo-kubernetes-down demo-opensandbox demo-opensandbox-down demo-install \
        demo-install-down docs-test test-versions \
        bench-opensandbox format format-check tidy bench bench-kubernetes bench-startup bench-scale \
        bench-failover bench-flood clean \
        configure-asan configure-tsan build-asan build-tsan test-asan test-tsan fuzz fuzz-ci chaos \
        image dist install-manifests install-manifests-namespaced generate

all: build

deps:
	@hack/install-deps.sh

CMAKE_FLAGS := -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAYATORI_WERROR=ON -DAYATORI_LINE_TABLES_ONLY=ON

configure: deps
	@cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR)

# The controller image, offline (hack/image.sh): the stripped binary, the Debian libraries it loads,
# CA certificates and a non-root user, no shell; `docker import`ed as ayatori/controller:<version>
# into $$DOCKER_HOST, else into the project's dockerd (hack/dockerd.sh). Prints its size.
image: configure
	@cmake --build $(BUILD_DIR) --target ayatori-controller
	@AYATORI_BUILD_DIR=$(BUILD_DIR) hack/image.sh build

# The kubectl plugin's release archive (hack/dist.sh; docs/kubectl-ayatori.md, "Install"): in
# dist/release/, kubectl-ayatori_<version>_linux_<arch>.tar.gz (the binary and lib/ with every
# library it loads but glibc's), its .sha256 and ayatori.yaml, the krew manifest filled in.
dist: configure
	@AYATORI_BUILD_DIR=$(BUILD_DIR) hack/dist.sh dist/release

# Everything a cluster needs in one file (config/default: CRDs, namespace, RBAC, admission
# policy, Deployment, metrics Service), like kubebuilder's build-installer; see docs/install.md.
# dist/install-pre-1.36.yaml: the same without what kube-apiserver < 1.36 does not serve (the
# finalizer policy; docs/install.md, "Supported Kubernetes versions").
install-manifests:
	@hack/install-manifests.sh dist/install.yaml
	@hack/install-manifests.sh --kube-version 1.35 dist/install-pre-1.36.yaml

# The namespaced install for NAMESPACES (comma-separated; docs/install.md, "Namespaced install").
NAMESPACES ?= team-a
install-manifests-namespaced:
	@hack/install-manifests.sh --namespaces $(NAMESPACES) dist/install-namespaced.yaml

# Rewrites the blocks of config/ that name the shipped backends (the RBAC rule of the parameters
# informers, the JobClass CEL rules) from their descriptors (src/adapters/manifests.h);
# adapters_manifests_test fails until this has run after a backend is added or changed. Then the
# Helm chart's copies of config/ (hack/chart-files.py; install_helm_chart_render_test checks them).
generate: configure
	@cmake --build $(BUILD_DIR) --target generate-manifests
	@$(BUILD_DIR)/cmd/generate-manifests/generate-manifests $(CURDIR)
	@python3 hack/chart-files.py

# Builds (once per machine, cached outside the repository) the pinned control-plane binaries and
# Helm (charts/ayatori's tests, test/install/helm_chart_test.py). The real node's kubelet is built
# by test-realnode, demo-kubernetes NODE=real and bench-kubernetes NODE=real only.
testenv: deps
	@$(TESTENV) build e2e
	@$(TESTENV) build-helm

# Installs what is missing, builds, starts what each tier needs (through CTest fixtures) and
# runs every tier: unit, integration (real kube-apiserver + etcd), e2e (real backends); the real
# node's tests are test-realnode's, Kueue's test-kueue's.
test: build testenv
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -LE 'realnode|kueue'

test-unit: build
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -L unit

test-integration: build testenv
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -L integration

test-e2e: build testenv
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -L e2e -LE 'realnode|kueue'

# Supported versions (docs/install.md): the install on the oldest and the newest tested Kubernetes
# besides the pin (KUBE_VERSION, hack/testenv/k8s-*/): install_e2e_test (dist/install.yaml as
# install-manifests.sh --kube-version cluster renders it, Jobs on the Docker and Kubernetes
# backends) and the Helm chart's install test, each on that version's control plane. Not part of
# `make test`: each version is a control plane of its own to build (once per machine) and run.
KUBE_VERSIONS ?= 1.34 1.37
test-versions: build
	@$(TESTENV) build-helm
	@for v in $(KUBE_VERSIONS); do \
	  echo "== Kubernetes $$v"; \
	  KUBE_VERSION=$$v $(TESTENV) build e2e || exit 1; \
	  (cd $(BUILD_DIR) && KUBE_VERSION=$$v ctest $(CTEST_FLAGS) \
	    -R '^(install_e2e_test|install_helm_chart_install_test)$$') || exit 1; \
	done

# The Kubernetes backend on a real node (kubelet + containerd, hack/testenv/realnode.sh): its
# fixtures and e2e tests (label realnode, about 2.5 minutes with the fixtures, the kubelet built
# once per machine). Not part of `make test` / `make test-e2e`: the kubelet's build and these
# tests do not fit CI's 60 minutes on a fresh machine (docs/development.md "CI"); run it before
# changing the Kubernetes backend.
test-realnode: build testenv
	@$(TESTENV) build node
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -L realnode

# Kueue v0.17.0 beside the api tier (hack/testenv/testenv.sh kueue-up; docs/development.md,
# "Kueue in the test environment"): its fixtures and the tests of queueing (label kueue), run
# before an issue of queueing is resolved. Not part of `make test` / `make test-e2e`: Kueue's
# build (once per machine, about 5 minutes on two cores) does not fit CI's budget; the unit tests
# of queueing do run there.
test-kueue: build testenv testenv-kueue
	@cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -L kueue

# Kueue's binary (cached per machine), for test-kueue and the benchmarks' QUEUED=1.
testenv-kueue: deps
	@$(TESTENV) build-kueue

# Sanitizer builds with clang-14, assertions on (Debug, no NDEBUG) at -O0 with line tables only, each
# in its own tree; every target of the tree is instrumented (AYATORI_SANITIZE in CMakeLists.txt)
# but only the tiers' test executables are built. -O0, not the usual -O1: the trees are built
# once per CI run and their tests mostly wait on the API server, and -O1 under ASan + UBSan more
# than doubles a file's compile time (test/CMakeLists.txt; docs/development.md "CI").
SANITIZER_CMAKE_FLAGS := -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Debug \
        "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -gline-tables-only" -DAYATORI_WERROR=ON
ASAN_BUILD_DIR ?= build-asan
TSAN_BUILD_DIR ?= build-tsan

# The ASan tree also has the libFuzzer targets (AYATORI_FUZZ: the same sanitizer flags plus
# coverage), so that fuzz-ci runs in it without compiling the tree a second time; its unit tier
# then also replays each fuzz target's committed corpus (fuzz_<target>_corpus).
configure-asan: deps
	@cmake -S . -B $(ASAN_BUILD_DIR) $(SANITIZER_CMAKE_FLAGS) -DAYATORI_SANITIZE=address,undefined \
	    -DAYATORI_FUZZ=ON >/dev/null

configure-tsan: deps
	@cmake -S . -B $(TSAN_BUILD_DIR) $(SANITIZER_CMAKE_FLAGS) -DAYATORI_SANITIZE=thread >/dev/null

# Unit and integration tiers under ASan + UBSan (LeakSanitizer included). build-asan and
# build-tsan only compile (.ci/run builds the trees while make test's tiers run).
build-asan: configure-asan
	@cmake --build $(ASAN_BUILD_DIR) --target tests-unit tests-integration

test-asan: build-asan testenv
	@cd $(ASAN_BUILD_DIR) && ctest $(CTEST_FLAGS) -L 'unit|integration'

# Unit tier under TSan.
build-tsan: configure-tsan
	@cmake --build $(TSAN_BUILD_DIR) --target tests-unit

test-tsan: build-tsan
	@cd $(TSAN_BUILD_DIR) && ctest $(CTEST_FLAGS) -L unit

# The Docker demo prepares only what it runs (hack/demo.sh): the Debian packages, the CMake target
# demo-binaries (controller and kubectl plugin, no tests) and the control plane's api tier (etcd,
# kube-apiserver, kubectl), with one "[k/N]" line per phase. A second run reuses all of it.
# KUEUE=1 make demo: with Kueue too, and Jobs that wait in its LocalQueue (README.md).
DEMO_ENV = BUILD_DIR=$(BUILD_DIR) AYATORI_CMAKE_FLAGS="$(CMAKE_FLAGS)"

demo:
	@$(DEMO_ENV) hack/demo.sh up

demo-down:
	@hack/demo.sh down

# The Kubernetes backend on the e2e control plane (kwok simulates the node): a Job that succeeds,
# one that fails and one cancelled while it runs. NODE=real: on a real node (kubelet +
# containerd, hack/testenv/realnode.sh) instead, the pods' output printed.
demo-kubernetes:
	@$(DEMO_ENV) NODE=$(NODE) hack/demo.sh up-kubernetes

demo-kubernetes-down:
	@hack/demo.sh down-kubernetes

# The OpenSandbox backend on the real opensandbox-server (hack/opensandbox/opensandbox.sh): a Job
# that succeeds with its output, one that fails and one cancelled.
demo-opensandbox:
	@$(DEMO_ENV) hack/demo.sh up-opensandbox

demo-opensandbox-down:
	@hack/demo.sh down-opensandbox

# The install path on the test control plane (docs/install.md "Try it on this machine"): the
# controller image, dist/install.yaml, the controller with its ServiceAccount's token serving the
# Job log API, and an ordinary user running Jobs and reading their logs with kubectl ayatori.
demo-install:
	@$(DEMO_ENV) hack/demo.sh up-install

demo-install-down:
	@hack/demo.sh down-install

# The docs test (hack/docs-test.py, docs/development.md "The docs test"): every shell block of
# README.md and docs/*.md marked <!-- docs-test: stack=NAME --> runs, in the order written, on a
# new `make NAME` stack, and the exit codes and output the doc shows are checked. STACKS chooses
# (default all: demo demo-kubernetes demo-opensandbox demo-install), e.g. make docs-test STACKS=demo.
STACKS ?= demo demo-kubernetes demo-opensandbox demo-install
docs-test:
	@$(DEMO_ENV) hack/docs-test.py --stacks "$(STACKS)"

# Jobs on the Docker and Kubernetes backends while two leader-elected controller replicas are
# SIGKILLed and dockerd and kube-apiserver restart once each; then a verdict on every Job
# (docs/chaos.md). CHAOS_JOBS=40, CHAOS_SEED=<seed to replay>, CHAOS_SETTLE=180 (seconds).
chaos: build testenv
	@AYATORI_BUILD_DIR=$(BUILD_DIR) hack/chaos.sh

# QUEUED=1 (here and in bench-kubernetes): also the same Jobs queued through Kueue (issue 30),
# against the unqueued ones of the same run; Kueue is built first (testenv.sh build-kueue, once
# per machine).
bench: build testenv $(if $(filter 1,$(QUEUED)),testenv-kueue)
	@QUEUED=$(QUEUED) hack/bench.sh

# N=1000 by default; N=10000 for the large run. NODE=real: the pods run on a real node
# (hack/testenv/realnode.sh), e.g. make bench-kubernetes NODE=real N=100.
bench-kubernetes: build testenv $(if $(filter 1,$(QUEUED)),testenv-kueue)
	@AYATORI_BUILD_DIR=$(BUILD_DIR) NODE=$(NODE) QUEUED=$(QUEUED) hack/bench-kubernetes.sh --n=$(or $(N),1000)

# A fresh controller taking over 10000 Jobs and 10000 Secrets: time to ready and to every Job
# reconciled; BASELINE_CONTROLLER=<binary> measures another build the same way.
bench-startup: build testenv
	@AYATORI_BUILD_DIR=$(BUILD_DIR) hack/bench-startup.sh

# A fresh controller syncing N finished Jobs on the Kubernetes backend (with their batch Jobs and
# pods) vs kube-controller-manager: sync time, RSS per cached Job, CPU. N=10000 by default.
bench-scale: build testenv
	@AYATORI_BUILD_DIR=$(BUILD_DIR) hack/bench-scale.sh --n=$(or $(N),10000)

# Leader-elected replicas: SIGKILL of the leader -> first write of the new one (<= lease + 2 s),
# SIGTERM handover (<= 3 s), a restarted replica re-observing 10000 Jobs (<= 10 s).
bench-failover: build testenv
	@AYATORI_BUILD_DIR=$(BUILD_DIR) hack/bench-failover.sh

# A flood of maximal waiting Jobs (issue 26): the controller's peak RSS against its 256Mi limit and
# ordinary Jobs' create -> started p50/p99 in another namespace against a run without the flood.
# N=2000 by default.
bench-flood: build testenv
	@AYATORI_BUILD_DIR=$(BUILD_DIR) hack/bench-flood.sh --jobs=$(or $(N),2000)

# A trivial task through Ayatori on OpenSandbox vs the official Python SDK on the same server.
bench-opensandbox: build testenv
	@AYATORI_BUILD_DIR=$(BUILD_DIR) BUILD_DIR=$(BUILD_DIR) hack/bench-opensandbox.sh

# libFuzzer (clang-14) on every decoder of outside bytes, FUZZ_SECONDS each (default 60) from the
# seed corpora of fuzz/corpus, in the tree FUZZ_BUILD_DIR (default build-fuzz); see hack/fuzz.sh.
fuzz: deps
	@FUZZ_BUILD_DIR=$(FUZZ_BUILD_DIR) FUZZ_SECONDS=$(FUZZ_SECONDS) hack/fuzz.sh

# The same, briefly, for CI: in the ASan + UBSan tree of test-asan, so CI builds no third tree.
fuzz-ci: configure-asan
	@FUZZ_BUILD_DIR=$(ASAN_BUILD_DIR) FUZZ_SECONDS=10 hack/fuzz.sh

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

format-check:
	@git ls-files '*.h' '*.cc' | xargs clang-format --dry-run --Werror

# clang-tidy (.clang-tidy) on every .cc of the project, TIDY_JOBS at a time; the headers are checked
# through the files that include them. Any warning fails. hack/tidy.py remembers clean results per
# machine, keyed by the preprocessed source, flags, configuration and clang-tidy version, so an
# unchanged file is not checked twice (~/.cache/ayatori/tidy; delete it to check all again).
TIDY_JOBS ?= $(shell nproc)
TIDY_SOURCES = git ls-files 'src/*.cc' 'cmd/*.cc' 'test/*.cc' 'bench/*.cc' 'examples/*.cc' 'fuzz/*.cc'
tidy: configure
	@hack/tidy.py $(BUILD_DIR) $(TIDY_JOBS) $$($(TIDY_SOURCES))

clean:
	@rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) $(TSAN_BUILD_DIR)
