// Forwards every request to the server with its bearer key added, byte for byte otherwise
// (streams included): the conformance suite's client cannot send an Authorization header,
// and hosted mode refuses every request without one.
//
// node auth-proxy.mjs LISTEN_PORT TARGET_PORT   (the key in SCRATCHPAD_KEY)
import http from "node:http";

const [listenPort, targetPort] = process.argv.slice(2).map(Number);
const key = process.env.SCRATCHPAD_KEY;
if (!listenPort || !targetPort || !key) {
  console.error("usage: SCRATCHPAD_KEY=... node auth-proxy.mjs LISTEN_PORT TARGET_PORT");
  process.exit(2);
}

http
  .createServer((req, res) => {
    const upstream = http.request(
      {
        host: "127.0.0.1",
        port: targetPort,
        method: req.method,
        path: req.url,
        // The Host the client sent goes through unchanged, so Host checks still apply.
        headers: { ...req.headers, authorization: `Bearer ${key}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  })
  .listen(listenPort, "127.0.0.1", () => console.error(`auth-proxy: ${listenPort} -> ${targetPort}`));
