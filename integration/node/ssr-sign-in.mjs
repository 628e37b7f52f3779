// Signs in with the real @supabase/ssr createServerClient against the auth
// server at input.url (a Go httptest fake) and prints the cookies the
// library writes.
//
// stdin:  {"url": "...", "key": "...", "email": "...", "password": "...",
//          "cookies": [{"name","value"}] (optional request cookies),
//          "cookieOptions": {...} (optional)}
// stdout: {"error": "..." | null, "setAll": [{"name","value","options"}],
//          "set_cookie": ["<Set-Cookie line>", ...], "headers": {...}}
import { createServerClient, serializeCookieHeader } from "@supabase/ssr";

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
  cookieOptions: input.cookieOptions,
  cookies: {
    getAll: () => input.cookies ?? [],
    setAll: (cookies, h) => {
      setAll.push(...cookies);
      headers = { ...headers, ...h };
    },
  },
});

const { error } = await client.auth.signInWithPassword({ email: input.email, password: input.password });
process.stdout.write(JSON.stringify({
  error: error ? String(error.message ?? error) : null,
  setAll,
  set_cookie: setAll.map(({ name, value, options }) => serializeCookieHeader(name, value, options)),
  headers,
}));
