import { describe, expect, it } from '@jest/globals';
import { toProblem } from './problem-details.filter.js';

const tooLong = {
  name: 'PrismaClientKnownRequestError',
  code: 'P2000',
  message: 'value too long for type character varying(200)',
  meta: { driverAdapterError: { cause: { originalCode: '22001', kind: 'LengthMismatch' } } },
};

describe('toProblem', () => {
  it('answers a value too long for its column (P2000 / 22001) as a 400 validation problem', () => {
    for (const error of [tooLong, { ...tooLong, code: 'P2010' }, { code: '22001', message: 'raw pg' }]) {
      const { problem } = toProblem(error, 'req-1');
      expect(problem).toEqual({
        type: 'urn:problem:validation_failed',
        title: 'Invalid request',
        status: 400,
        detail: 'A value is longer than its field allows.',
        code: 'validation_failed',
        errors: [],
        request_id: 'req-1',
      });
    }
  });

  it('still answers other database errors as a 500 without internals', () => {
    const { problem } = toProblem({ code: 'P2003', message: 'violates foreign key constraint' }, 'req-2');
    expect(problem).toMatchObject({
      status: 500,
      code: 'internal_error',
      detail: 'An unexpected error occurred.',
    });
  });
});
