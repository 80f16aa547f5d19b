// The development language model: when LLM_BASE_URL is unset, `npm start` serves this OpenAI-compatible
// stand-in on 127.0.0.1:LOCAL_LLM_PORT (3003) so a metered completion succeeds (and is charged) without a
// provider account. It is not a model: every answer says so in its text and its `model`, and the
// launcher logs each call. Speaks the part of POST /chat/completions the service uses (the same shape as
// OpenAI's recorded answers in test/contracts/fixtures/openai).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

export const STAND_IN_MODEL = 'dev-stand-in';
export const STAND_IN_LABEL = '[development stand-in, not a language model]';

/** OpenAI counts tokens with its tokenizer; about four characters a token is the documented rule of thumb. */
const estimateTokens = (text) => Math.max(1, Math.ceil(text.length / 4));

/** The answer to one chat completion request body. */
export function standInCompletion(body, now = new Date()) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const prompt = messages.map((message) => String(message?.content ?? '')).join('\n');
  const lastUser = [...messages].reverse().find((message) => message?.role === 'user');
  const echo = String(lastUser?.content ?? '')
    .replace(/\s+/g, ' ')
    .slice(0, 200);
  let content = `${STAND_IN_LABEL} You asked: "${echo}". Set LLM_BASE_URL (and LLM_API_KEY) for real answers.`;
  const maxTokens = Number.isInteger(body?.max_tokens) && body.max_tokens > 0 ? body.max_tokens : null;
  if (maxTokens !== null && estimateTokens(content) > maxTokens)
    content = content.slice(0, Math.max(STAND_IN_LABEL.length, maxTokens * 4));
  const usage = { prompt_tokens: estimateTokens(prompt), completion_tokens: estimateTokens(content) };
  return {
    id: `chatcmpl-dev-${randomUUID()}`,
    object: 'chat.completion',
    created: Math.floor(now.getTime() / 1000),
    model: STAND_IN_MODEL,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  };
}

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/**
 * Starts the stand-in on `port` (0: any free port). `log` receives one line per call. Resolves
 * { url, close } where `url` is the value for LLM_BASE_URL.
 */
export async function startDevLlm({ port = 0, host = '127.0.0.1', log = () => {} } = {}) {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0].replace(/^\/v1/, '');
    if (req.method === 'GET' && path === '/models') {
      send(res, 200, { object: 'list', data: [{ id: STAND_IN_MODEL, object: 'model', owned_by: 'local' }] });
      return;
    }
    if (req.method !== 'POST' || path !== '/chat/completions') {
      send(res, 404, {
        error: {
          message: `${req.method} ${path}: not served by the stand-in`,
          type: 'invalid_request_error',
        },
      });
      return;
    }
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        send(res, 400, { error: { message: 'the body is not JSON', type: 'invalid_request_error' } });
        return;
      }
      if (!Array.isArray(body?.messages) || body.messages.length === 0) {
        send(res, 400, {
          error: { message: 'messages: expected a non-empty array', type: 'invalid_request_error' },
        });
        return;
      }
      const answer = standInCompletion(body);
      log(
        `development stand-in answered a chat completion (model asked: ${body.model ?? 'none'}; ` +
          `${answer.usage.prompt_tokens} prompt + ${answer.usage.completion_tokens} completion tokens)`,
      );
      send(res, 200, answer);
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const { port: bound } = server.address();
  return {
    url: `http://${host}:${bound}/v1`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
