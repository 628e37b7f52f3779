package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/tablegate/tablegate/server"
)

// A Go program serves the tables of a config next to routes of its own:
// its /healthz, and everything else from the server's handler (the
// tables under /api, /livez and /readyz). The config is what
// "tablegate serve" reads from its JSON file; LoadConfig or ParseConfig
// read such a file, with the same keys, defaults and errors.
func Example() {
	ctx := context.Background()
	cfg := &server.Config{
		DatabaseURL: exampleDatabaseURL(), // e.g. os.Getenv("DATABASE_URL"), migrated with "tablegate migrate up"
		Auth: server.AuthConfig{
			// The project's public signing keys (as SUPABASE_JWKS); or URL,
			// the project URL, to fetch them.
			JWKS: json.RawMessage(`{"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","use":"sig","kid":"example",
				"x":"03xLm6rDaCKiwFS9hf9AX2e24VMY6WwRKsOAJnvjzQA","y":"BV7J92-U6S20UBMUmORiYaaflGPAtWHUP4svPb64ILE"}]}`),
		},
		Tables: map[string]*server.TableConfig{
			// Row-level security decides which notes a caller sees.
			"notes": {Table: "public.notes", Operations: []string{"list", "get"}, Guard: []string{"anon", "user"}},
		},
		Log: io.Discard, // start-up warnings and the access log; default os.Stderr
	}
	srv, err := server.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/", srv.Handler())
	ts := httptest.NewServer(mux) // or http.ListenAndServe(addr, mux)
	defer ts.Close()

	res, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Printf("GET /healthz: %d %s", res.StatusCode, body)

	res, err = http.Get(ts.URL + "/api/notes")
	if err != nil {
		log.Fatal(err)
	}
	var page struct {
		Items []struct {
			Body string `json:"body"`
		} `json:"items"`
	}
	err = json.NewDecoder(res.Body).Decode(&page)
	res.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("GET /api/notes: %d\n", res.StatusCode)
	for _, n := range page.Items {
		fmt.Println(" ", n.Body)
	}
	// Output:
	// GET /healthz: 200 ok
	// GET /api/notes: 200
	//   Served by tablegate
	//   Next to the program's own routes
}
