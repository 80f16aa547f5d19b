import { ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * The language tags we store (`users.locale`): a language and up to three subtags, hyphenated (`en`,
 * `de-CH`, `zh-Hant-TW`, `de-CH-1996`); no extensions, private use or `_`. At most 35 characters.
 */
const LOCALE_SHAPE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$/;
export const LOCALE_MAX_LENGTH = 35;

/**
 * `tag` in BCP 47 canonical case (RFC 5646 section 2.1.1: language and variants lower case, a four-letter
 * script title case, a two-letter region upper case: `EN` -> `en`, `en-us` -> `en-US`, `ZH-HANT-TW` ->
 * `zh-Hant-TW`), or null when it is not a well-formed tag of the shape above. Well-formed is what
 * `Intl.getCanonicalLocales` accepts (it refuses `en-12`, `de-DE-DE`, a repeated variant), so the stored
 * value is always one that `Intl` and the e-mail templates can read. Only the case changes: Intl's alias
 * replacements (`iw` -> `he`, `tl` -> `fil`, `en-us-posix` -> `en-US-u-va-posix`) are not applied, so the
 * stored tag is the one the user chose, a tag stored once is accepted again as is, and the broadcast
 * audience (which matches case-insensitively) finds it under the tag the admin knows. The one owner of the
 * rule for every path that writes a locale.
 */
export function canonicalLocale(tag: string): string | null {
  if (typeof tag !== 'string' || tag.length > LOCALE_MAX_LENGTH || !LOCALE_SHAPE.test(tag)) return null;
  try {
    Intl.getCanonicalLocales(tag);
  } catch {
    return null;
  }
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
