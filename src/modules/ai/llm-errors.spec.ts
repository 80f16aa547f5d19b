import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { BadGatewayError, DependencyError, ValidationError } from '../../common/errors/app-error.js';
import { ProviderHttpError } from '../../infra/http/http-client.js';
import {
  completionFailure,
  MAX_PROVIDER_MESSAGE,
  printableMessage,
  providerReason,
  type SentRequest,
} from './llm-errors.js';

const CALLER_MAX_TOKENS: SentRequest = { callerSetMaxTokens: true };
const DEFAULT_MAX_TOKENS: SentRequest = { callerSetMaxTokens: false };

const failure = (
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  sent: SentRequest = CALLER_MAX_TOKENS,
) => completionFailure(new ProviderHttpError('llm', status, body, new Headers(headers)), sent);

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

    it('OpenAI’s 429 insufficient_quota (our account is out of money) is 502 upstream_error, no Retry-After', () => {
      // As OpenAI answers it (public reports of openai-node's RateLimitError), and the older form with
      // `code: null` that names it in `type` only.
      for (const error of [
        {
          message: 'You exceeded your current quota, please check your plan and billing details.',
          type: 'insufficient_quota',
          param: null,
          code: 'insufficient_quota',
        },
        { message: 'You exceeded your current quota', type: 'insufficient_quota', param: null, code: null },
      ]) {
        const err = failure(429, openAiError(error), { 'retry-after': '20' });
        expect(err).toBeInstanceOf(BadGatewayError);
        expect(err).toMatchObject({ status: 502, code: 'upstream_error', headers: {} });
        expect(err.message).toBe('The language-model provider call failed.');
      }
    });

    it('never forwards the provider’s other headers', () => {
      const err = failure(429, null, { 'retry-after': '3', 'set-cookie': 'a=b', 'x-request-id': 'req_1' });
      expect(err.headers).toEqual({ 'Retry-After': '3' });
    });
  });

  describe('400, 413 and 422 naming the request’s content: the request is at fault (400 completion_rejected)', () => {
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
        failure(
          status,
          openAiError({ message: 'too large', type: 'invalid_request_error', param: 'messages' }),
        ),
      ).toMatchObject({
        status: 400,
        code: 'completion_rejected',
        extensions: {
          provider_error: { status, type: 'invalid_request_error', code: null, param: 'messages' },
        },
      });
    });

    it.each([
      [
        'a prompt over the context window',
        { type: 'invalid_request_error', code: 'context_length_exceeded' },
      ],
      [
        'OpenAI’s safety system (content_policy_violation)',
        { type: 'invalid_request_error', param: null, code: 'content_policy_violation' },
      ],
      [
        'a prompt flagged by the usage policy (invalid_prompt)',
        { type: 'invalid_request_error', code: 'invalid_prompt' },
      ],
      // Azure OpenAI's content filter: `type: null`, `param: "prompt"`.
      ['Azure’s content filter', { type: null, param: 'prompt', code: 'content_filter' }],
      [
        'an invalid_request_error on messages',
        { type: 'invalid_request_error', param: 'messages', code: null },
      ],
      [
        'an invalid_request_error on one message',
        { type: 'invalid_request_error', param: 'messages[0].content', code: 'string_above_max_length' },
      ],
      [
        'an invalid_request_error on max_tokens the caller chose',
        { type: 'invalid_request_error', param: 'max_tokens', code: 'invalid_value' },
      ],
      // llama.cpp's server: the HTTP status as `code`, no `param`.
      ['llama.cpp’s prompt over the context size', { type: 'exceed_context_size_error', code: 400 }],
    ])('%s', (_name, error) => {
      const err = failure(400, openAiError({ message: 'Refused.', ...error }));
      expect(err).toBeInstanceOf(ValidationError);
      expect(err).toMatchObject({ status: 400, code: 'completion_rejected' });
      expect(err.message).toContain('Refused.');
    });

    it('reads an error body without the `error` wrapper, as the SDK does, and survives any other body', () => {
      expect(providerReason({ message: 'flat', type: 't', code: 42 })).toEqual({
        type: 't',
        code: '42',
        param: null,
        message: 'flat',
      });
      expect(providerReason({ error: { type: 'a b', code: 'x'.repeat(65), param: { $ne: 1 } } })).toEqual({
        type: null,
        code: null,
        param: null,
        message: null,
      });
      // Nothing in these names the request's content: ours to look at, not the caller's.
      for (const body of [null, 'Bad Request', 17, [], { error: 'nope' }, { error: { message: 7 } }]) {
        expect(failure(400, body)).toMatchObject({ status: 502, code: 'upstream_error' });
      }
    });

    it('keeps control, format and direction characters out and the message short', () => {
      const hostile = `line one\r\n\u001b[31mred\u0000 \u202Egnp.exe\u2028\u200B${'x'.repeat(5000)}`;
      const err = failure(
        400,
        openAiError({
          message: hostile,
          type: 'invalid\nrequest',
          code: 'context_length_exceeded',
          param: 'p'.repeat(65),
        }),
      );
      // eslint-disable-next-line no-control-regex -- matching control characters is the point
      expect(err.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202A-\u202E\u200B]/);
      expect(err.message).toContain('line one [31mred gnp.exe xxx');
      expect(err.extensions.provider_error).toEqual({
        status: 400,
        type: null,
        code: 'context_length_exceeded',
        param: null,
      });
      expect(printableMessage(hostile)!.length).toBe(MAX_PROVIDER_MESSAGE);
      expect(err.message.length).toBeLessThan(MAX_PROVIDER_MESSAGE + 200);
    });

    it.each([
      ['U+061C arabic letter mark', '\u061C'],
      ['U+200B zero width space', '\u200B'],
      ['U+200C zero width non-joiner', '\u200C'],
      ['U+200D zero width joiner', '\u200D'],
      ['U+2060 word joiner', '\u2060'],
      ['U+FEFF zero width no-break space', '\uFEFF'],
      ['U+00AD soft hyphen', '\u00AD'],
    ])('quotes no format character: %s', (_name, char) => {
      expect(printableMessage(`${char}quota${char}exceeded${char}`)).toBe('quota exceeded');
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

  describe('400, 413 and 422 naming nothing in the request’s content: our setup (502 upstream_error)', () => {
    const API_KEY_INVALID = {
      code: 400,
      message: 'API key not valid. Please pass a valid API key.',
      status: 'INVALID_ARGUMENT',
    };
    it.each([
      // Gemini's OpenAI-compatible endpoint answers a bad key with 400, as a list and as one object.
      ['a bad key, Gemini’s list form', 400, [{ error: API_KEY_INVALID }], CALLER_MAX_TOKENS],
      ['a bad key, one error object', 400, { error: API_KEY_INVALID }, CALLER_MAX_TOKENS],
      [
        'our default max_tokens above the model’s limit',
        400,
        openAiError({
          message: 'max_tokens is too large: 1024. This model supports at most 512 completion tokens.',
          type: 'invalid_request_error',
          param: 'max_tokens',
          code: 'invalid_value',
        }),
        DEFAULT_MAX_TOKENS,
      ],
      [
        'max_tokens not supported by the model (we always send it), even when the caller chose it',
        400,
        openAiError({
          message: "Unsupported parameter: 'max_tokens' is not supported with this model.",
          type: 'invalid_request_error',
          param: 'max_tokens',
          code: 'unsupported_parameter',
        }),
        CALLER_MAX_TOKENS,
      ],
      [
        'another parameter the model does not support',
        400,
        openAiError({
          message: "Unsupported parameter: 'stream_options'.",
          type: 'invalid_request_error',
          param: 'stream_options',
          code: 'unsupported_parameter',
        }),
        CALLER_MAX_TOKENS,
      ],
      [
        'an invalid_request_error on no parameter',
        422,
        openAiError({ message: 'Bad request.', type: 'invalid_request_error', param: null, code: null }),
        CALLER_MAX_TOKENS,
      ],
      [
        'a parameter that only starts with the letters of messages',
        400,
        openAiError({ message: 'No.', type: 'invalid_request_error', param: 'messagesX', code: null }),
        CALLER_MAX_TOKENS,
      ],
      ['a 413 without a body', 413, null, CALLER_MAX_TOKENS],
    ] satisfies [string, number, unknown, SentRequest][])('%s', (_name, status, body, sent) => {
      const err = failure(status, body, {}, sent);
      expect(err).toBeInstanceOf(BadGatewayError);
      expect(err).toMatchObject({ status: 502, code: 'upstream_error', headers: {} });
      expect(err.message).toBe('The language-model provider call failed.');
    });
  });

  describe('vLLM’s refusals over the model’s context window: the caller’s when the prompt alone is over it', () => {
    /** vLLM's own error bodies (test/contracts/fixtures/vllm, built from its source; README there). */
    const vllm = (name: string) =>
      JSON.parse(readFileSync(join(process.cwd(), `test/contracts/fixtures/vllm/${name}.json`), 'utf8')) as {
        error: { message: string; param: string };
      };
    /** A refusal that our default max_tokens caused is ours (502); with the caller's own it is theirs (400). */
    const expectOursWithDefaultTheirsWithOwn = (body: unknown) => {
      expect(failure(400, body, {}, DEFAULT_MAX_TOKENS)).toMatchObject({
        status: 502,
        code: 'upstream_error',
      });
      expect(failure(400, body, {}, CALLER_MAX_TOKENS)).toMatchObject({
        status: 400,
        code: 'completion_rejected',
      });
    };

    /** A vLLM refusal with another message (the wordings of other versions), as create_error_response sends it. */
    const badRequest = (message: string, param: string | null = null) =>
      openAiError({ message, type: 'BadRequestError', param, code: 400 });

    it.each([
      ['the renderer’s check', vllm('renderer.chat-completion.error-prompt-over-context')],
      ['_validate_input’s check', vllm('serving.chat-completion.error-prompt-over-context')],
      [
        'the older combined check (no param)',
        badRequest(
          "This model's maximum context length is 4096 tokens. However, you requested 6024 tokens (5000 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
        ),
      ],
      [
        'a prompt exactly as long as the window (no room for one token)',
        badRequest(
          "This model's maximum context length is 4096 tokens. However, your request has 4096 input tokens. Please reduce the length of the input messages.",
          'input_tokens',
        ),
      ],
      [
        'the renderer’s character check of a prompt longer than the whole window at its bound',
        badRequest(
          "You passed 40961 input characters and requested 1024 output tokens. However, the model's context length is only 4096 tokens, resulting in a maximum input length of 3072 tokens (at most 30720 characters). Please reduce the length of the input prompt.",
          'input_text',
        ),
      ],
    ])('a prompt over the window by itself (%s): 400 even with our default max_tokens', (_name, body) => {
      for (const sent of [DEFAULT_MAX_TOKENS, CALLER_MAX_TOKENS]) {
        const err = failure(400, body, {}, sent);
        expect(err).toBeInstanceOf(ValidationError);
        expect(err).toMatchObject({ status: 400, code: 'completion_rejected' });
        expect(err.message).toContain('(type BadRequestError, code 400): ');
        expect(err.extensions.provider_error).toMatchObject({
          status: 400,
          type: 'BadRequestError',
          code: '400',
        });
      }
    });

    it.each([
      ['the renderer’s check', vllm('renderer.chat-completion.error-prompt-plus-max-tokens-over-context')],
      [
        '_validate_input’s max_tokens check',
        vllm('serving.chat-completion.error-prompt-plus-max-tokens-over-context'),
      ],
      [
        'the older combined check (no param)',
        badRequest(
          "This model's maximum context length is 4096 tokens. However, you requested 4524 tokens (3500 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
        ),
      ],
      [
        'the renderer’s character check of a prompt that may fit the whole window',
        badRequest(
          "You passed 40960 input characters and requested 1024 output tokens. However, the model's context length is only 4096 tokens, resulting in a maximum input length of 3072 tokens (at most 30720 characters). Please reduce the length of the input prompt.",
          'input_text',
        ),
      ],
      [
        'a window wording without the prompt’s size',
        badRequest("This model's maximum context length is 4096 tokens.", 'input_tokens'),
      ],
    ])(
      'a prompt that fits the window but not with max_tokens (%s): 502 for our default, 400 for the caller’s',
      (_name, body) => {
        expectOursWithDefaultTheirsWithOwn(body);
      },
    );

    it('decides on the numbers even when the code says context_length_exceeded', () => {
      const body = vllm('renderer.chat-completion.error-prompt-plus-max-tokens-over-context');
      const coded = openAiError({ ...body.error, code: 'context_length_exceeded' });
      expectOursWithDefaultTheirsWithOwn(coded);
    });

    it('our default max_tokens over the whole window is ours; the caller’s is theirs', () => {
      // TokenizeParams.__post_init__: no window wording, `param` names the request's field.
      const body = badRequest(
        'max_tokens=5000cannot be greater than max_model_len=max_total_tokens=4096. Please request fewer output tokens. (parameter=max_tokens, value=5000)',
        'max_tokens',
      );
      expectOursWithDefaultTheirsWithOwn(body);
    });

    it('another BadRequestError naming nothing of the request is ours', () => {
      for (const sent of [DEFAULT_MAX_TOKENS, CALLER_MAX_TOKENS]) {
        expect(
          failure(
            400,
            badRequest('Chat template is passed with request, but --trust-request-chat-template is not set.'),
            {},
            sent,
          ),
        ).toMatchObject({
          status: 502,
          code: 'upstream_error',
        });
      }
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
