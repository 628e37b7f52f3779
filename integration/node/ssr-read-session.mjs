// Reads a session with the real @supabase/ssr createServerClient from the
// cookies given on stdin and prints what the client sees.
//
// stdin:  {"url": "...", "key": "...", "cookies": [{"name": "...", "value": "..."}]}
// stdout: {"session": {...} | null, "session_json": "<JSON.stringify(session)>",
//          "error": "..." | null, "setAll": [...], "headers": {...}}
//
// A session that is not about to expire is returned without any network
// call; the cookies must then decode to exactly the stored session.
import { createServerClient } from "@supabase/ssr";

const input = JSON.parse(await new Promise((resolve) => {
  let s = "";
  process.stdin.on("data", (d) => (s += d));
  process.stdin.on("end", () => resolve(s));
}));

const setAll = [];
let headers = {};
const client = createServerClient(input.url, input.key, {
  // Node 20 has no global WebSocket; realtime is never used here.
  realtime: { transport: class NoWebSocket {} },
  cookies: {
    getAll: () => input.cookies,
    setAll: (cookies, h) => {
      setAll.push(...cookies);
      headers = { ...headers, ...h };
    },
  },
});

const { data, error } = await client.auth.getSession();
process.stdout.write(JSON.stringify({
  session: data.session,
  session_json: data.session ? JSON.stringify(data.session) : null,
  error: error ? String(error.message ?? error) : null,
  setAll,
  headers,
}));
