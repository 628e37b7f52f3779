// Reads tablegate's API reference page (BASE/docs) in headless Chromium the
// way a newcomer does: the list operation's description must show the list
// grammar as written (angle brackets included, not eaten as HTML), and the
// try-it request of the create operation must offer the document's example
// body. Input on stdin: {url, section, grammar, screenshot}. Prints what it
// saw as JSON; the Go test decides.
import { launch } from './browser.mjs';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { url, section, grammar, screenshot } = JSON.parse(input);

const out = { consoleErrors: [], pageErrors: [] };
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(15000);
  page.on('console', (m) => { if (m.type() === 'error') out.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => out.pageErrors.push(e.message));
  const resp = await page.goto(url);
  out.status = resp.status();
  await page.getByRole('button', { name: /Open Search/ }).waitFor();

  // The list operation's description, as rendered.
  const list = page.locator(`section[id$="${section}"]`).first();
  await list.scrollIntoViewIfNeeded();
  const grammarText = list.getByText(grammar, { exact: true }).first();
  await grammarText.waitFor({ state: 'visible' });
  out.grammarVisible = await grammarText.isVisible();
  out.grammarTag = await grammarText.evaluate((e) => e.tagName.toLowerCase());
  const text = await list.innerText();
  const i = text.indexOf('Filter with');
  out.listText = i >= 0 ? text.slice(i, i + 200) : text.slice(0, 400);
  await grammarText.scrollIntoViewIfNeeded();
  if (screenshot) await page.screenshot({ path: screenshot });

  // The create operation's try-it: the body offered is the document's example.
  await page.getByRole('button', { name: /Test Request \(post \/todos\)/ }).first().click();
  const editor = page.locator('.cm-content').filter({ hasText: '"title"' }).first();
  await editor.waitFor();
  out.createBody = await editor.innerText();
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
