# tablegate task index. `make help` lists the targets.

GO        ?= go
SQLC      := GOWORK=off $(GO) tool -modfile=tools/go.mod sqlc
NODE_DIR  := integration/node
# Modules whose tests `make test` runs (go test ./... at the root does not
# enter nested modules).
MODULES   := . $(shell test -f integration/go.mod && echo integration)

.PHONY: help test test-go node-deps generate verify lint demo bench bench-deps fuzz

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

test: lint verify node-deps test-go ## THE test command: lint, stale-code check, every module's tests with -race

test-go:
	@for m in $(MODULES); do echo "== go test $$m"; (cd $$m && $(GO) test -race -count=1 -timeout 20m ./...) || exit 1; done

node-deps: ## install the pinned @supabase/ssr used by interop tests
	@test -d $(NODE_DIR)/node_modules/@supabase/ssr || (cd $(NODE_DIR) && npm ci --no-audit --no-fund)

SQLC_CONFIGS := sqlc.yaml examples/todos/sqlc.yaml

generate: ## regenerate sqlc code (db/dbsqlc, examples/todos/todosql)
	@for c in $(SQLC_CONFIGS); do echo "sqlc generate -f $$c"; $(SQLC) generate -f $$c || exit 1; done

verify: ## fail when generated code is stale
	@for c in $(SQLC_CONFIGS); do echo "sqlc diff -f $$c"; $(SQLC) diff -f $$c || exit 1; done

lint: ## gofmt and go vet on every module
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done

demo: ## run the demo: throwaway Postgres, migrations, keys, API on 127.0.0.1:8080
	$(GO) run ./cmd/tablegate demo

bench: bench-deps ## run the benchmarks in bench/ (ratios to the raw pgx floor)
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./bench/

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