#!/bin/sh
# catalogue.sh OUT: applies tablegate's migrations to fresh databases (plain,
# with Supabase's storage and realtime schemas, and with a table, a bucket
# and realtime opted in) and writes their normalised catalogue to OUT:
# functions with their definitions, ACLs, policies, triggers, views, tables,
# columns, constraints, indexes, sequences, roles; comments left out.
# Compare two versions of the migrations with diff.
set -eu
out=${1:?usage: sql/tools/catalogue.sh OUT}
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
cd "$(dirname "$0")/../.."
TABLEGATE_CATALOGUE_OUT=$out go test -count=1 -run '^TestCatalogue$' ./sql/migrations/
