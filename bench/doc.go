// Package bench holds tablegate's benchmarks. Every figure is a ratio to a
// floor measured in the same process and run: raw pgx doing the same work
// with the same settings and pool, so machine noise cancels out. Results
// and the exact commands are recorded in BENCHMARKS.md.
package bench
