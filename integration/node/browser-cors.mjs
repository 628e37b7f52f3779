// Cross-origin fetches from pages in headless Chromium: for each call,
// open the page, fetch the URL with the Bearer token (a preflighted
// request) and report the status, a response header the server exposes,
// and the body — or the error the browser raised when CORS refused it.
import { launch } from './browser.mjs';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { calls } = JSON.parse(input);
const browser = await launch();
const results = [];
try {
  const context = await browser.newContext();
  for (const call of calls) {
    const page = await context.newPage();
    await page.goto(call.page);
    results.push(await page.evaluate(async ({ url, token, method, body }) => {
      try {
        const headers = { Authorization: 'Bearer ' + token };
        if (body !== undefined) headers['Content-Type'] = 'application/json';
        const r = await fetch(url, { method: method || 'GET', headers, body });
        return { status: r.status, requestId: r.headers.get('x-request-id'), body: await r.text() };
      } catch (e) {
        return { error: String(e) };
      }
    }, call));
    await page.close();
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify({ results }));
