package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgcluster"
)

// startReplica starts the demo's throwaway primary for --replica (a
// cluster streaming replicas can follow) and one streaming replica of it.
func startReplica(ctx context.Context, out io.Writer) (primary, replica *pgcluster.Cluster, err error) {
	done := step(out, "starting a throwaway Postgres primary (initdb + pg_ctl; no Docker)")
	primary, err = pgcluster.StartPrimary(ctx, nil)
	done(err, "")
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "    data and socket in %s\n", primary.Dir())
	done = step(out, "starting a streaming replica of it (pg_basebackup -R, a second postmaster)")
	replica, err = primary.StartReplica(ctx, nil)
	done(err, "")
	if err != nil {
		_ = primary.Stop()
		return nil, nil, err
	}
	fmt.Fprintf(out, "    data and socket in %s\n", replica.Dir())
	return primary, replica, nil
}

// showReadYourWrites writes one todo as the demo user and reads it back
// carrying the write's Tablegate-Position, printing each step: the
// newcomer sees the position and where the read ran.
func showReadYourWrites(ctx context.Context, w io.Writer, d *db.DB, base, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/todos", strings.NewReader(`{"title":"Read your own writes"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	pos := res.Header.Get("Tablegate-Position")
	if res.StatusCode != http.StatusCreated || pos == "" {
		return fmt.Errorf("demo write answered %s with Tablegate-Position %q", res.Status, pos)
	}
	loc := res.Header.Get("Location")
	fmt.Fprintf(w, "\nRead replica: writes go to the primary and answer their commit position; reads carrying it go to a replica that has replayed past it, else to the primary.\n")
	fmt.Fprintf(w, "  POST %s/api/todos → %d, Tablegate-Position: %s\n", base, res.StatusCode, pos)
	before := d.ReplicaStats()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+loc, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Tablegate-Position", pos)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	after := d.ReplicaStats()
	target := "the primary (the replica had not replayed the write yet)"
	for i, r := range after.Replicas {
		if r.Reads > before.Replicas[i].Reads {
			target = r.Name + ", which had replayed past the position"
		}
	}
	fmt.Fprintf(w, "  GET %s%s with Tablegate-Position: %s → %d, served by %s\n", base, loc, pos, res.StatusCode, target)
	if res.StatusCode != http.StatusOK {
		return errors.New("the demo could not read its own write")
	}
	fmt.Fprintf(w, `  Try it:
  POS=$(curl -s -o /dev/null -D - $BASE_URL/api/todos -H "Authorization: Bearer $USER_TOKEN" -H 'Content-Type: application/json' -d '{"title":"mine"}' | tr -d '\r' | sed -n 's/^Tablegate-Position: //Ip')
  curl -s $BASE_URL/api/todos -H "Authorization: Bearer $USER_TOKEN" -H "Tablegate-Position: $POS"   # sees "mine", from the replica or the primary
`)
	return nil
}
