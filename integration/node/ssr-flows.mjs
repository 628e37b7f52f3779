// Runs one step of a sign-in flow with the real @supabase/ssr clients
// against the auth server at input.url (a Go fake or the demo), for
// tablegate's authflow interop tests.
//
// stdin: {"op": "...", "url", "key", "cookies": [{"name","value"}],
//         "encode": "tokens-only" | undefined, ...op fields}
// ops:
//   oauth-start     createBrowserClient.signInWithOAuth({provider, redirectTo,
//                   skipBrowserRedirect}) → {url}
//   otp-start       createBrowserClient.signInWithOtp({email, emailRedirectTo})
//   exchange        createServerClient.exchangeCodeForSession(code, {flowId?})
//   sign-in         createServerClient.signInWithPassword({email, password})
//   get-session     createServerClient.getSession() (refreshes when expiring)
//   sign-out        createServerClient.signOut({scope})
// stdout: {"error": string|null, "session": {access_token, refresh_token,
//          expires_at, user_id}|null, "url": string|null,
//          "setAll": [{"name","value","options"}], "set_cookie": [...]}
import { createBrowserClient, createServerClient, serializeCookieHeader } from "@supabase/ssr";

const input = JSON.parse(await new Promise((resolve) => {
  let s = "";
  process.stdin.on("data", (d) => (s += d));
  process.stdin.on("end", () => resolve(s));
}));

const setAll = [];
let jar = [...(input.cookies ?? [])];
const cookies = {
  getAll: () => jar,
  setAll: (list) => {
    setAll.push(...list);
    for (const c of list) {
      jar = jar.filter((j) => j.name !== c.name);
      if (c.value !== "" && c.options?.maxAge !== 0) jar.push({ name: c.name, value: c.value });
    }
  },
};
if (input.encode) cookies.encode = input.encode;
const opts = { realtime: { transport: class NoWebSocket {} }, cookies };

const subOf = (jwt) => {
  try {
    return JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString()).sub ?? null;
  } catch {
    return null;
  }
};
const out = { error: null, session: null, url: null };
const sessionOut = (s) =>
  s ? { access_token: s.access_token, refresh_token: s.refresh_token, expires_at: s.expires_at, user_id: subOf(s.access_token) } : null;

switch (input.op) {
  case "oauth-start": {
    const client = createBrowserClient(input.url, input.key, { ...opts, isSingleton: false,
      auth: { autoRefreshToken: false, detectSessionInUrl: false } });
    const { data, error } = await client.auth.signInWithOAuth({
      provider: input.provider, options: { redirectTo: input.redirectTo, skipBrowserRedirect: true },
    });
    out.error = error ? String(error.message ?? error) : null;
    out.url = data?.url ?? null;
    break;
  }
  case "otp-start": {
    const client = createBrowserClient(input.url, input.key, { ...opts, isSingleton: false,
      auth: { autoRefreshToken: false, detectSessionInUrl: false } });
    const { error } = await client.auth.signInWithOtp({ email: input.email, options: { emailRedirectTo: input.redirectTo } });
    out.error = error ? String(error.message ?? error) : null;
    break;
  }
  case "exchange": {
    const client = createServerClient(input.url, input.key, opts);
    const { data, error } = await client.auth.exchangeCodeForSession(input.code, input.flowId ? { flowId: input.flowId } : undefined);
    out.error = error ? `${error.code ?? ""} ${error.message ?? error}` : null;
    out.session = sessionOut(data?.session);
    break;
  }
  case "sign-in": {
    const client = createServerClient(input.url, input.key, opts);
    const { data, error } = await client.auth.signInWithPassword({ email: input.email, password: input.password });
    out.error = error ? String(error.message ?? error) : null;
    out.session = sessionOut(data?.session);
    break;
  }
  case "get-session": {
    const client = createServerClient(input.url, input.key, opts);
    const { data, error } = await client.auth.getSession();
    out.error = error ? `${error.code ?? ""} ${error.message ?? error}` : null;
    out.session = sessionOut(data?.session);
    break;
  }
  case "sign-out": {
    const client = createServerClient(input.url, input.key, opts);
    const { error } = await client.auth.signOut({ scope: input.scope ?? "global" });
    out.error = error ? String(error.message ?? error) : null;
    break;
  }
  default:
    throw new Error(`unknown op ${input.op}`);
}
out.setAll = setAll;
out.set_cookie = setAll.map(({ name, value, options }) => serializeCookieHeader(name, value, options));
process.stdout.write(JSON.stringify(out));
