// Drives the demo's /account page in headless Chromium: sign in with a
// password, see the user, wait until the access token is inside the
// refresh leeway, reload (the server refreshes the session), sign out,
// see anon/signed_out, then sign in again through the OAuth (PKCE) link.
// Prints what the page showed at each step.
//
// stdin:  {"base": "http://127.0.0.1:PORT", "email", "password", "waitMs"}
// stdout: {"before": {...}, "signedIn": {...}, "reloaded": {...},
//          "signedOut": {...}, "cookiesAfter": [names], "errors": [...]}
import { launch } from './browser.mjs';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { base, email, password, waitMs } = JSON.parse(input);

const browser = await launch();
const out = { errors: [] };
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('pageerror', (e) => out.errors.push(String(e)));
  const read = async () => ({
    url: page.url(),
    kind: await page.textContent('#kind'),
    reason: (await page.locator('#reason').count()) ? await page.textContent('#reason') : null,
    userId: (await page.locator('#user-id').count()) ? await page.textContent('#user-id') : null,
    exp: (await page.locator('#exp').count()) ? Number(await page.textContent('#exp')) : null,
  });
  await page.goto(`${base}/account`);
  out.before = await read();
  await page.fill('input[name=email]', email);
  await page.fill('input[name=password]', password);
  await Promise.all([page.waitForURL(`${base}/account`), page.click('#sign-in')]);
  out.signedIn = await read();
  await page.waitForTimeout(waitMs);
  // A request with a still-valid token waits at most the server's
  // RefreshWait (250 ms) for the refresh; on a loaded machine the refresh
  // finishes in the background and reaches the next load. Reload until the
  // session is refreshed (or no longer a user), for at most 10 s.
  const deadline = Date.now() + 10000;
  out.reloads = 0;
  do {
    await page.reload();
    out.reloads++;
    out.reloaded = await read();
  } while (out.reloaded.kind === 'user' && out.reloaded.exp === out.signedIn.exp && Date.now() < deadline);
  await Promise.all([page.waitForURL(`${base}/account`), page.click('#sign-out')]);
  out.signedOut = await read();
  await page.reload();
  out.afterReload = await read();
  out.cookiesAfter = (await context.cookies()).map((c) => c.name);
  // OAuth with PKCE through real redirects: /auth/oauth → the demo's
  // /authorize → /auth/callback?code=…&sb_flow_id=… → /account.
  await Promise.all([page.waitForURL(`${base}/account`), page.click('#oauth')]);
  out.oauth = await read();
  out.cookiesAfterOAuth = (await context.cookies()).map((c) => c.name);
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
