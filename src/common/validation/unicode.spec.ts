import { describe, expect, it } from '@jest/globals';
import {
  hasLoneSurrogate,
  invalidPercentEscape,
  jsonTextProblem,
  mayHoldLoneSurrogate,
  storableText,
  wellFormed,
} from './unicode.js';

describe('unpaired surrogates', () => {
  it('tells a pair from a lone high or low surrogate', () => {
    expect(hasLoneSurrogate('😀 \ud83d\ude00')).toBe(false);
    expect(hasLoneSurrogate('a\ud800')).toBe(true);
    expect(hasLoneSurrogate('\udc00a')).toBe(true);
    expect(hasLoneSurrogate('\ude00\ud83d')).toBe(true);
    expect(wellFormed('a\ud800b')).toBe('a\ufffdb');
  });

  it('walks a parsed body only when its text has a surrogate escape (valid UTF-8 encodes none)', () => {
    expect(mayHoldLoneSurrogate('{"name":"plain 😀 text \\u00e9"}')).toBe(false);
    expect(mayHoldLoneSurrogate('{"name":"a\\ud800"}')).toBe(true);
    expect(mayHoldLoneSurrogate('{"name":"a\\uDFFF"}')).toBe(true);
    expect(mayHoldLoneSurrogate('{"name":"\\ud83d\\ude00"}')).toBe(true); // a pair: walked, then passed
    // Every lone surrogate JSON.parse can produce comes from such an escape.
    for (const text of ['"\\ud800"', '"\\uDBFF"', '"\\udc00"', '"\\uDFFF"']) {
      expect(hasLoneSurrogate(JSON.parse(text) as string)).toBe(mayHoldLoneSurrogate(text));
    }
  });

  it('names the first field whose value or key holds one, as the validation pipe names fields', () => {
    const field = (value: unknown) => jsonTextProblem(value, { nul: false })?.field ?? null;
    expect(field({ a: 'ok', b: [1, null, { c: '😀' }] })).toBeNull();
    expect(field({ a: 'ok', b: [1, { c: 'x\ud800' }] })).toBe('b.1.c');
    expect(field([{ name: '\udfff' }])).toBe('0.name');
    expect(field({ outer: { ['k\udfff']: 1 } })).toBe('outer.k\ufffd');
    // A NUL only when asked for: the body check leaves it to the field validators.
    expect(field({ a: 'x\u0000' })).toBeNull();
    expect(jsonTextProblem({ a: ['x\u0000'] })).toEqual({ kind: 'nul', field: 'a.0' });
  });

  it('refuses an object nested deeper than maxDepth levels, the value itself being level 1', () => {
    const nested = (levels: number): unknown => (levels === 1 ? {} : { a: nested(levels - 1) });
    expect(jsonTextProblem(nested(3), { maxDepth: 3 })).toBeNull();
    expect(jsonTextProblem(nested(4), { maxDepth: 3 })).toEqual({ kind: 'too_deep', field: 'a.a.a' });
  });
});

describe('storableText', () => {
  it('escapes NUL and unpaired surrogates, deterministically, and keeps everything else', () => {
    expect(storableText('evt_\u0000x')).toBe('evt_\\u0000x');
    expect(storableText('\ud800')).toBe('\\ud800');
    expect(storableText('a\udfffb\u0000\u0000')).toBe('a\\udfffb\\u0000\\u0000');
    // A pair cut in two (a clipped id ending in half an emoji) keeps its first half as an escape.
    expect(storableText('evt_😀'.slice(0, -1))).toBe('evt_\\ud83d');
    for (const kept of ['evt_01h', 'ünïcödé 😀', 'tab\tand\u0001control', 'back\\slash', '']) {
      expect(storableText(kept)).toBe(kept);
    }
    for (const value of ['\u0000', '\ud800x', 'x\udc00', '😀'.slice(1)]) {
      const stored = storableText(value);
      expect(stored.includes('\u0000') || hasLoneSurrogate(stored)).toBe(false);
      expect(storableText(value)).toBe(stored);
    }
  });
});

describe('invalidPercentEscape', () => {
  it('finds the first run of escapes that is not UTF-8, with where it starts', () => {
    expect(invalidPercentEscape('a=%FF')).toEqual({ at: 2, escape: '%FF' });
    expect(invalidPercentEscape('a=%C3%A9&b=x%C3%28y')).toEqual({ at: 12, escape: '%C3%28' });
    // An encoded surrogate, a sequence cut short (by a literal or by the end), an overlong form, a lone
    // continuation byte, lower-case hex.
    for (const bad of ['%ED%A0%80', '%E2%82x', '%E2%82', '%C0%AF', '%80', '%f0%9f%98']) {
      expect(invalidPercentEscape(`q=${bad}`)).toEqual({ at: 2, escape: bad.replace(/x$/, '') });
    }
  });

  it('passes UTF-8 escapes, ASCII escapes, text without escapes and a % that is no escape', () => {
    for (const fine of [
      '',
      'a=b',
      'q=caf%C3%A9',
      'e=%F0%9F%98%80',
      's=%20%2B%26',
      'p=100%',
      'x=%G1%',
      'y=%C',
    ]) {
      expect(invalidPercentEscape(fine)).toBeNull();
    }
  });
});
