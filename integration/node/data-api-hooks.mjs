// Inserts through tablegate's data API with the real supabase-js into a
// table whose Go hooks and permission must apply, and prints the results.
//
// stdin:  {"url": "...", "key": "...", "token": "<jwt>"}
// stdout: {"<step>": {"data": ..., "error": {"code","message"} | null, "status": n}}
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
  out[name] = { data: data ?? null, error: error ? { code: error.code, message: error.message } : null, status };
};
await step("hooked", db.from("todos").insert([{ title: "one" }, { title: "two" }]).select("title"));
await step("hook_refuses", db.from("todos").insert({ title: "bad" }));
await step("permission_denied", db.from("todos").insert({ title: "forbidden" }));
await step("read_back", db.from("todos").select("title").order("title"));
process.stdout.write(JSON.stringify(out));
