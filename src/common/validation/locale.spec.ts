import { describe, expect, it } from '@jest/globals';
import { canonicalLocale, localeMatchKeys } from './locale.js';

describe('canonicalLocale', () => {
  it('puts a tag in BCP 47 canonical case', () => {
    expect(canonicalLocale('EN')).toBe('en');
    expect(canonicalLocale('en-us')).toBe('en-US');
    expect(canonicalLocale('ZH-HANT-tw')).toBe('zh-Hant-TW');
    expect(canonicalLocale('sr-latn')).toBe('sr-Latn');
    expect(canonicalLocale('DE-CH-1996')).toBe('de-CH-1996');
    expect(canonicalLocale('es-419')).toBe('es-419');
    // Intl's canonical form also puts variants in alphabetical order (UTS 35): one form per locale.
    expect(canonicalLocale('sl-ROZAJ-biske')).toBe('sl-biske-rozaj');
    expect(canonicalLocale('de-CH')).toBe('de-CH');
  });

  it('agrees with Intl.getCanonicalLocales on every tag whose canonical form has the stored shape', () => {
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
      'iw',
      'in-ID',
      'ji',
      'mo-MD',
      'tl-ph',
      'sh',
      'heb',
      'cmn-Hans',
      'en-UK',
      'de-DD',
    ];
    for (const tag of tags) {
      expect({ tag, canonical: canonicalLocale(tag) }).toEqual({
        tag,
        canonical: Intl.getCanonicalLocales(tag)[0],
      });
    }
  });

  it('replaces deprecated and legacy codes by their replacement (Node 24, CLDR 48)', () => {
    for (const [tag, canonical] of [
      ['iw', 'he'],
      ['IW-il', 'he-IL'],
      ['in', 'id'],
      ['ji', 'yi'],
      ['jw', 'jv'],
      ['mo', 'ro'],
      ['tl-ph', 'fil-PH'],
      ['sh-BA', 'sr-Latn-BA'],
      ['en-UK', 'en-GB'],
      ['iw-IL-1996-1901', 'he-IL-1901-1996'],
      // Not aliases: Norwegian (nb and nn are written standards of it), and the replacements themselves.
      ['no', 'no'],
      ['he', 'he'],
      ['id', 'id'],
    ]) {
      expect({ tag, canonical: canonicalLocale(tag) }).toEqual({ tag, canonical });
    }
  });

  it('keeps the subtags when the replacement is not of the stored shape, so what is stored is accepted back', () => {
    // Intl: en-US-u-va-posix (an extension) and sr-Latn-BA-1901-1996 (four subtags after the language).
    expect(canonicalLocale('en-us-posix')).toBe('en-US-posix');
    expect(canonicalLocale('sh-ba-1996-1901')).toBe('sh-BA-1996-1901');
    for (const tag of ['he', 'he-IL', 'sr-Latn-BA', 'en-US-posix', 'sh-BA-1996-1901', 'zh-Hant-TW']) {
      expect({ tag, again: canonicalLocale(tag) }).toEqual({ tag, again: tag });
    }
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

describe('localeMatchKeys', () => {
  it('adds the replacement of an alias the admin wrote', () => {
    expect(localeMatchKeys('IW')).toEqual(expect.arrayContaining(['iw', 'he']));
  });

  it('adds every alias stored under the written tag, from the same alias data as canonicalLocale', () => {
    expect(localeMatchKeys('he')).toEqual(['he', ...['heb', 'iw'].sort()]);
    expect(localeMatchKeys('id')).toEqual(expect.arrayContaining(['id', 'in']));
    expect(localeMatchKeys('yi')).toEqual(expect.arrayContaining(['yi', 'ji']));
    expect(localeMatchKeys('he_IL')).toEqual(expect.arrayContaining(['he-il', 'iw-il']));
    expect(localeMatchKeys('sr-Latn')).toEqual(expect.arrayContaining(['sr-latn', 'sh']));
    // Every key names a tag that canonicalLocale stores under the written one.
    for (const key of localeMatchKeys('ro')) expect(canonicalLocale(key)).toBe('ro');
  });
});
