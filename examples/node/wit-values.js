// Values at the component boundary in one JSON form (see tests/conformance/cases.json):
// records keyed by WIT field names, option none as null, variants and results as {tag, val};
// and the cases' summariser. The WASI imports and jco's core modules come from the package.

import { camel } from 'scratchpad-tools/jco';

/** A summariser that always answers the same: call your model here. It reports an error by
 * throwing the `summariser-error` value, e.g. when no API key is set. */
export const fixedSummariser = {
  model: () => 'conformance-model',
  summarise: (_request) => 'A fixed summary.',
};

/** One with no key: every request fails as `not-configured`. */
export const unconfiguredSummariser = {
  model: () => 'conformance-model',
  summarise: (_request) => {
    throw { tag: 'not-configured', val: 'no API key' };
  },
};

const kebab = (name) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** JSON form -> jco: camelCase record keys, BigInt numbers (every number the tools take is
 * a u64), undefined for none. An object with a `tag` is a variant. */
export function toJco(value) {
  if (value === null) return undefined;
  if (typeof value === 'number') return BigInt(value);
  if (Array.isArray(value)) return value.map(toJco);
  if (typeof value !== 'object') return value;
  if ('tag' in value) return { tag: value.tag, val: toJco(value.val ?? null) };
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), toJco(v)]));
}

/** jco -> JSON form. */
export function fromJco(value) {
  if (value === undefined) return null;
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(fromJco);
  if (value === null || typeof value !== 'object') return value;
  if ('tag' in value) {
    return value.val === undefined ? { tag: value.tag } : { tag: value.tag, val: fromJco(value.val) };
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [kebab(k), fromJco(v)]));
}
