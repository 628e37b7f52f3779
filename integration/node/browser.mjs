// Shared by the browser tests: launch Debian's headless Chromium through
// playwright-core with the flags this machine kind needs (no background
// networking: the sandbox refuses outside connections).
import { chromium } from 'playwright-core';

export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export function launch(options = {}) {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    ...options,
  });
}
