import { randomUUID } from 'node:crypto';
import type { Type } from '@nestjs/common';
import fc, { type Arbitrary } from 'fast-check';
import { ISO_FORMS_DATE_CANNOT_READ } from '../../support/instants.js';
import { dtoProperties } from './routes.js';

/** Strings that broke parsers, databases, validators or templates somewhere before. */
export const SPECIAL_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\uD800',
  '\uDFFFx',
  '\u202Eevil',
  '\uFEFF',
  '\u2028\u2029',
  '💥'.repeat(120),
  "'; DROP TABLE users; --",
  '" OR 1=1 --',
  '<script>alert(1)</script>',
  '{{7*7}}${7*7}',
  '%00%0d%0a',
  '%s%s%s%n',
  '../../../../etc/passwd',
  'NaN',
  'Infinity',
  '-0',
  '1e309',
  'true',
  'null',
  '__proto__',
  'constructor',
  '\r\nX-Injected: 1',
  '0x10',
  '99999999999999999999999',
  '-1',
  '2024-02-30T00:00:00Z',
  '+275760-09-13T00:00:00.000Z',
  '-271821-04-20T00:00:00.000Z',
  '+100000-01-01T00:00:00.000Z',
  '-004713-01-01T00:00:00.000Z',
  '0000-01-01T00:00:00Z',
  '-4714-01-01T00:00:00Z',
  '-0001-01-01T00:00:00Z',
  '1900-02-29T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '1970-01-01T00:00:00Z',
  '2026-01-01',
  'PRO',
  'FREE',
  'admin@example.com',
  randomUUID(),
];

export const hostileString: Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  // What PostgreSQL refuses or JavaScript cannot parse, mixed into ordinary text: the 500s found so far.
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.string({ maxLength: 8 }),
        fc.constantFrom('\u0000', '\ud800', '\udfff'),
        fc.string({ maxLength: 8 }),
      )
      .map((parts) => parts.join('')),
  },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 120_000 }).map((n) => 'x'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer().map(String) },
  { weight: 1, arbitrary: fc.double().map(String) },
);

export const hostileKey: Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 12 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', 'user_id', '$where', '$gt', ''),
  },
);

const numbers: Arbitrary<number> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, Number.MAX_SAFE_INTEGER + 2, 1e308, -0, 0.5, -1),
);

/** Any JSON value, hostile leaves included, a few levels deep. */
export const hostileValue: Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    { weight: 4, arbitrary: hostileString },
    { weight: 2, arbitrary: numbers },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.dictionary(hostileKey, tie('value'), { maxKeys: 4 }) },
  ),
})).value;

/**
 * Strict ISO 8601 that JavaScript's Date cannot read, shaped from a real date: week (`2026-W05-3`), ordinal
 * (`2026-034`) and basic (`20260203`, `T1015`) forms, an hour alone, a decimal comma, an offset in hours.
 * toISOString() never writes these, and class-validator's IsISO8601 passes them.
 */
const isoFormDateCannotRead: Arbitrary<string> = fc
  .tuple(
    fc.date({ min: new Date('1900-01-01'), max: new Date('2200-01-01'), noInvalidDate: true }),
    fc.integer({ min: 0, max: 7 }),
  )
  .map(([date, form]) => {
    const [day, time] = date.toISOString().slice(0, 19).split('T');
    const [y, m, d] = day.split('-');
    const [hh, mm] = time.split(':');
    const week = String(1 + Math.floor((date.getUTCDate() - 1) / 7)).padStart(2, '0');
    const ordinal = String(1 + Math.floor((date.getTime() - Date.UTC(+y, 0, 1)) / 86_400_000)).padStart(
      3,
      '0',
    );
    return [
      `${y}-W${week}`,
      `${y}-W${week}-${((date.getUTCDay() + 6) % 7) + 1}`,
      `${y}-${ordinal}`,
      `${y}${m}${d}`,
      `${day}T${hh}`,
      `${day}T${hh}${mm}`,
      `${day}T${hh}:${mm},5`,
      `${day}T${time}+01`,
    ][form];
  });

/** Date-time strings: valid, extended-year, impossible, ISO forms Date cannot read, and garbage. */
export const dateString: Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()) },
  {
    weight: 2,
    arbitrary: fc
      .date({ min: new Date('1900-01-01'), max: new Date('2200-01-01'), noInvalidDate: true })
      .map((d) => d.toISOString()),
  },
  { weight: 2, arbitrary: fc.constantFrom(...SPECIAL_STRINGS.filter((s) => /^[-+\d]/.test(s))) },
  { weight: 2, arbitrary: fc.oneof(isoFormDateCannotRead, fc.constantFrom(...ISO_FORMS_DATE_CANNOT_READ)) },
  { weight: 1, arbitrary: hostileString },
);

const tierName = fc.constantFrom('FREE', 'PRO', 'TEAM', 'pro', '', 'ENTERPRISE', 'A'.repeat(60));

/**
 * Valid-ish generators per field name, so a good share of the inputs passes validation and reaches the
 * services and the database. Any field without one gets hostileValue only.
 */
