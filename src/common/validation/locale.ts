import { ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * The language tags we store (`users.locale`): a language and up to three subtags, hyphenated (`en`,
 * `de-CH`, `zh-Hant-TW`, `de-CH-1996`); no extensions, private use or `_`. At most 35 characters.
 */
const LOCALE_SHAPE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$/;
export const LOCALE_MAX_LENGTH = 35;

/**
 * `tag` as we store it (`users.locale`), or null when it is not a well-formed tag of the shape above.
 * Well-formed is what `Intl.getCanonicalLocales` accepts (it refuses `en-12`, `de-DE-DE`, a repeated
 * variant), so the stored value is always one that `Intl` and the e-mail templates can read. The stored
 * value is Intl's canonical form (UTS 35, the CLDR data of the Node.js runtime): BCP 47 canonical case
 * (RFC 5646 section 2.1.1: `EN` -> `en`, `en-us` -> `en-US`, `ZH-HANT-tw` -> `zh-Hant-TW`) with deprecated
 * and legacy codes replaced (`iw` -> `he`, `in` -> `id`, `ji` -> `yi`, `mo` -> `ro`, `en-UK` -> `en-GB`),
 * so one language is stored under one tag, whatever alias a client sends. When that form falls outside the
 * shape (`en-US-posix` -> `en-US-u-va-posix`, an extension), the tag keeps its subtags in canonical case
 * (`en-US-posix`): a value read from `/me` can always be sent back. The one owner of the rule for every path
 * that writes a locale; the broadcast audience reads its locales through it too (`localeMatchKeys`).
 */
export function canonicalLocale(tag: string): string | null {
  if (typeof tag !== 'string' || tag.length > LOCALE_MAX_LENGTH || !LOCALE_SHAPE.test(tag)) return null;
  let intl: string;
  try {
    [intl] = Intl.getCanonicalLocales(tag);
  } catch {
    return null;
  }
  if (intl.length <= LOCALE_MAX_LENGTH && LOCALE_SHAPE.test(intl)) return intl;
  return canonicalCase(tag);
}

/** A well-formed tag of the stored shape in BCP 47 canonical case, its subtags unchanged. */
function canonicalCase(tag: string): string {
  // ASCII letters and digits only (LOCALE_SHAPE), so toLowerCase/toUpperCase change nothing else.
  return tag
    .split('-')
    .map((subtag, index) => {
      if (index === 0) return subtag.toLowerCase();
      if (/^[A-Za-z]{2}$/.test(subtag)) return subtag.toUpperCase();
      if (/^[A-Za-z]{4}$/.test(subtag)) return subtag[0].toUpperCase() + subtag.slice(1).toLowerCase();
      return subtag.toLowerCase();
    })
    .join('-');
}

/**
 * The lower-case keys a broadcast audience's locale is matched on: the locale as the admin wrote it (lower
 * case, `_` read as `-`); when canonicalLocale takes it and stores it under another tag, that tag too; and
 * the key of every language alias that canonicalLocale stores under it (`he`: `iw` and `heb`; `he-IL`:
 * `iw-IL`; `sr-Latn`: `sh`). An audience naming `iw` reaches the users stored as `he` since aliases are
 * replaced, and an audience naming `he` the rows stored as `iw`/`iw-IL` before; the stored audience keeps
 * what the admin wrote. (A key also matches its regional variants, see audienceConditions.)
 */
export function localeMatchKeys(locale: string): string[] {
  const written = locale.trim().toLowerCase().replace(/_/g, '-');
  const stored = canonicalLocale(written)?.toLowerCase();
  const keys = stored === undefined || stored === written ? [written] : [written, stored];
  if (stored !== undefined) keys.push(...aliasKeysOf(stored));
  return [...new Set(keys)];
}

/**
 * Keys of the aliases stored under `key` (a lower-case canonical tag): an alias replaced by `key` or by one
 * of its prefixes keeps the rest of `key` (`iw` -> `he` gives `iw-il` for `he-il`); an alias replaced by a
 * tag under `key` is all under it (`sh` -> `sr-latn` gives `sh` for `sr`).
 */
function aliasKeysOf(key: string): string[] {
  const keys: string[] = [];
  for (const [alias, replacement] of languageAliases()) {
    if (key === replacement || key.startsWith(`${replacement}-`))
      keys.push(alias + key.slice(replacement.length));
    else if (replacement.startsWith(`${key}-`)) keys.push(alias);
  }
  return keys;
}

let aliases: ReadonlyArray<readonly [string, string]> | null = null;

/**
 * Every language subtag of the stored shape (two or three letters) that canonicalLocale replaces, with its
 * replacement in lower case (`iw` -> `he`, `mo` -> `ro`, `sh` -> `sr-latn`, `heb` -> `he`): read from the
 * same data canonicalLocale applies (the runtime's CLDR aliases through Intl), so the two never disagree,
 * by asking it about each of the 18,252 codes once per process (about 0.2 s, on the first audience).
 */
function languageAliases(): ReadonlyArray<readonly [string, string]> {
  if (aliases) return aliases;
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const found: [string, string][] = [];
  const probe = (code: string) => {
    const replacement = canonicalLocale(code)?.toLowerCase();
    if (replacement !== undefined && replacement !== code) found.push([code, replacement]);
  };
  for (const a of letters) {
    for (const b of letters) {
      probe(a + b);
      for (const c of letters) probe(a + b + c);
    }
  }
  aliases = found;
  return aliases;
}

/** A locale input: a string that canonicalLocale takes (a 400 otherwise, never a 500 at the write). */
export const IsLocale = (options: ValidationOptions = {}): PropertyDecorator =>
  ValidateBy(
    {
      name: 'isLocale',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && canonicalLocale(value) !== null,
        defaultMessage: (args) => `${args?.property} must be a BCP 47 language tag such as en or de-CH`,
      },
    },
    options,
  );
