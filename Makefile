# yieldagent: `make run` starts the whole service, `make test` runs the tests.
# Each target installs what it needs into .venv (and build/tools for buf).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# buf (lint, breaking, stubs): the binary of this platform's npm package, pinned by version
# and by its SHA-256 per platform, so a changed download fails the install.
BUF_VERSION := 1.75.0
BUF_PLATFORM := linux-$(subst x86_64,x64,$(shell uname -m))
BUF_SHA256_linux-x64 := fad1e38d6909bbb583a4da81d8c02a01046e2cd663bde7e337dd24277393764b
BUF_SHA256_linux-aarch64 := 00eb190aa82df17f393e05b04889cc60a0b13b3259d336e21a87d5f23ab4fd26
BUF_SHA256 := $(BUF_SHA256_$(BUF_PLATFORM))
BUF_DIR := build/tools/buf-$(BUF_VERSION)
BUF := $(BUF_DIR)/buf
PROTOS := $(wildcard protos/yieldagent/v1/*.proto)
DESCRIPTOR := build/yieldagent.pb
GOOGLEAPIS = $(shell $(PY) -c "import google.api, pathlib; print(pathlib.Path(google.api.__path__[0]).parents[1])")
PROTOC = $(PY) -m grpc_tools.protoc -Iprotos -I$(GOOGLEAPIS)
# The OpenAPI document Envoy serves, generated from the protos (tools.openapi.generate).
OPENAPI := envoy/openapi.json
OPENAPI_GEN = PYTHONPATH=src $(PY) -m tools.openapi.generate --descriptor $(DESCRIPTOR) \
	--plugin $(SWAGGER_PLUGIN)
# protoc-gen-swagger: grpc-gateway's OpenAPI (v2) generator, from Debian's golang-grpc-gateway.
SWAGGER_PLUGIN := /usr/bin/protoc-gen-swagger
# The docs page's renderer: Redoc's standalone bundle, from the npm package, pinned.
REDOC_VERSION := 2.5.4
REDOC_SHA256 := dcaf76612bc4a3fbcc923a8966dee2f6146a5f32e5ce1b6f02dd60cbbf89500b
DOCS_BUNDLE := build/tools/redoc/redoc.standalone.js
REDOC_STAMP := build/tools/redoc/.installed-$(REDOC_VERSION)
# Headless Chromium for the docs page test, from Debian.
CHROMIUM := /usr/bin/chromium
APT_INSTALL = DEBIAN_FRONTEND=noninteractive apt-get install -y -qq

.PHONY: run test evm crash soak lint format protos check-protos openapi docs fuzz stubs check-stubs \
	check-breaking lock check-lock \
	bench install clean devnet docs-site

run: $(VENV)/.installed $(DESCRIPTOR) $(REDOC_STAMP)
	$(VENV)/bin/yieldagent run

# Every test but the money paths' kill loops (`make crash`), devnet tests included, on
# TEST_WORKERS processes (pytest-xdist; a test file stays on one worker). TEST_WORKERS=0 runs
# them in this process.
TEST_WORKERS ?= 2
test: $(VENV)/.installed $(DESCRIPTOR) $(REDOC_STAMP) $(SWAGGER_PLUGIN) $(CHROMIUM) \
		contracts/node_modules/.installed
	$(PY) -m pytest -m "not crash" -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The contract tests with many more generated requests per operation than `make test` makes.
FUZZ_EXAMPLES ?= 200
fuzz: $(VENV)/.installed $(DESCRIPTOR) $(REDOC_STAMP)
	YIELDAGENT_CONTRACT_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest tests/rest/test_contract.py \
		--timeout 0 $(PYTEST_ARGS)

# The tests that run against an anvil devnet alone (one devnet per session).
evm: $(VENV)/.installed $(DESCRIPTOR) $(REDOC_STAMP) contracts/node_modules/.installed
	$(PY) -m pytest -m evm $(PYTEST_ARGS)

# The crash tests alone, with CRASH_KILLS SIGKILLs per money path and backend, and a
# pipelined batch killed in flight on the devnet.
CRASH_KILLS ?= 20
crash: $(VENV)/.installed $(DESCRIPTOR) $(REDOC_STAMP) contracts/node_modules/.installed
	YIELDAGENT_CRASH_KILLS=$(CRASH_KILLS) $(PY) -m pytest -m crash $(PYTEST_ARGS)

# The soak (tests/soak, benchmarks/soak.py): the service under a mixed partner load at about
# 80% of the mix's measured capacity for SOAK_SECONDS, on SQLite and, with
# YIELDAGENT_TEST_DATABASE_URL, on PostgreSQL; fails on any 5xx, memory growth over the last
# five minutes, or books that disagree with the chain. `make test` runs it for 15 seconds.
SOAK_SECONDS ?= 600
soak: $(VENV)/.installed $(DESCRIPTOR) $(REDOC_STAMP)
	SOAK_SECONDS=$(SOAK_SECONDS) $(PY) -m pytest tests/soak -s -p no:randomly $(PYTEST_ARGS)

install: $(VENV)/.installed

# A local EVM devnet in the foreground: anvil on 127.0.0.1:8545 (chain id 8453) with USDC,
# Aave v3, Compound, Moonwell and Morpho deployed; the manifest goes to var/devnet.json.
devnet: $(VENV)/.installed contracts/node_modules/.installed
	$(PY) -m yieldagent.devnet

# The npm packages of contracts/ (anvil, solc-js, protocol code), exactly as the committed
# lock names them, each checked against its integrity hash (`npm ci`). The lock holds anvil's
# binary package for every platform (npm installs this one's). --ignore-scripts: no package
# runs code at install; anvil's postinstall would only fetch the binary its platform package
# already brings.
contracts/node_modules/.installed: contracts/package.json contracts/package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts --prefix contracts
	touch $@

# The Python packages, exactly as requirements.lock names them (every extra included: one
# resolution for every target), each checked against its hashes; then the project itself,
# editable, built with the locked setuptools.
LOCK := requirements.lock
$(VENV)/.installed: pyproject.toml $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --require-hashes -r $(LOCK)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

# requirements.lock from pyproject.toml: pip-compile (pip-tools, itself locked with hashes in
# tools/lock/requirements.txt) keeps every pin that still fits and adds the hashes of every
# file of each version. `make lock UPGRADE=1` moves every pin to the newest allowed.
LOCK_TOOLS := build/lock-tools
LOCK_COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_TOOLS)/bin/pip-compile -q \
	--generate-hashes --allow-unsafe --all-extras --strip-extras --all-build-deps \
	--no-emit-index-url --no-emit-find-links
lock: $(LOCK_TOOLS)/.installed
	$(LOCK_COMPILE) $(if $(UPGRADE),--upgrade) --output-file $(LOCK) pyproject.toml

# Fails when requirements.lock is not what `make lock` makes from pyproject.toml (a
# dependency added, removed or re-bounded without it). Needs the package index.
check-lock: $(LOCK_TOOLS)/.installed
	mkdir -p build && cp $(LOCK) build/lock-check.txt
	$(LOCK_COMPILE) --output-file build/lock-check.txt pyproject.toml
	diff -u $(LOCK) build/lock-check.txt \
		|| (echo "$(LOCK) is stale: run 'make lock' and commit it" && exit 1)

$(LOCK_TOOLS)/.installed: tools/lock/requirements.txt
	test -x $(LOCK_TOOLS)/bin/python || $(PYTHON) -m venv $(LOCK_TOOLS)
	$(LOCK_TOOLS)/bin/python -m pip install -q --disable-pip-version-check --require-hashes \
		-r tools/lock/requirements.txt
	touch $@

# The descriptor set Envoy transcodes with (imports and comments included).
$(DESCRIPTOR): $(PROTOS) $(VENV)/.installed
	mkdir -p build
	$(PROTOC) --include_imports --include_source_info --descriptor_set_out=$@ $(PROTOS)

# Regenerates the committed Python code, the descriptor set and the OpenAPI document.
protos: $(VENV)/.installed $(SWAGGER_PLUGIN)
	$(PROTOC) --python_out=src --pyi_out=src --grpc_python_out=src $(PROTOS)
	rm -f src/yieldagent/v1/options_pb2_grpc.py src/yieldagent/v1/types_pb2_grpc.py
	$(MAKE) -B $(DESCRIPTOR)
	$(OPENAPI_GEN) $(OPENAPI)

# The OpenAPI document, from the protos (run by `make protos`).
openapi: $(DESCRIPTOR) $(SWAGGER_PLUGIN)
	$(OPENAPI_GEN) $(OPENAPI)

$(SWAGGER_PLUGIN):
	$(APT_INSTALL) golang-grpc-gateway || (apt-get update -qq && $(APT_INSTALL) golang-grpc-gateway)

$(CHROMIUM):
	$(APT_INSTALL) chromium || (apt-get update -qq && $(APT_INSTALL) chromium)

# Redoc's standalone bundle, which Envoy serves for the docs page (npm pack fetches the
# package alone, without the dependencies its bundle already contains).
docs: $(REDOC_STAMP)

$(REDOC_STAMP):
	rm -rf build/tools/redoc && mkdir -p build/tools/redoc
	cd build/tools/redoc && npm pack --silent redoc@$(REDOC_VERSION) >/dev/null
	tar -xzf build/tools/redoc/redoc-$(REDOC_VERSION).tgz -C build/tools/redoc \
		--strip-components=2 package/bundles/redoc.standalone.js
	echo "$(REDOC_SHA256)  $(DOCS_BUNDLE)" | sha256sum -c --quiet
	rm build/tools/redoc/redoc-$(REDOC_VERSION).tgz
	touch $@

# Fails when the committed generated code differs from what the protos give.
check-protos: $(VENV)/.installed $(DESCRIPTOR) $(SWAGGER_PLUGIN)
	rm -rf build/gen-check && mkdir -p build/gen-check
	$(PROTOC) --python_out=build/gen-check --pyi_out=build/gen-check \
		--grpc_python_out=build/gen-check $(PROTOS)
	rm -f build/gen-check/yieldagent/v1/options_pb2_grpc.py build/gen-check/yieldagent/v1/types_pb2_grpc.py
	diff -r --exclude=__pycache__ --exclude=__init__.py build/gen-check/yieldagent/v1 src/yieldagent/v1 \
		|| (echo "generated code is stale: run 'make protos' and commit" && exit 1)
	$(OPENAPI_GEN) --check $(OPENAPI)

# Client stubs (buf.gen.yaml) from the descriptor set above, which already holds the google/api
# protos of the googleapis-common-protos pip package, so nothing is fetched: TypeScript (pinned in
# tests/stubs/typescript/package.json) into build/gen/ts, Go (Debian's protoc-gen-go and
# protoc-gen-go-grpc) into the GOPATH tree build/gen/go. build/node_modules links to the example
# client's node_modules, so the generated TypeScript and the compiled client find their runtime.
STUBS_TS_DIR := tests/stubs/typescript
STUBS_NPM := $(STUBS_TS_DIR)/node_modules/.installed
STUBS := build/gen/.generated
STUBS_TS_CLIENT := build/stubs/ts/$(STUBS_TS_DIR)/client.js
STUBS_GO_CLIENT := build/stubs/go-client
# golang-github-golang-protobuf-1-5-dev: grpc-go's codec calls github.com/golang/protobuf, whose
# 1.3 (apt's first pick otherwise) cannot marshal messages of today's protoc-gen-go.
GO_APT := golang-go protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev \
	golang-google-protobuf-dev golang-google-genproto-dev golang-github-golang-protobuf-1-5-dev
# Installs Debian's Go toolchain and protobuf/gRPC sources when one is missing (apt-get: as root).
GO_TOOLS := dpkg -s $(GO_APT) >/dev/null 2>&1 || { apt-get update -qq && \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(GO_APT); }
# Go 1.19 from Debian, offline: GOPATH mode over the generated tree and Debian's Go sources
# (/usr/share/gocode: grpc, protobuf, genproto's google.golang.org/genproto/googleapis/api).
GO_ENV := GO111MODULE=off GOPATH=$(CURDIR)/build/gen/go:/usr/share/gocode \
	GOCACHE=$(CURDIR)/build/go-cache GOFLAGS=
GO_STUBS_PKG := github.com/yieldagent/yieldagent/gen/yieldagent/v1

stubs: $(STUBS)

# Compiles both stubs with their example clients: tsc type-checks the generated TypeScript and
# the client (and emits nothing when it finds an error); go vet and go build check the generated
# Go and its client. tests/stubs runs these clients against the real server.
check-stubs: $(STUBS_TS_CLIENT) $(STUBS_GO_CLIENT)

$(STUBS): buf.gen.yaml $(DESCRIPTOR) $(BUF) $(STUBS_NPM)
	@$(GO_TOOLS)
	$(BUF) generate
	ln -sfn ../$(STUBS_TS_DIR)/node_modules build/node_modules
	touch $@

$(STUBS_TS_CLIENT): $(STUBS) $(STUBS_TS_DIR)/client.ts $(STUBS_TS_DIR)/tsconfig.json
	$(STUBS_TS_DIR)/node_modules/.bin/tsc -p $(STUBS_TS_DIR)

$(STUBS_GO_CLIENT): $(STUBS) tests/stubs/go/main.go
	$(GO_ENV) go vet ./tests/stubs/go $(GO_STUBS_PKG)
	$(GO_ENV) go build -o $@ ./tests/stubs/go

$(STUBS_NPM): $(STUBS_TS_DIR)/package.json $(STUBS_TS_DIR)/package-lock.json
	npm ci --no-audit --no-fund --prefix $(STUBS_TS_DIR)
	touch $@

# npm pack fetches the platform's package alone (no install scripts run); the binary is
# kept only when its checksum matches the pinned one.
$(BUF):
	@test -n "$(BUF_SHA256)" || { echo "no pinned buf checksum for $(BUF_PLATFORM)"; exit 1; }
	rm -rf $(BUF_DIR) && mkdir -p $(BUF_DIR)
	cd $(BUF_DIR) && npm pack --silent @bufbuild/buf-$(BUF_PLATFORM)@$(BUF_VERSION) >/dev/null
	tar -xzf $(BUF_DIR)/bufbuild-buf-$(BUF_PLATFORM)-$(BUF_VERSION).tgz -C $(BUF_DIR) \
		--strip-components=2 package/bin/buf
	rm $(BUF_DIR)/bufbuild-buf-$(BUF_PLATFORM)-$(BUF_VERSION).tgz
	echo "$(BUF_SHA256)  $(BUF)" | sha256sum -c --quiet || { rm -f $(BUF); exit 1; }

# buf breaking: the protos against those of the previous commit (BREAKING_AGAINST), each
# built into a descriptor set as Envoy's is, so a change that would break a generated
# client fails. A shallow clone without that commit is deepened once, else refused.
BREAKING_AGAINST ?= HEAD~1
PREVIOUS := build/previous
check-breaking: $(VENV)/.installed $(DESCRIPTOR) $(BUF)
	@git rev-parse -q --verify "$(BREAKING_AGAINST)^{commit}" >/dev/null || \
		git fetch -q --deepen=1 origin >/dev/null 2>&1 || true
	rm -rf $(PREVIOUS) && mkdir -p $(PREVIOUS)
	git archive "$(BREAKING_AGAINST)" protos | tar -x -C $(PREVIOUS)
	$(PY) -m grpc_tools.protoc -I$(PREVIOUS)/protos -I$(GOOGLEAPIS) --include_imports \
		--descriptor_set_out=$(PREVIOUS)/yieldagent.pb $$(cd $(PREVIOUS) && ls protos/yieldagent/v1/*.proto | sed 's|^protos/||')
	$(BUF) breaking $(DESCRIPTOR)#format=binpb --against $(PREVIOUS)/yieldagent.pb#format=binpb \
		--path yieldagent

lint: $(VENV)/.bench-installed $(DESCRIPTOR) $(BUF) $(REDOC_STAMP)
	$(VENV)/bin/ruff check src tests benchmarks tools
	$(VENV)/bin/ruff format --check src tests benchmarks tools
	$(VENV)/bin/mypy
	PYTHONPATH=src $(VENV)/bin/lint-imports --no-logo
	$(BUF) lint $(DESCRIPTOR)#format=binpb --path yieldagent
	$(VENV)/bin/envoy --mode validate -c envoy/envoy.yaml --log-level error

format: $(VENV)/.installed
	$(VENV)/bin/ruff check --fix src tests benchmarks tools
	$(VENV)/bin/ruff format src tests benchmarks tools

# Benchmark-only packages (FastAPI and uvicorn for the comparison app, py-spy for profiles):
# in the lock, so installed with the rest.
$(VENV)/.bench-installed: $(VENV)/.installed
	touch $@

bench: $(VENV)/.bench-installed $(DESCRIPTOR) docs
	$(PY) -m benchmarks

# Documentation-site-only packages (MkDocs with the Material theme, pinned in the `docs`
# extra): in the lock, so installed with the rest.
$(VENV)/.docs-installed: $(VENV)/.installed
	touch $@

# The documentation site, from docs/ and mkdocs.yml, into build/site. --strict turns every
# warning into a failure: a broken link or anchor, a page left out of the nav.
# NO_MKDOCS_2_WARNING: Material's banner about its successor, which is no finding of ours.
docs-site: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf build var .pytest_cache .mypy_cache .ruff_cache
