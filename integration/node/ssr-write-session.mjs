// Writes a session cookie with the real @supabase/ssr server client, the
// way an app's sign-in route would, and prints the cookies it set.
//
// Input (stdin, JSON): {"url", "key", "access_token", "expires_at",
//   "user_id", "bio", "encoding"} (encoding: "base64url", the default, or "raw"). GoTrue is not running: fetch is mocked to answer
// the password grant with a session carrying the given access token.
// Output (stdout, JSON): {"cookies":[{"name","value"}], "set_cookie":[…],
//   "headers":{…}}; set_cookie holds the Set-Cookie header lines as
//   @supabase/ssr's serializeCookieHeader renders them.
import { createServerClient, serializeCookieHeader } from '@supabase/ssr'

const input = JSON.parse(await new Promise((resolve) => {
  let data = ''
  process.stdin.on('data', (c) => { data += c })
  process.stdin.on('end', () => resolve(data))
}))

const session = {
  access_token: input.access_token,
  token_type: 'bearer',
  expires_in: 3600,
  expires_at: input.expires_at,
  refresh_token: 'abcdefghijkl',
  user: {
    id: input.user_id,
    aud: 'authenticated',
    role: 'authenticated',
    email: 'a@example.com',
    phone: '',
    app_metadata: { provider: 'email', providers: ['email'] },
    user_metadata: input.bio ? { bio: input.bio, name: 'Zoë ✓' } : {},
    identities: [],
    created_at: '2024-01-01T00:00:00Z',
    updated_at: '2024-01-01T00:00:00Z',
    is_anonymous: false,
  },
}

const requests = []
const mockFetch = async (url, init) => {
  requests.push(String(url))
  if (String(url).includes('/auth/v1/token?grant_type=password')) {
    return new Response(JSON.stringify(session), {
      status: 200,
      headers: { 'content-type': 'application/json', 'x-supabase-api-version': '2024-01-01' },
    })
  }
  return new Response('{"message":"unexpected request in test"}', { status: 500 })
}

const written = []
let headers = {}
const supabase = createServerClient(input.url, input.key, {
  cookies: {
    getAll: () => [],
    setAll: (cookies, h) => {
      written.push(...cookies)
      if (h && Object.keys(h).length) headers = h
    },
  },
  global: { fetch: mockFetch },
  // Node 20 has no global WebSocket; realtime is never used here.
  realtime: { transport: class NoWebSocket {} },
  cookieEncoding: input.encoding || 'base64url',
})

const { error } = await supabase.auth.signInWithPassword({ email: 'a@example.com', password: 'pw' })
if (error) {
  console.error('signInWithPassword failed:', error.message)
  process.exit(1)
}
// setAll runs from the auth state listener, asynchronously (auth-js may
// hold the notification until its initialization resolves): wait for it,
// at most 10 s, instead of guessing how long that takes on a loaded machine.
for (const deadline = Date.now() + 10000; written.length === 0 && Date.now() < deadline; ) {
  await new Promise((r) => setTimeout(r, 5))
}
if (written.length === 0) {
  console.error('setAll was not called within 10 s of signInWithPassword')
  process.exit(1)
}
process.stdout.write(JSON.stringify({
  cookies: written.filter((c) => c.value !== '').map((c) => ({ name: c.name, value: c.value })),
  set_cookie: written.map((c) => serializeCookieHeader(c.name, c.value, c.options)),
  headers,
  requests,
}))
