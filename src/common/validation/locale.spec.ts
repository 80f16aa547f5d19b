import { describe, expect, it } from '@jest/globals';
import { canonicalLocale } from './locale.js';

describe('canonicalLocale', () => {
  it('puts a tag in BCP 47 canonical case', () => {
    expect(canonicalLocale('EN')).toBe('en');
    expect(canonicalLocale('en-us')).toBe('en-US');
    expect(canonicalLocale('ZH-HANT-tw')).toBe('zh-Hant-TW');
    expect(canonicalLocale('sr-latn')).toBe('sr-Latn');
    expect(canonicalLocale('DE-CH-1996')).toBe('de-CH-1996');
    expect(canonicalLocale('es-419')).toBe('es-419');
    expect(canonicalLocale('sl-ROZAJ-biske')).toBe('sl-rozaj-biske');
    expect(canonicalLocale('de-CH')).toBe('de-CH');
  });

  it('agrees with Intl.getCanonicalLocales on every tag Intl does not replace by an alias', () => {
    const tags = [
      'en',
      'EN-gb',
      'fr-ca',
      'PT-br',
      'zh-hans-CN',
      'ZH-hant-HK',
      'sr-CYRL-rs',
      'az-latn',
      'uz-arab-AF',
      'de-at-1901',
      'de-1996',
      'ca-ES-valencia',
      'en-GB-oxendict',
      'es-419',
      'yue-HK',
      'und',
      'AR-001',
      'hy-arevela',
      'ja-JPAN',
      'ko-KORE-kr',
      'NB-no',
      'gsw-CH',
      'fil-PH',
      'haw-US',
    ];
    for (const tag of tags) {
      const intl = Intl.getCanonicalLocales(tag)[0];
      if (intl.toLowerCase() !== tag.toLowerCase()) continue;
      expect({ tag, canonical: canonicalLocale(tag) }).toEqual({ tag, canonical: intl });
    }
  });

  it('keeps the subtags: no alias replacement, so a stored tag is accepted again as it is', () => {
    // Intl would give he, fil, id and en-US-u-va-posix.
    expect(canonicalLocale('IW')).toBe('iw');
    expect(canonicalLocale('tl-ph')).toBe('tl-PH');
    expect(canonicalLocale('in')).toBe('in');
    expect(canonicalLocale('en-us-posix')).toBe('en-US-posix');
    for (const tag of ['iw', 'tl-PH', 'en-US-posix']) expect(canonicalLocale(tag)).toBe(tag);
  });

  it('refuses what is not a well-formed tag of the stored shape', () => {
    for (const tag of [
      '',
      'e',
      'english',
      'en-',
      '-en',
      'en--us',
      'en_US',
      'en US',
      ' en',
      'en-12',
      'en-a1',
      'de-DE-DE',
      'de-1996-1996',
      'zh-yue',
      'de-abc',
      'x-private',
      'en-x-foo',
      'en-US-u-ca-gregory',
      'i-klingon',
      'en-US-abcde-fghij-klmno',
      'ＥＮ',
      'en-\u0130S',
      `en-${'a'.repeat(40)}`,
    ]) {
      expect({ tag, canonical: canonicalLocale(tag) }).toEqual({ tag, canonical: null });
    }
    expect(canonicalLocale(42 as unknown as string)).toBeNull();
  });
});
