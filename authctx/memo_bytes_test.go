package authctx

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// Tokens just under the 16 KiB cap, each one distinct: the memo's
// estimated bytes stay under MemoBytes and the live heap it holds grows
// by about that bound, not by the number of tokens seen.
func TestMemoBytesBoundedWithLargeTokens(t *testing.T) {
	const bound = 4 << 20
	b := setup(t, func(c *Config) { c.MemoBytes = bound })
	pad := strings.Repeat("x", 11200) // user_metadata: a token of ~15 KB
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	const n = 1500 // ~22 MB of tokens, ~60 MB held without a byte bound
	var size int
	for i := range n {
		tok := b.token(map[string]any{"user_metadata": map[string]any{"bio": pad, "n": fmt.Sprint(i)}})
		size = len(tok)
		if size > DefaultMaxTokenBytes {
			t.Fatalf("token of %d bytes exceeds the cap", size)
		}
		if a := b.rv.Resolve(bearerReq(tok)).Auth; a.Kind != KindUser {
			t.Fatalf("token %d: %s %v", i, a.Kind, a.Err)
		}
	}
	entries, est := b.rv.memo.size()
	grown := int64(heap()) - int64(before)
	t.Logf("%d tokens of %d bytes: memo holds %d entries, %d estimated bytes, live heap +%d bytes (bound %d)", n, size, entries, est, grown, bound)
	if est > bound {
		t.Fatalf("memo estimates %d bytes, bound %d", est, bound)
	}
	if entries == 0 || entries >= n {
		t.Fatalf("memo holds %d of %d entries: not bounded by bytes", entries, n)
	}
	if grown > 2*bound {
		t.Fatalf("live heap grew by %d bytes with a memo bound of %d", grown, bound)
	}
	// The hit path still works for the newest tokens.
	tok := b.token(map[string]any{"user_metadata": map[string]any{"bio": pad, "n": "last"}})
	b.rv.Resolve(bearerReq(tok))
	if _, ok := b.rv.memo.get(tok, b.rv.now()); !ok {
		t.Fatal("the newest token is not remembered")
	}
}
