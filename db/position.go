package db

import (
	"context"
	"errors"
	"strconv"
	"strings"
)

// Position is a point in the primary's write-ahead log (a Postgres LSN).
// A write's Position is where the log stood right after its commit: a
// replica that has replayed up to it shows the write. Its text form is
// Postgres's ("16/B374D848"); the zero Position asks for nothing.
type Position uint64

// String returns the Postgres text form of p ("16/B374D848").
func (p Position) String() string {
	var b [17]byte
	out := strconv.AppendUint(b[:0], uint64(p>>32), 16)
	out = append(out, '/')
	out = strconv.AppendUint(out, uint64(uint32(p)), 16)
	return strings.ToUpper(string(out))
}

// errBadPosition is returned by ParsePosition for text that is not an LSN.
var errBadPosition = errors.New("db: a position is two hexadecimal numbers separated by '/' (16/B374D848)")

// ParsePosition reads the text form of a Position (as [Position.String]
// writes it and Postgres prints a pg_lsn).
func ParsePosition(s string) (Position, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok || hi == "" || lo == "" || len(hi) > 8 || len(lo) > 8 {
		return 0, errBadPosition
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, errBadPosition
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, errBadPosition
	}
	return Position(h<<32 | l), nil
}

type (
	minPositionKey   struct{}
	trackPositionKey struct{}
)

// WithPosition returns a context asking the reads run with it
// ([RunOpts.ReadOnly]) to see the database at least as of
// p: they run on a replica that has replayed past p, or on the primary.
// A zero p returns ctx unchanged.
func WithPosition(ctx context.Context, p Position) context.Context {
	if p == 0 {
		return ctx
	}
	return context.WithValue(ctx, minPositionKey{}, p)
}

// PositionOf returns the Position a context asks reads to see (see
// [WithPosition]); zero for none.
func PositionOf(ctx context.Context) Position {
	p, _ := ctx.Value(minPositionKey{}).(Position)
	return p
}

// TrackPosition returns a context under which a successful [DB.Run] on a
// DB with replicas records where the
// primary's log stood after the commit into *p: the Position a client
// hands back ([WithPosition]) to read its own write. Without replicas
// nothing is recorded (and nothing costs a round trip); *p stays zero, as
// it does when the write failed or the position could not be read.
func TrackPosition(ctx context.Context) (context.Context, *Position) {
	p := new(Position)
	return context.WithValue(ctx, trackPositionKey{}, p), p
}

func trackedPosition(ctx context.Context) *Position {
	p, _ := ctx.Value(trackPositionKey{}).(*Position)
	return p
}

// positionSQL reads the position of the commit just made on this
// connection. With synchronous_commit off the commit may not have reached
// the WAL file yet: the insert position is then the one known to be past
// it. Otherwise the flush position is past the commit record (and, unlike
// the insert position, never points behind a page header that replay
// would not reach until the next write).
const positionSQL = `select (case when current_setting('synchronous_commit') = 'off' then pg_current_wal_insert_lsn() else pg_current_wal_flush_lsn() end)::text`
