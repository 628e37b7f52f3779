package authctx

import (
	"hash/maphash"
	"sync"
	"time"
)

// DefaultMemoSize is the default number of verified tokens remembered.
const DefaultMemoSize = 16384

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
}

type memoEntry struct {
	hash       uint64
	token      string
	auth       Auth
	until      time.Time
	prev, next *memoEntry
}

// newMemo returns a memo holding at most size entries, or nil when size
// is negative (memo disabled).
func newMemo(size int) *memo {
	if size < 0 {
		return nil
	}
	if size == 0 {
		size = DefaultMemoSize
	}
	per := size / memoShards
	if per < 1 {
		per = 1
	}
	m := &memo{seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].items = make(map[uint64]*memoEntry)
		m.shards[i].max = per
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
		s.unlink(e)
		delete(s.items, h)
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.items[h]; ok {
		e.token, e.auth, e.until = token, a, until
		s.moveFront(e)
		return
	}
	for len(s.items) >= s.max && s.tail != nil {
		old := s.tail
		s.unlink(old)
		delete(s.items, old.hash)
	}
	e := &memoEntry{hash: h, token: token, auth: a, until: until}
	s.items[h] = e
	s.pushFront(e)
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
