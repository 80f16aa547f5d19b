import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chatCompletionSchema } from '../../src/modules/ai/llm.client.js';

interface DevLlmModule {
  STAND_IN_LABEL: string;
  STAND_IN_MODEL: string;
  startDevLlm: (options: { port?: number; log?: (line: string) => void }) => Promise<{
    url: string;
    close: () => Promise<void>;
  }>;
}

/**
 * The development language model `npm start` serves when LLM_BASE_URL is unset: an OpenAI-compatible
 * POST /chat/completions whose answers the service's own client accepts, labelled as a stand-in in the
 * answer and in the log. (The completion charged through the API: test/devx/db-seed-reset.e2e-spec.ts.)
 */
describe('development LLM stand-in (scripts/local/llm.mjs)', () => {
  let llm: DevLlmModule;
  let server: { url: string; close: () => Promise<void> };
  const logged: string[] = [];

  beforeAll(async () => {
    // @ts-expect-error plain ESM script without type declarations
    llm = (await import('../../scripts/local/llm.mjs')) as DevLlmModule;
    server = await llm.startDevLlm({ port: 0, log: (line) => logged.push(line) });
  });

  afterAll(async () => {
    await server?.close();
  });

  const complete = (body: unknown) =>
    fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('answers a chat completion in the shape the service validates, labelled, with token usage', async () => {
    const res = await complete({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'What is 2+2?' }],
      max_tokens: 256,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { model: string };
    const parsed = chatCompletionSchema.parse(body);
    expect(parsed.choices[0].message.content).toContain(llm.STAND_IN_LABEL);
    expect(parsed.choices[0].message.content).toContain('What is 2+2?');
    expect(body.model).toBe(llm.STAND_IN_MODEL);
    expect(parsed.usage.prompt_tokens).toBeGreaterThan(0);
    expect(parsed.usage.completion_tokens).toBeGreaterThan(0);
    expect(logged.at(-1)).toMatch(/development stand-in answered a chat completion/);
  });

  it('keeps the answer within max_tokens (by its own estimate) and still labelled', async () => {
    const res = await complete({ messages: [{ role: 'user', content: 'x'.repeat(500) }], max_tokens: 12 });
    const parsed = chatCompletionSchema.parse(await res.json());
    expect(parsed.usage.completion_tokens).toBeLessThanOrEqual(12);
    expect(parsed.choices[0].message.content).toContain(llm.STAND_IN_LABEL);
  });

  it('answers an OpenAI-style error to a request it cannot serve', async () => {
    const bad = await complete({ messages: [] });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: expect.objectContaining({ type: 'invalid_request_error' }) });
    const unknown = await fetch(`${server.url}/embeddings`, { method: 'POST', body: '{}' });
    expect(unknown.status).toBe(404);
  });
});
