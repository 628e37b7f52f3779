// Watches a tablegate event stream with the real `eventsource` package
// (the EventSource implementation Node apps use) and prints what it got.
//
// stdin:  {"url": "...", "token": "...", "names": ["todos.created", ...], "want": 6}
// stdout: {"events": [{"type": "...", "id": "...", "data": "..."}], "opens": n, "errors": n}
//
// The client sends the token as a Bearer header through its fetch option;
// when the server ends the stream it reconnects by itself, sending
// Last-Event-ID, exactly as a browser's EventSource does.
import { EventSource } from "eventsource";

const input = JSON.parse(await new Promise((resolve) => {
  let s = "";
  process.stdin.on("data", (d) => (s += d));
  process.stdin.on("end", () => resolve(s));
}));

const events = [];
let opens = 0;
let errors = 0;
const es = new EventSource(input.url, {
  fetch: (url, init) => fetch(url, {
    ...init,
    headers: { ...init.headers, Authorization: `Bearer ${input.token}` },
  }),
});
const done = new Promise((resolve) => {
  for (const name of input.names) {
    es.addEventListener(name, (ev) => {
      events.push({ type: ev.type, id: ev.lastEventId, data: ev.data });
      if (events.length >= input.want) resolve();
    });
  }
});
es.addEventListener("open", () => { opens++; });
es.addEventListener("error", () => { errors++; });
const timer = setTimeout(() => { es.close(); process.stdout.write(JSON.stringify({ events, opens, errors, timeout: true })); process.exit(0); }, input.timeout_ms ?? 20000);
await done;
clearTimeout(timer);
es.close();
process.stdout.write(JSON.stringify({ events, opens, errors }));
