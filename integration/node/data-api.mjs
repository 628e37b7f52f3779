// Drives tablegate's PostgREST-compatible data API with the real
// supabase-js, as a Supabase app would, and prints what the client saw.
//
// stdin:  {"url": "...", "key": "<publishable key>", "alice": "<jwt>",
//          "bob": "<jwt>", "admin": "<jwt with the admin role>"}
// stdout: {"<step>": {"data": ..., "error": {"code","message"} | null,
//          "count": n | null, "status": n}, ...}
import { createClient } from "@supabase/supabase-js";

const input = JSON.parse(await new Promise((resolve) => {
  let s = "";
  process.stdin.on("data", (d) => (s += d));
  process.stdin.on("end", () => resolve(s));
}));

const client = (token) => createClient(input.url, input.key, {
  auth: { persistSession: false, autoRefreshToken: false },
  global: { headers: { Authorization: `Bearer ${token}` } },
  // Node 20 has no global WebSocket; realtime is never used here.
  realtime: { transport: class NoWebSocket {} },
});
const alice = client(input.alice);
const bob = client(input.bob);
const admin = client(input.admin);

const out = {};
const step = async (name, q) => {
  const { data, error, count, status } = await q;
  out[name] = { data: data ?? null, error: error ? { code: error.code, message: error.message } : null, count: count ?? null, status };
};

await step("insert_bulk", alice.from("notes").insert([
  { title: "a1", slug: "a1", score: 1, tags: ["x", "y"], meta: { k: "v" }, body: "the quick brown fox", span: "[1,5)" },
  { title: "a2", slug: "a2", score: 5, tags: ["y"], meta: { k: "w" }, body: "lazy dogs sleep", span: "[5,10)" },
  { title: "a3", slug: "a3", score: 9, tags: [], meta: null, body: "a quick cat", span: "[20,30)" },
]).select("title"));
await step("insert_bob", bob.from("notes").insert({ title: "b1", slug: "b1", score: 3 }));
await step("select_alias_order", alice.from("notes").select("name:title, score").gte("score", 2).order("score", { ascending: false }));
await step("eq_neq", alice.from("notes").select("slug").neq("slug", "a2").eq("done", false).order("slug"));
await step("gt_lt_lte", alice.from("notes").select("slug").gt("score", 1).lt("score", 9).lte("score", 5));
await step("like_ilike", alice.from("notes").select("slug").like("title", "a%").ilike("title", "%3"));
await step("in", alice.from("notes").select("slug").in("slug", ["a1", "a3", "b1"]).order("slug"));
await step("is_null", alice.from("notes").select("slug").is("meta", null));
await step("not", alice.from("notes").select("slug").not("meta", "is", null).order("slug"));
await step("contains", alice.from("notes").select("slug").contains("tags", ["y"]).order("slug"));
await step("contained_by", alice.from("notes").select("slug").containedBy("tags", ["x", "y"]).order("slug"));
await step("overlaps", alice.from("notes").select("slug").overlaps("tags", ["x"]));
await step("range_lt", alice.from("notes").select("slug").rangeLt("span", "[10,20)").order("slug"));
await step("json_path", alice.from("notes").select("slug, k:meta->>k").eq("meta->>k", "w"));
await step("fts", alice.from("notes").select("slug").textSearch("body", "quick", { config: "english" }).order("slug"));
await step("match", alice.from("notes").select("slug").match({ slug: "a1", score: 1 }));
await step("or", alice.from("notes").select("slug").or("score.lt.2,slug.eq.a3").order("slug"));
await step("or_and", alice.from("notes").select("slug").or("slug.eq.a1,and(score.gt.4,score.lt.6)").order("slug"));
await step("range_count", alice.from("notes").select("slug", { count: "exact" }).order("slug").range(0, 1));
await step("head_count", alice.from("notes").select("*", { count: "exact", head: true }));
await step("single", alice.from("notes").select("slug").eq("slug", "a1").single());
await step("single_none", alice.from("notes").select("slug").eq("slug", "zz").single());
await step("maybe_single_none", alice.from("notes").select("slug").eq("slug", "zz").maybeSingle());
await step("maybe_single_one", alice.from("notes").select("slug").eq("slug", "a2").maybeSingle());
await step("upsert_merge", alice.from("notes").upsert({ title: "A2", slug: "a2", score: 6 }, { onConflict: "slug" }).select("title,score"));
await step("upsert_ignore", alice.from("notes").upsert([{ title: "ignored", slug: "a1" }, { title: "a4", slug: "a4" }], { onConflict: "slug", ignoreDuplicates: true }).select("slug"));
await step("update", alice.from("notes").update({ done: true }).lt("score", 7).select("slug").order("slug"));
await step("update_other_user", bob.from("notes").update({ title: "stolen" }).eq("slug", "a1").select());
await step("delete", alice.from("notes").delete().eq("slug", "a3").select("slug"));
await step("delete_other_user", bob.from("notes").delete().eq("slug", "a1").select());
await step("alice_sees", alice.from("notes").select("slug").order("slug"));
await step("bob_sees", bob.from("notes").select("slug").order("slug"));
await step("rpc_scalar", alice.rpc("add", { a: 1, b: 2 }));
await step("rpc_get", alice.rpc("add", { a: 4, b: 5 }, { get: true }));
await step("rpc_setof", alice.rpc("my_notes", { min_score: 2 }).select("slug").order("slug"));
await step("rpc_composite", alice.rpc("first_note"));
await step("rpc_void", alice.rpc("nothing"));
await step("rpc_missing", alice.rpc("no_such_function"));
await step("embed_to_one", alice.from("books").select("title, authors(name)").order("id"));
await step("embed_to_many", alice.from("authors").select("name, books(title)").order("id").order("title", { referencedTable: "books" }));
await step("embed_many_to_many", alice.from("books").select("title, labels(label)").eq("id", 1).order("label", { referencedTable: "labels" }));
await step("embed_inner", alice.from("authors").select("name, books!inner(title)").eq("books.title", "b2"));
await step("csv", alice.from("authors").select("id,name").order("id").csv());
await step("other_schema", alice.schema("extra").from("things").select("label"));
await step("unique_violation", alice.from("notes").insert({ title: "dup", slug: "a1" }));
await step("missing_table", alice.from("nope").select());
await step("guarded_denied", alice.from("guarded").insert({ title: "x" }));
await step("guarded_admin", admin.from("guarded").insert({ title: "by admin" }).select("title"));

process.stdout.write(JSON.stringify(out));
