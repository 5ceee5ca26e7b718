// `scratchpad:mcp/storage` in memory, the way jco hands it to the component: functions with
// camelCase names, u64 as BigInt, option none as undefined. Put your database here.

import { createHash } from 'node:crypto';

const now = () => new Date().toISOString();
const bytesOf = (text) => BigInt(Buffer.byteLength(text, 'utf8'));

export class MemoryStorage {
  constructor(limits = {}) {
    this.overrides = limits; // WIT names, e.g. { 'versions-kept': 2 }
    this.state = { files: new Map(), logs: new Map(), logMeta: new Map(), summaries: new Map(), usage: new Map() };
  }

  /** The storage functions for one call, refusing any agent but the call's own. */
  forAgent(agent) {
    const check = (other) => {
      if (other !== agent) {
        throw new Error(`storage request for agent ${other} in a call for ${agent}`);
      }
    };
    const methods = {};
    for (const name of Object.getOwnPropertyNames(MemoryStorage.prototype)) {
      if (['constructor', 'forAgent', 'counters', 'meta'].includes(name)) continue;
      methods[name] = (other, ...args) => (check(other), this[name](other, ...args));
    }
    return methods;
  }

  counters(agent) {
    const { usage } = this.state;
    if (!usage.has(agent)) {
      usage.set(agent, { totalBytes: 0n, fileCount: 0n, logEntryCount: 0n, totalOperations: 0n });
    }
    return usage.get(agent);
  }

