# tablegate task index. `make help` lists the targets.

GO        ?= go
SQLC      := GOWORK=off $(GO) tool -modfile=tools/go.mod sqlc
# staticcheck is pinned in tools/go.mod too. "go tool -n" builds it outside
# the workspace and prints the binary's path; the binary then runs in each
# module with the workspace on, so that the modules resolve each other.
STATICCHECK := GOWORK=off $(GO) tool -modfile=tools/go.mod -n staticcheck
NODE_DIR  := integration/node
# Redocly, Spectral, openapi-typescript, openapi-fetch and tsc, pinned apart
# (TestOpenAPIThirdPartyTools in integration/cli runs them on the demo's document).
OAS_DIR   := integration/oas
# Modules whose tests `make test` runs (go test ./... at the root does not
# enter nested modules). cmd/tablegate and bench are their own modules so that the
# OpenTelemetry SDK and exporters stay out of the library's go.mod.
MODULES   := . cmd/tablegate bench $(shell test -f integration/go.mod && echo integration)

.PHONY: help test test-go node-deps generate verify schema lint demo bench bench-deps bench-floor bench-cpu fuzz tidy docs-asset

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

test: lint verify node-deps test-go ## THE test command: lint, stale-code check, every module's tests with -race

test-go:
	@for m in $(MODULES); do echo "== go test $$m"; (cd $$m && $(GO) test -race -count=1 -timeout 20m ./...) || exit 1; done

node-deps: ## install the pinned npm packages the interop, browser and OpenAPI tests drive
	@test $(NODE_DIR)/node_modules/.package-lock.json -nt $(NODE_DIR)/package-lock.json || (cd $(NODE_DIR) && npm ci --no-audit --no-fund)
	@test $(OAS_DIR)/node_modules/.package-lock.json -nt $(OAS_DIR)/package-lock.json || (cd $(OAS_DIR) && SCARF_ANALYTICS=false npm ci --no-audit --no-fund)

SQLC_CONFIGS := sqlc.yaml examples/todos/sqlc.yaml

generate: ## regenerate sqlc code (internal/dbsqlc, examples/todos/todosql)
	@for c in $(SQLC_CONFIGS); do echo "sqlc generate -f $$c"; $(SQLC) generate -f $$c || exit 1; done

verify: ## fail when generated code is stale
	@for c in $(SQLC_CONFIGS); do echo "sqlc diff -f $$c"; $(SQLC) diff -f $$c || exit 1; done

schema: ## regenerate sql/schema.sql, the pg_dump of what the migrations create (needs Postgres and pg_dump)
	$(GO) test -count=1 -run '^TestSchemaSnapshot$$' ./sql/migrations -update

lint: ## gofmt, go vet and staticcheck on every module; any finding fails
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@sc=$$($(STATICCHECK)) || exit 1; \
	  for m in $(MODULES); do echo "== go vet, staticcheck $$m"; (cd $$m && $(GO) vet ./... && "$$sc" ./...) || exit 1; done

# The demo is built, then run (not with "go run", which exits 1 on Ctrl-C).
# In a terminal, bash's job control (set -m) gives the demo the terminal's
# foreground process group, so Ctrl-C reaches the demo alone: it shuts down
# and exits 0, and so does make (an interrupted make would exit 130).
# DEMO_FLAGS passes flags: make demo DEMO_FLAGS="--addr 127.0.0.1:0".
demo: ## run the demo: throwaway Postgres, migrations, keys, API on 127.0.0.1:8080
	$(GO) build -o bin/tablegate ./cmd/tablegate
	@bash -c '[ -t 0 ] && set -m; ./bin/tablegate demo $(DEMO_FLAGS); exit $$?'

bench: bench-deps ## run the benchmarks in bench/ (ratios to the raw pgx floor)
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./bench/

# The shared, independently written floor (compare.sh, rlsget, its schema): beside the checkout.
BENCH_FLOOR ?= $(firstword $(wildcard ../shared/bench-floor ../../shared/bench-floor /work/shared/bench-floor))

