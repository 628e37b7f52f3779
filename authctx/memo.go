package authctx

import (
	"hash/maphash"
	"sync"
	"time"
)

// DefaultMemoSize is the default number of verified tokens remembered.
const DefaultMemoSize = 16384

// DefaultMemoBytes is the default bound on the memory the memo holds
// (64 MiB), estimated per entry by [memoCost].
const DefaultMemoBytes = 64 << 20

const memoShards = 16

// memo remembers the resolved state of verified tokens until their exp
// (plus clock skew). It is keyed by a maphash of the token's signature end
// and checks the full token on a hit, so a hash collision is a miss (the
// newer token replaces the older entry), never a mix-up. Each
// shard is an LRU guarded by its own mutex; a hit allocates nothing.
type memo struct {
	seed   maphash.Seed
	shards [memoShards]memoShard
}

type memoShard struct {
	mu    sync.Mutex
	items map[uint64]*memoEntry
	// head is the most recently used entry, tail the least.
	head, tail *memoEntry
	max        int
	// bytes is the estimated memory of the entries, at most maxBytes.
	bytes, maxBytes int64
}

type memoEntry struct {
	hash       uint64
	token      string
	auth       Auth
	until      time.Time
	cost       int64
	prev, next *memoEntry
}

// memoCost estimates the memory an entry holds: the token, the claims
// JSON, the decoded claims map (about twice its JSON) and a fixed
// overhead for the entry, the map slot and the User.
func memoCost(token string, a Auth) int64 {
	n := int64(len(token)) + 512
	if a.User != nil {
		if a.User.Token != token {
			n += int64(len(a.User.Token))
		}
		n += 3 * int64(len(a.User.db.Claims()))
	}
	return n
}

// newMemo returns a memo holding at most size entries and about
// maxBytes of memory (see memoCost), or nil when either is negative (memo
// disabled). Zero means the default.
func newMemo(size int, maxBytes int64) *memo {
	if size < 0 || maxBytes < 0 {
		return nil
	}
	if size == 0 {
		size = DefaultMemoSize
	}
	if maxBytes == 0 {
		maxBytes = DefaultMemoBytes
	}
	per := max(size/memoShards, 1)
	perBytes := max(maxBytes/memoShards, 1)
	m := &memo{seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].items = make(map[uint64]*memoEntry)
		m.shards[i].max = per
		m.shards[i].maxBytes = perBytes
	}
	return m
}

// hashKey hashes the token's last 64 bytes: they lie in the signature,
// which differs between any two tokens, so the hash costs the same for a
// 1 KiB token as for a small one. A hit still compares the whole token.
func (m *memo) hashKey(token string) uint64 {
	if len(token) > 64 {
		token = token[len(token)-64:]
	}
	return maphash.String(m.seed, token)
}

func (m *memo) get(token string, now time.Time) (Auth, bool) {
	h := m.hashKey(token)
	s := &m.shards[h%memoShards]
	s.mu.Lock()
	e, ok := s.items[h]
	if !ok || e.token != token {
		s.mu.Unlock()
		return Auth{}, false
	}
	if !now.Before(e.until) {
		s.remove(e)
		s.mu.Unlock()
		return Auth{}, false
	}
	s.moveFront(e)
	a := e.auth
	s.mu.Unlock()
	return a, true
}

func (m *memo) put(token string, a Auth, until time.Time) {
	h := m.hashKey(token)
	s := &m.shards[h%memoShards]
	cost := memoCost(token, a)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.items[h]; ok {
		s.remove(e)
	}
	if cost > s.maxBytes {
		return // larger than the shard's whole budget: never remembered
	}
	for (len(s.items) >= s.max || s.bytes+cost > s.maxBytes) && s.tail != nil {
		s.remove(s.tail)
	}
	e := &memoEntry{hash: h, token: token, auth: a, until: until, cost: cost}
	s.items[h] = e
	s.bytes += cost
	s.pushFront(e)
}

// remove drops an entry (the shard's lock held).
func (s *memoShard) remove(e *memoEntry) {
	s.unlink(e)
	delete(s.items, e.hash)
	s.bytes -= e.cost
}

// size returns the number of entries and their estimated bytes.
func (m *memo) size() (n int, bytes int64) {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.items)
		bytes += s.bytes
		s.mu.Unlock()
	}
	return n, bytes
}

func (m *memo) len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.items)
		s.mu.Unlock()
	}
	return n
}

func (s *memoShard) unlink(e *memoEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		s.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (s *memoShard) pushFront(e *memoEntry) {
	e.next = s.head
	e.prev = nil
	if s.head != nil {
		s.head.prev = e
	}
	s.head = e
	if s.tail == nil {
		s.tail = e
	}
}

func (s *memoShard) moveFront(e *memoEntry) {
	if s.head == e {
		return
	}
	s.unlink(e)
	s.pushFront(e)
}
