// Reads sessions from raw Cookie headers with the real @supabase/ssr: for
// each header, parseCookieHeader splits it, a createServerClient gets those
// cookies from getAll, and getSession says which session it loads (none of
// the sessions expire, so no network).
//
// stdin:  {"url": "...", "key": "...", "headers": ["<Cookie header>", ...]}
// stdout: [<JSON.stringify(session)> | null, ...]
import { createServerClient, parseCookieHeader } from "@supabase/ssr";
const input = JSON.parse(await new Promise((resolve) => {
  let s = "";
  process.stdin.on("data", (d) => (s += d));
  process.stdin.on("end", () => resolve(s));
}));
const out = [];
for (const header of input.headers) {
  const cookies = parseCookieHeader(header);
  const client = createServerClient(input.url, input.key, {
    realtime: { transport: class NoWebSocket {} },
    cookies: { getAll: () => cookies, setAll: () => {} },
  });
  const { data } = await client.auth.getSession();
  out.push(data.session ? JSON.stringify(data.session) : null);
}
process.stdout.write(JSON.stringify(out));
