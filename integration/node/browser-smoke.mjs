// Renders the HTML given on stdin in headless Chromium and prints the <h1>.
import { launch } from './browser.mjs';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { html } = JSON.parse(input);
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.setContent(html);
  process.stdout.write(JSON.stringify({ text: await page.textContent('h1') }));
} finally {
  await browser.close();
}
