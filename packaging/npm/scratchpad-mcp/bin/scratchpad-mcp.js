#!/usr/bin/env node
// `npx scratchpad-mcp`: runs the native binary from this platform's package with the same
// arguments, stdio and environment, passes signals on, and exits as it exits. MCP clients
// speak to the binary itself over stdio; this process only waits.
"use strict";

const { spawn } = require("node:child_process");
const { platforms } = require("../platforms.json");

const platform = `${process.platform}-${process.arch}`;
if (!(platform in platforms)) {
  fail(`no prebuilt binary for ${platform}; build it with \`cargo install scratchpad-mcp\``);
}
const pkg = `@scratchpad-mcp/${platform}`;
let binary;
try {
  binary = require.resolve(`${pkg}/bin/${platforms[platform].binary}`);
} catch {
  fail(
    `${pkg} is not installed (npm skips optional dependencies with --omit=optional); ` +
      `reinstall without that flag`,
  );
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (e) => fail(`cannot run ${binary}: ${e.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what happened to the server.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});

function fail(message) {
  process.stderr.write(`scratchpad-mcp: ${message}\n`);
  process.exit(1);
}
