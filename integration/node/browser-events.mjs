// Watches a tablegate event stream with EventSource in headless Chromium,
// authenticated by the @supabase/ssr session cookie (a browser's natural
// case), and tries the same stream from another site.
//
// stdin:  {"base": "http://127.0.0.1:A", "other": "http://localhost:B",
//          "cookie": {"name": "...", "value": "..."}, "names": [...], "want": 3}
// stdout: {"events": [{"type", "id", "data"}], "crossSite": {"events": n, "errors": n, "readyState": n},
//          "errors": [...]}
import { launch } from './browser.mjs';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { base, other, cookie, names, want } = JSON.parse(input);

const browser = await launch();
const out = { errors: [] };
try {
  const context = await browser.newContext();
  await context.addCookies([{ name: cookie.name, value: cookie.value, url: base }]);
  const page = await context.newPage();
  page.on('pageerror', (e) => out.errors.push(String(e)));
  await page.goto(`${base}/page`);
  await page.evaluate((names) => {
    window.got = [];
    const es = new EventSource('/api/todos/events');
    for (const n of names) es.addEventListener(n, (ev) => window.got.push({ type: ev.type, id: ev.lastEventId, data: ev.data }));
  }, names);
  await page.waitForFunction((n) => window.got.length >= n, want, { timeout: 45000 });
  out.events = await page.evaluate(() => window.got);

  // The same stream from another site, with credentials.
  const page2 = await context.newPage();
  await page2.goto(`${other}/page`);
  out.crossSite = await page2.evaluate(async ({ base, names }) => {
    const r = { events: 0, errors: 0 };
    const es = new EventSource(`${base}/api/todos/events`, { withCredentials: true });
    for (const n of names) es.addEventListener(n, () => r.events++);
    es.addEventListener('error', () => r.errors++);
    await new Promise((res) => setTimeout(res, 1500));
    r.readyState = es.readyState;
    es.close();
    return r;
  }, { base, names });
} catch (e) {
  out.errors.push(String(e));
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
