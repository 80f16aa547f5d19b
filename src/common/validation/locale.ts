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
 * case, `_` read as `-`) and, when canonicalLocale takes it and stores it under another tag, that tag too.
 * An audience naming `iw` reaches the users stored as `he` since aliases are replaced, and the rows stored
 * as `iw` before; the stored audience keeps what the admin wrote.
 */
export function localeMatchKeys(locale: string): string[] {
  const written = locale.trim().toLowerCase().replace(/_/g, '-');
  const stored = canonicalLocale(written)?.toLowerCase();
  return stored === undefined || stored === written ? [written] : [written, stored];
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
