// Calls tablegate's data API with the real supabase-js where a declared
// table's After hooks and approvals apply and where functions run
// read-only, and prints the results.
//
// stdin:  {"url": "...", "key": "...", "token": "<jwt>"}
// stdout: {"<step>": {"data": ..., "error": {"code","message","details"} | null, "status": n}}
import { createClient } from "@supabase/supabase-js";

const input = JSON.parse(await new Promise((resolve) => {
  let s = "";
  process.stdin.on("data", (d) => (s += d));
  process.stdin.on("end", () => resolve(s));
}));
const db = createClient(input.url, input.key, {
  auth: { persistSession: false, autoRefreshToken: false },
  global: { headers: { Authorization: `Bearer ${input.token}` } },
  realtime: { transport: class NoWebSocket {} },
});
const out = {};
const step = async (name, q) => {
  const { data, error, status } = await q;
  out[name] = {
    data: data ?? null,
    error: error ? { code: error.code, message: error.message, details: error.details } : null,
    status,
  };
};
await step("insert", db.from("todos").insert([{ title: "one" }, { title: "two" }]).select("title"));
await step("update", db.from("todos").update({ done: true }).eq("title", "one").select());
await step("list", db.from("todos").select("title, done").order("title"));
await step("approval", db.from("todos").insert({ title: "wait" }));
await step("rpc_stable_write", db.rpc("stable_tick"));
await step("rpc_get_write", db.rpc("tick", {}, { get: true }));
await step("rpc_volatile", db.rpc("tick"));
await step("rpc_stable_read", db.rpc("add", { a: 2, b: 3 }));
process.stdout.write(JSON.stringify(out));
