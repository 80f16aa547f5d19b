import { describe, expect, it } from '@jest/globals';
import { BadGatewayError, DependencyError, ValidationError } from '../../common/errors/app-error.js';
import { ProviderHttpError } from '../../infra/http/http-client.js';
import { completionFailure, MAX_PROVIDER_MESSAGE, printableMessage, providerReason } from './llm-errors.js';

const failure = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  completionFailure(new ProviderHttpError('llm', status, body, new Headers(headers)));

const openAiError = (error: Record<string, unknown>) => ({ error });

describe('the language-model provider errors our callers see', () => {
  describe('429 and 5xx after the retries: 503 with the provider’s Retry-After', () => {
    it.each([
      ['seconds', { 'retry-after': '7' }, '7'],
      ['fractions of a second, rounded up', { 'retry-after': '0.2' }, '1'],
      ['0 (at least 1 s)', { 'retry-after': '0' }, '1'],
      ['more than the 30 s cap', { 'retry-after': '86400' }, '30'],
      [
        'an HTTP date beyond the cap',
        { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() },
        '30',
      ],
      ['an HTTP date in the past', { 'retry-after': new Date(Date.now() - 60_000).toUTCString() }, '1'],
      ['nothing (the 503 default)', {}, '5'],
      ['garbage (the 503 default)', { 'retry-after': 'soon' }, '5'],
    ])('a 429 with Retry-After %s', (_name, headers, expected) => {
      const err = failure(429, openAiError({ message: 'Rate limit reached', type: 'requests' }), headers);
      expect(err).toBeInstanceOf(DependencyError);
      expect(err).toMatchObject({ status: 503, code: 'upstream_rate_limited' });
      expect(err.headers).toEqual({ 'Retry-After': expected });
      // The provider's text is not ours to pass on here.
      expect(err.message).not.toContain('Rate limit reached');
    });

    it.each([500, 502, 503, 504])('a %i is 503 upstream_unavailable', (status) => {
      const err = failure(status, 'upstream connect error', { 'retry-after': '12' });
      expect(err).toBeInstanceOf(DependencyError);
      expect(err).toMatchObject({ status: 503, code: 'upstream_unavailable' });
      expect(err.headers).toEqual({ 'Retry-After': '12' });
    });

    it('never forwards the provider’s other headers', () => {
      const err = failure(429, null, { 'retry-after': '3', 'set-cookie': 'a=b', 'x-request-id': 'req_1' });
      expect(err.headers).toEqual({ 'Retry-After': '3' });
    });
  });

  describe('400, 413 and 422: the request is at fault (400 completion_rejected)', () => {
    it('quotes the provider’s type, code and message and names them in provider_error', () => {
      const err = failure(
        400,
        openAiError({
          message: "This model's maximum context length is 128000 tokens.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        }),
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect(err).toMatchObject({ status: 400, code: 'completion_rejected' });
      expect(err.message).toContain('type invalid_request_error, code context_length_exceeded');
      expect(err.message).toContain("This model's maximum context length is 128000 tokens.");
      expect(err.extensions).toEqual({
        errors: [],
        provider_error: {
          status: 400,
          type: 'invalid_request_error',
          code: 'context_length_exceeded',
          param: 'messages',
        },
      });
      expect(err.headers).toEqual({});
    });

    it.each([413, 422])('a %i too', (status) => {
      expect(
        failure(status, openAiError({ message: 'too large', type: 'invalid_request_error' })),
      ).toMatchObject({
        status: 400,
        code: 'completion_rejected',
        extensions: { provider_error: { status, type: 'invalid_request_error', code: null, param: null } },
      });
    });

    it('reads an error body without the `error` wrapper, as the SDK does, and survives any other body', () => {
      expect(providerReason({ message: 'flat', type: 't', code: 42 })).toEqual({
        type: 't',
        code: '42',
        param: null,
        message: 'flat',
      });
      for (const body of [null, 'Bad Request', 17, [], { error: 'nope' }, { error: { message: 7 } }]) {
        const err = failure(400, body);
        expect(err).toMatchObject({ status: 400, code: 'completion_rejected' });
        expect(err.message).toContain('Provider answer 400');
      }
    });

    it('keeps control and direction characters out and the message short', () => {
      const hostile = `line one\r\n\u001b[31mred\u0000 \u202Egnp.exe\u2028${'x'.repeat(5000)}`;
      const err = failure(
        400,
        openAiError({ message: hostile, type: 'invalid\nrequest', code: 'a b', param: 'p'.repeat(65) }),
      );
      // eslint-disable-next-line no-control-regex -- matching control characters is the point
      expect(err.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202A-\u202E]/);
      expect(err.message).toContain('line one [31mred gnp.exe xxx');
      expect(err.extensions.provider_error).toEqual({ status: 400, type: null, code: null, param: null });
      expect(printableMessage(hostile)!.length).toBe(MAX_PROVIDER_MESSAGE);
      expect(err.message.length).toBeLessThan(MAX_PROVIDER_MESSAGE + 200);
    });

    it('a rejection of `model` is our configuration: 502 without the provider’s text', () => {
      const err = failure(
        400,
        openAiError({
          message: 'The model `gpt-x` does not exist',
          type: 'invalid_request_error',
          param: 'model',
        }),
      );
      expect(err).toBeInstanceOf(BadGatewayError);
      expect(err).toMatchObject({ status: 502, code: 'upstream_error' });
      expect(err.message).not.toContain('gpt-x');
    });
  });

  it.each([401, 403, 404, 405, 409])(
    'a %i is our misconfiguration: 502 upstream_error, no provider text',
    (status) => {
      const err = failure(
        status,
        openAiError({
          message: 'Incorrect API key provided: sk-proj-****abcd',
          type: 'invalid_request_error',
        }),
      );
      expect(err).toBeInstanceOf(BadGatewayError);
      expect(err).toMatchObject({ status: 502, code: 'upstream_error', headers: {} });
      expect(err.message).toBe('The language-model provider call failed.');
    },
  );
});
