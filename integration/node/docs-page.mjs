// Drives tablegate's API reference page (BASE/docs) in headless Chromium
// like a developer would: search for an operation, expand a response
// schema, send a try-it request with the caller's own token. Input on stdin:
// {url, origin, token, search, searchResult, screenshot}. Prints what it saw
// as JSON; the Go test decides.
import { launch } from './browser.mjs';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { url, origin, token, search, searchResult, screenshot } = JSON.parse(input);

const out = { external: [], consoleErrors: [], pageErrors: [] };
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(15000);
  page.on('console', (m) => { if (m.type() === 'error') out.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => out.pageErrors.push(e.message));
  page.on('request', (r) => { if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) out.external.push(r.url()); });

  const docs = await page.goto(url);
  out.status = docs.status();
  out.csp = docs.headers()['content-security-policy'] || '';
  await page.getByRole('button', { name: /Open Search/ }).waitFor();
  out.title = await page.title();

  // 1. Search: the keyboard shortcut opens the search box; the result
  //    navigates to the operation.
  await page.keyboard.press('Control+k');
  await page.keyboard.type(search);
  await page.getByRole('option', { name: searchResult }).first().click();
  await page.waitForFunction(() => location.hash.length > 1);
  out.searchHash = decodeURIComponent(new URL(page.url()).hash);

  // 2. Expand a schema: the list operation's 200 response is collapsed
  //    until clicked; its page schema names next_cursor.
  //    (The description's and parameters' `next_cursor` code spans are
  //    not the schema's property name.)
  const list = page.locator('section[id$="/tag/todos/GET/todos"]');
  const property = list.getByText('next_cursor', { exact: true }).and(page.locator(':not(code)'));
  const before = await property.count();
  await list.locator('button[id$="/tag/todos/GET/todos.responses.200"]').click();
  await property.first().waitFor();
  out.schemaBefore = before;
  out.schemaAfter = await property.count();

  // 3. Try it: the caller's token in the bearer field, then Send.
  await page.getByPlaceholder('Token').first().fill(token);
  await page.getByRole('button', { name: /Test Request \(get \/todos\)/ }).first().click();
  const sent = page.waitForRequest((r) => r.url().startsWith(origin) && new URL(r.url()).pathname.endsWith('/todos'));
  await page.getByRole('button', { name: /Send get request/ }).first().click();
  const req = await sent;
  const resp = await req.response();
  out.tryStatus = resp.status();
  out.tryAuthorization = req.headers()['authorization'] === 'Bearer ' + token;
  out.tryBody = (await resp.text()).slice(0, 200);
  await page.getByText(/200 OK/).first().waitFor();
  if (screenshot) await page.screenshot({ path: screenshot });
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