export const FIELD_HINTS: Record<string, Arbitrary<unknown>> = {
  name: fc.oneof(fc.string({ maxLength: 210 }), fc.string({ unit: 'binary', minLength: 1, maxLength: 30 })),
  query: fc.string({ unit: 'binary', maxLength: 300 }),
  description: fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.constant(null)),
  filters: fc.dictionary(hostileKey, hostileValue, { maxKeys: 5 }),
  expires_at: fc.oneof(dateString, fc.constant(null)),
  locale: fc.oneof(fc.stringMatching(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$/), hostileString),
  marketing_consent_given: fc.boolean(),
  marketing_consent_source: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_.:-]{1,100}$/), hostileString),
  utm_source: fc.string({ unit: 'binary', maxLength: 510 }),
  utm_medium: fc.string({ unit: 'binary', maxLength: 60 }),
  utm_campaign: fc.string({ unit: 'binary', maxLength: 60 }),
  utm_term: fc.string({ unit: 'binary', maxLength: 60 }),
  utm_content: fc.string({ unit: 'binary', maxLength: 60 }),
  referrer: fc.oneof(fc.webUrl(), hostileString),
  landing_page: fc.oneof(fc.webUrl(), hostileString),
  provenance: fc.oneof(fc.constantFrom('lm_guide', 'lead_magnet:x'), hostileString),
  message: fc.oneof(fc.string({ unit: 'binary', maxLength: 400 }), fc.constant('x'.repeat(5001))),
  rating: fc.oneof(fc.integer({ min: -3, max: 8 }), numbers),
  page: fc.oneof(fc.string({ unit: 'binary', maxLength: 520 }), fc.integer()),
  tier: tierName,
  target_tier: tierName,
  cancel_immediately: fc.boolean(),
  messages: fc.array(
    fc.record(
      {
        role: fc.constantFrom('system', 'user', 'assistant', 'tool', ''),
        content: fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), hostileValue),
      },
      { requiredKeys: [] },
    ),
    { maxLength: 4 },
  ),
  max_tokens: fc.oneof(fc.integer({ min: -5, max: 10_000 }), numbers),
  template_key: fc.constantFrom('welcome', 'newsletter', 'subscription_welcome', 'nope', '', 'A'),
  audience: fc.record(
    {
      tiers: fc.oneof(
        fc.array(fc.constantFrom('PRO', 'TEAM', 'FREE', 'x', 'NOPE'), { maxLength: 3 }),
        hostileValue,
      ),
      locales: fc.oneof(
        fc.array(fc.constantFrom('de', 'en-GB', 'de_AT', 'x', '💥'), { maxLength: 3 }),
        hostileValue,
      ),
      signed_up_after: dateString,
      signed_up_before: dateString,
    },
    { requiredKeys: [] },
  ),
  bypass_consent: fc.boolean(),
  // Query DTOs: every value arrives as a string (or an array of them when repeated).
  page_size: fc.oneof(fc.integer({ min: -5, max: 300 }).map(String), hostileString),
  search: hostileString,
  deleted: fc.constantFrom('true', 'false', 'TRUE', '1', ''),
  action: hostileString,
  actor: hostileString,
  user_id: hostileString,
  resource_type: hostileString,
  from: dateString,
  to: dateString,
};

const fieldArbitrary = (field: string): Arbitrary<unknown> =>
  FIELD_HINTS[field]
    ? fc.oneof({ weight: 4, arbitrary: FIELD_HINTS[field] }, { weight: 1, arbitrary: hostileValue })
    : hostileValue;

/** Bodies for a DTO: mostly its own fields (valid-ish or hostile), sometimes extra keys, sometimes no object at all. */
export function bodyFor(dto: Type): Arbitrary<unknown> {
  const fields = dtoProperties(dto);
  const record = fc.record(Object.fromEntries(fields.map((f) => [f, fieldArbitrary(f)])), {
    requiredKeys: [],
  });
  return fc.oneof(
    { weight: 8, arbitrary: record },
    {
      weight: 1,
      arbitrary: fc
        .tuple(record, fc.dictionary(hostileKey, hostileValue, { maxKeys: 2 }))
        .map(([r, extra]) => ({ ...extra, ...r })),
    },
    { weight: 1, arbitrary: hostileValue },
  );
}

const queryValue = (field: string): Arbitrary<string | string[]> => {
  const one = FIELD_HINTS[field]
    ? fc.oneof(
        {
          weight: 3,
          arbitrary: FIELD_HINTS[field].map((v) => (typeof v === 'string' ? v : JSON.stringify(v))),
        },
        { weight: 1, arbitrary: hostileString },
      )
    : hostileString;
  return fc.oneof(
    { weight: 5, arbitrary: one },
    { weight: 1, arbitrary: fc.array(one, { minLength: 2, maxLength: 3 }) },
  );
};

/** Query strings for a DTO or for single named parameters. */
export function queryFor(fields: string[]): Arbitrary<Record<string, string | string[] | undefined>> {
  const record = fc.record(Object.fromEntries(fields.map((f) => [f, queryValue(f)])), { requiredKeys: [] });
  return fc.oneof(
    { weight: 6, arbitrary: record },
    {
      weight: 1,
      arbitrary: fc
        .tuple(record, fc.dictionary(hostileKey, hostileString, { maxKeys: 2 }))
        .map(([r, extra]) => ({ ...extra, ...r })),
    },
  );
}
