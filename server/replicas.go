package server

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/internal/pgconnect"
	"github.com/tablegate/tablegate/telemetry"
)

// envReplicaURLs lists read replica URLs, comma-separated; it wins over
// the config's read_replicas.
const envReplicaURLs = "DATABASE_REPLICA_URLS"

// replicaURLs returns the read replica URLs: $DATABASE_REPLICA_URLS
// (comma-separated) when set, else the config's read_replicas. An empty
// entry is a usage error naming where it came from.
func replicaURLs(getenv func(string) string, config []string) ([]string, error) {
	if v := strings.TrimSpace(getenv(envReplicaURLs)); v != "" {
		var urls []string
		for i, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u == "" {
				return nil, usagef("%s: entry %d is empty (a comma-separated list of postgres:// URLs)", envReplicaURLs, i+1)
			}
			urls = append(urls, u)
		}
		return urls, nil
	}
	for i, u := range config {
		if strings.TrimSpace(u) == "" {
			return nil, usagef("read_replicas[%d] is empty (a list of postgres:// URLs of read replicas)", i)
		}
	}
	return config, nil
}

// connectReplicas opens one pool per read replica URL, sized and
// instrumented like the primary's. A replica that does not answer yet is
// reported and kept: the replica monitor puts it in rotation once it
// answers, and reads run on the primary until then. A URL that does not
// parse is a usage error (its text is not repeated: it may hold a
// password).
func connectReplicas(ctx context.Context, out io.Writer, urls []string, maxConns int32, tel *telemetry.Telemetry) ([]*pgxpool.Pool, error) {
	var pools []*pgxpool.Pool
	closeAll := func() {
		for _, p := range pools {
			p.Close()
		}
	}
	for i, u := range urls {
		cfg, err := pgconnect.Config(u, maxConns, tel)
		if err != nil {
			closeAll()
			return nil, usagef("read replica %d: %v", i+1, err)
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("read replica %d: %w", i+1, err)
		}
		pools = append(pools, pool)
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = pool.Ping(pctx)
		cancel()
		if err != nil {
			fmt.Fprintf(out, "! read replica %d at %s does not answer yet: reads stay on the primary until it does\n", i+1, redactURL(cfg))
		}
	}
	return pools, nil
}

// redactURL names host, port and database of a config, never the password.
func redactURL(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	host := c.Host
	if filepath.IsAbs(host) {
		host = "socket " + host
	}
	return fmt.Sprintf("%s:%d/%s (user %s)", host, c.Port, c.Database, c.User)
}