  statFile(agent, path) {
    const file = this.state.files.get(`${agent}\0${path}`);
    if (!file) return undefined;
    const kept = [...file.versions.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      // The hash the contract asks a store to keep: SHA-256 of the content's UTF-8, hex.
      .map(([version, v]) => ({ version, bytes: bytesOf(v.content), sha256: createHash('sha256').update(v.content).digest('hex'), createdAt: v.createdAt }));
    return { lastVersion: file.last, kept };
  }

  readVersion(agent, path, version) {
    return this.state.files.get(`${agent}\0${path}`)?.versions.get(version)?.content;
  }

  putVersion(agent, path, version, content) {
    const key = `${agent}\0${path}`;
    const file = this.state.files.get(key) ?? { last: 0n, versions: new Map(), path };
    if (version <= file.last) throw new Error(`version ${version} of ${path} is not above ${file.last}`);
    const counters = this.counters(agent);
    if (file.versions.size === 0) counters.fileCount += 1n;
    file.last = version;
    file.updatedAt = now();
    file.versions.set(version, { content, createdAt: file.updatedAt });
    counters.totalBytes += bytesOf(content);
    this.state.files.set(key, file);
  }

  pruneVersions(agent, path, keepFrom) {
    const file = this.state.files.get(`${agent}\0${path}`);
    for (const [version, v] of file.versions) {
      if (version >= keepFrom) continue;
      file.versions.delete(version);
      this.counters(agent).totalBytes -= bytesOf(v.content);
      for (const key of this.state.summaries.keys()) {
        if (key.startsWith(`${agent}\0${path}\0${version}\0`)) this.state.summaries.delete(key);
      }
    }
  }

  deleteFile(agent, path) {
    const file = this.state.files.get(`${agent}\0${path}`);
    if (!file || file.versions.size === 0) return false;
    this.pruneVersions(agent, path, file.last + 1n);
    this.counters(agent).fileCount -= 1n;
    return true;
  }

  listFiles(agent, prefix) {
    const found = [];
    for (const [key, file] of this.state.files) {
      if (!key.startsWith(`${agent}\0`) || file.versions.size === 0 || !file.path.startsWith(prefix)) continue;
      const version = [...file.versions.keys()].reduce((a, b) => (a > b ? a : b));
      const { content } = file.versions.get(version);
      found.push({ path: file.path, version, bytes: bytesOf(content), updatedAt: file.updatedAt });
    }
    return found.sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  }

  meta(agent, path) {
    const key = `${agent}\0${path}`;
    if (!this.state.logMeta.has(key)) {
      this.state.logMeta.set(key, { lastId: 0n, retention: { keepLast: undefined, maxAgeSeconds: undefined } });
    }
    return this.state.logMeta.get(key);
  }

  appendLog(agent, path, entry, bytes) {
    const key = `${agent}\0${path}`;
    const log = this.state.logs.get(key) ?? [];
    const meta = this.meta(agent, path);
    meta.lastId += 1n;
    const id = meta.lastId;
    log.push({ id, entry, createdAt: now() });
    this.state.logs.set(key, log);
    const counters = this.counters(agent);
    counters.totalBytes += bytes;
    counters.logEntryCount += 1n;
    return id;
  }

  logInfo(agent, path) {
    const { lastId, retention } = this.meta(agent, path);
    const entries = BigInt((this.state.logs.get(`${agent}\0${path}`) ?? []).length);
    return { lastId, entries, retention: { ...retention } };
  }

  setLogRetention(agent, path, retention) {
    this.meta(agent, path).retention = { ...retention };
  }

  trimLog(agent, path, before, olderThanSeconds) {
    const key = `${agent}\0${path}`;
    const cutoff = olderThanSeconds === undefined
      ? undefined
      : new Date(Date.now() - Number(olderThanSeconds) * 1000).toISOString();
    const log = this.state.logs.get(key) ?? [];
    const gone = log.filter((e) => e.id < before || (cutoff !== undefined && e.createdAt < cutoff));
    this.state.logs.set(key, log.filter((e) => !gone.includes(e)));
    const counters = this.counters(agent);
    for (const e of gone) {
      counters.totalBytes -= bytesOf(e.entry.val);
      counters.logEntryCount -= 1n;
    }
    return BigInt(gone.length);
  }

  readLog(agent, path, after, limit) {
    const log = this.state.logs.get(`${agent}\0${path}`) ?? [];
    return log.filter((e) => e.id > after).slice(0, limit);
  }

  getUsage(agent) {
    return { ...this.counters(agent) };
  }

  cachedSummary(agent, path, version, model) {
    return this.state.summaries.get(`${agent}\0${path}\0${version}\0${model}`);
  }

  putSummary(agent, path, version, model, summary) {
    this.state.summaries.set(`${agent}\0${path}\0${version}\0${model}`, summary);
  }

  /** Current file versions and log entries holding all (or any) of `terms`, most
   * occurrences first. A real store would use its full-text index (SQLite FTS5, say). */
  search(agent, terms, matchAll, prefix, limit, offset) {
    const score = (text) => {
      const words = (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
      const held = (t) => words.includes(t);
      if (!(matchAll ? terms.every(held) : terms.some(held))) return undefined;
      return words.filter((w) => terms.includes(w)).length;
    };
    const hits = [];
    for (const [key, file] of this.state.files) {
      if (!key.startsWith(`${agent}\0`) || file.versions.size === 0 || !file.path.startsWith(prefix)) continue;
      const version = [...file.versions.keys()].reduce((a, b) => (a > b ? a : b));
      const n = score(file.versions.get(version).content);
      if (n !== undefined) hits.push([n, { path: file.path, at: { tag: 'file', val: version } }]);
    }
    for (const [key, log] of this.state.logs) {
      const path = key.slice(agent.length + 1);
      if (!key.startsWith(`${agent}\0`) || !path.startsWith(prefix)) continue;
      for (const e of log) {
        const n = score(e.entry.val);
        if (n !== undefined) hits.push([n, { path, at: { tag: 'log-entry', val: e.id } }]);
      }
    }
    hits.sort(([a], [b]) => b - a);
    return hits.slice(offset, offset + limit).map(([, m]) => m);
  }

  limits() {
    const big = (name) => (this.overrides[name] === undefined ? undefined : BigInt(this.overrides[name]));
    const small = (name) => this.overrides[name];
    return {
      maxFiles: big('max-files'),
      maxLogEntries: big('max-log-entries'),
      maxTotalBytes: big('max-total-bytes'),
      maxWriteBytes: big('max-write-bytes'),
      maxLogEntryBytes: big('max-log-entry-bytes'),
      versionsKept: small('versions-kept'),
      logPageSize: small('log-page-size'),
      maxResponseTokens: big('max-response-tokens'),
    };
  }
}