bench-floor: bench-deps ## the outside comparison: the demo's GET against the shared floor and naive servers, then against demofloor (the same hand-written server over the demo's own table and policy)
	-@if [ -n "$(BENCH_FLOOR)" ] && [ -x "$(BENCH_FLOOR)/compare.sh" ]; then "$(BENCH_FLOOR)/compare.sh"; \
	  else echo "no shared floor (set BENCH_FLOOR=DIR holding compare.sh); only the demo floor runs"; fi
	bench/demofloor/compare.sh

bench-cpu: bench-deps ## CPU µs per request (server process and Postgres) of the demo's GET, the shared floor, naive and demofloor in one run
	BENCH_FLOOR="$(BENCH_FLOOR)" bench/cpu_per_request.sh

bench-deps: # wrk drives BenchmarkHTTPWrk from its own process
	@command -v wrk >/dev/null || { apt-get install -y -qq wrk || { echo "install wrk (Debian: apt-get install wrk)"; exit 1; }; }

FUZZTIME ?= 15s

fuzz: ## run every fuzz target for FUZZTIME (default 15s); seed corpora live in testdata/fuzz
	@for d in $$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v node_modules | xargs -n1 dirname | sort -u); do \
	  mod=.; pkg=$$d; case $$d in ./integration*) mod=integration; pkg=./$${d#./integration/}; [ "$$d" = ./integration ] && pkg=.;; esac; \
	  for f in $$(grep -h '^func Fuzz' $$d/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "== $$d $$f"; (cd $$mod && $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg) || exit 1; \
	  done; \
	done

tidy: ## go mod tidy every module (cmd/tablegate and bench resolve the library from this checkout while tidying)
	$(GO) mod tidy
	cd integration && $(GO) mod tidy
	cd cmd/tablegate && $(GO) mod edit -replace github.com/tablegate/tablegate=../.. && GOWORK=off $(GO) mod tidy; \
	  rc=$$?; $(GO) mod edit -dropreplace github.com/tablegate/tablegate; [ $$rc = 0 ] || exit $$rc
	cd bench && $(GO) mod edit -replace github.com/tablegate/tablegate=.. && GOWORK=off $(GO) mod tidy; \
	  rc=$$?; $(GO) mod edit -dropreplace github.com/tablegate/tablegate; exit $$rc

# The API reference page's renderer (package spec/reference): the standalone
# bundle of @scalar/api-reference, pinned by version and npm integrity.
SCALAR_VERSION   := 1.72.1
SCALAR_INTEGRITY := sha512-XpEJ0rfc/cXbCrR+iC4kK0o/WwX2dTtGQbT049OlPKAHD6IMIFdTeGz2r+M27P2EDWKyUITRm/NzlP8z2pw/Ow==

docs-asset: ## refresh spec/reference's embedded Scalar bundle from npm (SCALAR_VERSION, SCALAR_INTEGRITY)
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  (cd "$$tmp" && npm pack --silent @scalar/api-reference@$(SCALAR_VERSION) >/dev/null); \
	  got="sha512-$$(openssl dgst -sha512 -binary "$$tmp"/scalar-api-reference-$(SCALAR_VERSION).tgz | base64 -w0)"; \
	  [ "$$got" = "$(SCALAR_INTEGRITY)" ] || { echo "integrity mismatch: $$got"; exit 1; }; \
	  tar -xzf "$$tmp"/scalar-api-reference-$(SCALAR_VERSION).tgz -C "$$tmp" package/dist/browser/standalone.js; \
	  gzip -9n < "$$tmp"/package/dist/browser/standalone.js > spec/reference/assets/scalar-standalone.js.gz; \
	  echo "$(SCALAR_VERSION) $(SCALAR_INTEGRITY)" > spec/reference/assets/VERSION; \
	  echo "spec/reference/assets: @scalar/api-reference $(SCALAR_VERSION) ($$(wc -c < spec/reference/assets/scalar-standalone.js.gz) bytes gzip)"
