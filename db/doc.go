// Package db binds database work to the caller.
//
// Every statement tablegate sends runs as the caller ([Caller]) in one unit
// of work ([DB.Run]): the database role is picked from the caller and its
// verified claims are set into request.jwt.claims, both with set_config(..., true) so they live only
// for the transaction. Row-level security therefore decides what exists, in
// Postgres, for every caller. A pooled connection can never carry one
// caller's identity into another's request.
//
// # One round trip
//
// The caller settings travel in the same pipelined round trip as the first
// statement (a pgx batch): by default [DB.Run] sends each statement together
// with the settings in one implicit transaction, so a read costs one network
// round trip; with [RunOpts.Tx] it sends BEGIN, the settings and the first
// statement together.
//
// # Errors
//
// Errors of Postgres and of the connection come back as an [*Error] that
// errors.Is matches with the outcome: [ErrUniqueViolation],
// [ErrPermissionDenied], [ErrTimeout], [ErrUnavailable], … (see [Classify]).
// Package rest answers them with Problem Details.
//
// # Roles
//
// A user runs as its role claim when that role is listed in
// [Config.UserRoles] (default: authenticated only) — never as a role the
// token names freely; a token naming any other role is refused with
// [ErrRoleNotAllowed]. Callers without a session run as anon and service
// callers as service_role.
//
// # Start-up checks
//
// [CheckRLS] reads from the catalog whether row-level security protects a
// table or view for the request roles (anon, authenticated) and returns an
// [*RLSError] naming the SQL that fixes it when it does not; resources
// refuse such tables when they are built. [ReadTableProtection] reads the
// same facts with the roles' grants, which `tablegate doctor` checks too.
// [ExplainConnectError] tells why a pool could not connect: no server, no
// database, no role or a refused password, each with its fix.
//
// # Read replicas
//
// With [Config.Replicas], [DB.Run] with [RunOpts.ReadOnly] runs reads on
// a streaming replica in rotation (healthy, in recovery, lagging less than
// Config.MaxReplicaLag), retrying on the primary when the replica fails;
// everything else runs on the primary. [TrackPosition] records a write's
// commit [Position], and [WithPosition] makes a later read run only where
// that write is visible: read-your-writes for the client that carries the
// position. See docs/scale-out.md.
//
// # Migrations
//
// [Migrate] applies the embedded migrations of package
// github.com/tablegate/tablegate/sql/migrations with goose.
package db
