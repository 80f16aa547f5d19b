// Baseline of the completion row: a bare Express 5 app doing what POST /api/v1/ai/completions must do
// at the least: verify the RS256 token (jose), read the user by identity id, reserve the bound of the call
// (the ledger's one statement with its hold: the very APPLY_SQL of dist/, imported), call the same model
// (FAKE LLM process) and settle (one transaction: close the hold, give back the unused part). No
// validation pipes, guards, rate limits, problem+json, logging or metrics.
import { createHash, randomUUID } from 'node:crypto';
import express from 'express';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import pg from 'pg';
import { APPLY_SQL } from '../../dist/modules/credits/credits.repository.js';
import { estimateCredits, actualCredits } from '../../dist/modules/ai/ai-pricing.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL ?? 10) });
const jwks = createRemoteJWKSet(new URL(process.env.JWKS_URL));
const LLM = `${process.env.LLM_BASE_URL}/chat/completions`;
const MODEL = 'gpt-4o-mini';
const MAX_TOKENS = 1024;

const app = express();
app.disable('x-powered-by');
app.disable('etag');
app.use(express.json({ limit: '1mb' }));

const apply = (userId, delta, kind, jobId, details, mustCover, hold) =>
  [userId, delta, kind, jobId, JSON.stringify(details), mustCover, hold ?? 0, hold !== undefined, 0, false];

app.post('/api/v1/ai/completions', async (req, res) => {
  try {
    const match = /^Bearer\s+(\S+)$/.exec(req.headers.authorization ?? '');
    if (!match) return void res.status(401).end();
    const { payload } = await jwtVerify(match[1], jwks, { issuer: process.env.ISSUER, algorithms: ['RS256'], clockTolerance: 5 });
    const { rows: users } = await pool.query('SELECT * FROM users WHERE identity_user_id = $1 LIMIT 1', [payload.sub]);
    const user = users[0];
    if (!user) return void res.status(401).end();
    const messages = req.body.messages.map(({ role, content }) => ({ role, content }));
    const maxTokens = req.body.max_tokens ?? MAX_TOKENS;
    const estimate = estimateCredits(messages, maxTokens, 1);
    const jobId = `ai-${randomUUID()}`;
    const hash = createHash('sha256').update(JSON.stringify({ messages, max_tokens: maxTokens })).digest('hex');
    const reserved = await pool.query(
      APPLY_SQL,
      apply(user.id, -estimate, 'spend', jobId, { request_hash: hash, max_tokens: maxTokens, model: MODEL }, true, estimate),
    );
    if (reserved.rows[0].outcome !== 'inserted') return void res.status(402).end();
    const answer = await fetch(LLM, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages, max_tokens: maxTokens }),
    });
    if (!answer.ok) return void res.status(502).end();
    const completion = await answer.json();
    const cost = Math.min(actualCredits(completion.usage, 1), estimate);
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rows: holds } = await client.query('DELETE FROM credit_holds WHERE job_id = $1 RETURNING user_id, amount, purchased', [jobId]);
      if (holds[0]) {
        await client.query(APPLY_SQL, apply(user.id, holds[0].amount - cost, 'settle', jobId, { reserved: holds[0].amount, charged: cost }, false));
      }
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
    const message = completion.choices[0].message;
    res.json({ id: jobId, content: message.content ?? null, refusal: message.refusal ?? null, usage: completion.usage, credits_charged: cost });
  } catch {
    res.status(500).end();
  }
});

app.get('/health', (_req, res) => res.json({ status: 'ok' }));

app.listen(Number(process.env.PORT), '127.0.0.1');
