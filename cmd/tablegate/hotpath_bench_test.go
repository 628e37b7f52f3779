package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// BenchmarkDemoHotPath serves GET /api/todos/{id} and a 50-row list of
// "tablegate demo" (default flags: access log, metrics, budgets, events;
// the access log goes to /dev/null through a real file) over loopback
// keep-alive connections, from a client that allocates nothing per
// request, so that allocs/op is what the demo's process allocates per
// request. Run with -cpuprofile to see where its CPU goes:
//
//	go test -run '^$' -bench DemoHotPath -benchmem -cpuprofile cpu.out ./
func BenchmarkDemoHotPath(b *testing.B) {
	u := pgtest.URL(b)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	envFile := filepath.Join(b.TempDir(), "demo.env")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		e := &env{stdout: io.Discard, stderr: devnull, getenv: func(string) string { return "" }}
		done <- run(ctx, e, []string{"demo", "--database-url", u, "--addr", "127.0.0.1:0", "--print-env", envFile})
	}()
	defer func() { cancel(); <-done }()
	var vars map[string]string
	for i := 0; ; i++ {
		if data, err := os.ReadFile(envFile); err == nil {
			vars = map[string]string{}
			for _, line := range strings.Split(string(data), "\n") {
				if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok {
					vars[k] = v // BASE_URL and USER_TOKEN are bare (shell-safe)
				}
			}
			break
		}
		select {
		case code := <-done:
			b.Fatalf("demo exited with %d", code)
		case <-time.After(100 * time.Millisecond):
		}
		if i > 600 {
			b.Fatal("demo did not start in 60s")
		}
	}
	// 1000 rows the user reads (tenant A), as the outside comparison has.
	pool := pgtest.Pool(b, u)
	if _, err := pool.Exec(context.Background(), `insert into public.todos (tenant_id, owner_id, title)
		select $1, $2, 'bench ' || g from generate_series(1, 1000) g`, demoTenantA, demoUserID); err != nil {
		b.Fatal(err)
	}
	var ids []int64
	rows, err := pool.Query(context.Background(), `select id from public.todos where tenant_id = $1 order by id`, demoTenantA)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		ids = append(ids, id)
	}
	if rows.Err() != nil || len(ids) < 1000 {
		b.Fatalf("ids: %d %v", len(ids), rows.Err())
	}
	host := vars["BASE_URL"][len("http://"):]
	token := vars["USER_TOKEN"]

	cases := []struct {
		name string
		path func(i int) string
	}{
		{"get", func(i int) string { return "/api/todos/" + strconv.FormatInt(ids[i%len(ids)], 10) }},
		{"list50", func(int) string { return "/api/todos?limit=50" }},
	}
	for _, c := range cases {
		// Requests prepared up front: the client only writes and reads bytes.
		reqs := make([][]byte, 1024)
		for i := range reqs {
			reqs[i] = []byte(fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nUser-Agent: bench\r\n\r\n", c.path(i), host, token))
		}
		b.Run(c.name, func(b *testing.B) {
			var seq atomic.Int64
			b.SetParallelism(8) // 8 × GOMAXPROCS connections
			b.ReportAllocs()
			w0, c0 := writeSyscalls(), processCPU()
			b.RunParallel(func(pb *testing.PB) {
				conn, err := net.Dial("tcp", host)
				if err != nil {
					b.Error(err)
					return
				}
				defer conn.Close()
				br := bufio.NewReaderSize(conn, 64<<10)
				buf := make([]byte, 64<<10)
				for pb.Next() {
					if _, err := conn.Write(reqs[seq.Add(1)%int64(len(reqs))]); err != nil {
						b.Error(err)
						return
					}
					if err := readResponse(br, buf); err != nil {
						b.Error(err)
						return
					}
				}
			})
			if w0 >= 0 {
				// The process's write syscalls: the client's one per request,
				// the server's response, its statements, its log lines.
				b.ReportMetric(float64(writeSyscalls()-w0)/float64(b.N), "writes/op")
			}
			// The process's CPU (user + system) per request: the server's,
			// plus the client's few µs of writing and reading bytes.
			b.ReportMetric(float64(processCPU()-c0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
		})
	}
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeSyscalls returns the process's write syscalls so far (syscw of
// /proc/self/io), -1 where there is none.
func writeSyscalls() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// readResponse reads one HTTP/1.1 response with a Content-Length and a 200
// status into buf, allocating nothing.
func readResponse(br *bufio.Reader, buf []byte) error {
	n := -1
	first := true
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if first {
			if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
				return fmt.Errorf("status %q", line)
			}
			first = false
			continue
		}
		if len(line) <= 2 {
			break
		}
		if len(line) > 16 && bytes.EqualFold(line[:15], []byte("Content-Length:")) {
			n, err = strconv.Atoi(string(bytes.TrimSpace(line[15:])))
			if err != nil {
				return err
			}
		}
	}
	if n < 0 {
		return fmt.Errorf("no Content-Length")
	}
	_, err := io.ReadFull(br, buf[:n])
	return err
}
