import { describe, expect, it } from '@jest/globals';
import { MAX_PAYLOAD_DEPTH, unstorableBody, unstorablePayload } from './storable-payload.js';

const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i += 1) value = [value];
  return value;
};

describe('unstorablePayload (what jsonb cannot hold)', () => {
  it('accepts provider events, unicode and emoji included', () => {
    expect(
      unstorablePayload({ event_id: 'evt_1', data: { name: 'Zoë 😀', items: [{ a: null }] } }),
    ).toBeNull();
    expect(unstorablePayload(nested(MAX_PAYLOAD_DEPTH - 1))).toBeNull();
    expect(unstorablePayload('plain')).toBeNull();
  });

  it('refuses NUL characters and unpaired surrogates in values and keys, and deep nesting', () => {
    expect(unstorablePayload({ data: { id: 'a\u0000b' } })).toMatch(/NUL/);
    expect(unstorablePayload({ ['k\u0000']: 1 })).toMatch(/NUL/);
    expect(unstorablePayload({ data: ['\ud800'] })).toMatch(/surrogates/);
    expect(unstorablePayload({ ['\udc00']: 1 })).toMatch(/surrogates/);
    expect(unstorablePayload(nested(MAX_PAYLOAD_DEPTH + 1))).toMatch(/nested deeper/);
  });

  it('refuses a body whose bytes are not UTF-8, whatever they parse to (the receivers of every provider)', () => {
    const latin1 = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]); // {"a":"é"} in Latin-1
    expect(unstorableBody(latin1, JSON.parse(latin1.toString('utf8')))).toMatch(/not valid UTF-8/);
    const utf8 = Buffer.from('{"a":"é 😀"}');
    expect(unstorableBody(utf8, JSON.parse(utf8.toString('utf8')))).toBeNull();
    expect(unstorableBody(Buffer.from('{"a":"\\u0000"}'), { a: '\u0000' })).toMatch(/NUL/);
  });
});
