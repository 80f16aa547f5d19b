import { describe, expect, it } from '@jest/globals';
import { hasLoneSurrogate, storableText } from './unicode.js';

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
