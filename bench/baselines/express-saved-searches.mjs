// Baseline: a bare Express 5 + pg + JWT-verify implementation of GET and POST /api/v1/saved_searches that
// sends the same SQL as the service (user by identity id, page, count; create: advisory lock, limit count,
// insert, audit entry, in one transaction). No validation pipes, guards, problem+json, logging or metrics:
// the difference to the service is what the framework and our cross-cutting code cost.
import express from 'express';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL ?? 10) });
const jwks = createRemoteJWKSet(new URL(process.env.JWKS_URL));
const LIMIT = 10_000;

const app = express();
app.disable('x-powered-by');
app.disable('etag');
app.use(express.json({ limit: '1mb' }));

async function principal(req) {
  const match = /^Bearer\s+(\S+)$/.exec(req.headers.authorization ?? '');
  if (!match) return null;
  const { payload } = await jwtVerify(match[1], jwks, {
    issuer: process.env.ISSUER,
    algorithms: ['RS256'],
    clockTolerance: 5,
  });
  const { rows } = await pool.query('SELECT * FROM users WHERE identity_user_id = $1 LIMIT 1', [payload.sub]);
  return rows[0] ?? null;
}

const toResponse = (row) => ({
  id: row.id,
  user_id: row.user_id,
  name: row.name,
  query: row.query,
  filters: row.filters,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

app.get('/api/v1/saved_searches', async (req, res) => {
  try {
    const user = await principal(req);
    if (!user) return void res.status(401).end();
    const pageNumber = Math.max(1, Number.parseInt(req.query.page, 10) || 1);
    const size = Number.parseInt(req.query.page_size, 10);
    const pageSize = size >= 1 && size <= 200 ? size : 50;
    const skip = (pageNumber - 1) * pageSize;
    const { rows } = await pool.query(
      `SELECT id, user_id, name, query, filters, created_at, updated_at FROM saved_searches
       WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
      [user.id, pageSize, skip],
    );
    const total =
      rows.length < pageSize && (rows.length > 0 || skip === 0)
        ? skip + rows.length
        : (await pool.query('SELECT count(*)::int AS n FROM saved_searches WHERE user_id = $1', [user.id])).rows[0].n;
    res.json({ items: rows.map(toResponse), total, page: pageNumber, page_size: pageSize });
  } catch {
    res.status(500).end();
  }
});

app.post('/api/v1/saved_searches', async (req, res) => {
  let client;
  try {
    const user = await principal(req);
    if (!user) return void res.status(401).end();
    client = await pool.connect();
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`owned:saved_search:${user.id}`]);
    const { rows: counted } = await client.query('SELECT count(*)::int AS n FROM saved_searches WHERE user_id = $1', [
      user.id,
    ]);
    if (counted[0].n >= LIMIT) throw new Error('limit');
    const { rows } = await client.query(
      `INSERT INTO saved_searches (id, user_id, name, query, filters, updated_at)
       VALUES (gen_random_uuid(), $1, $2, $3, $4, now()) RETURNING *`,
      [user.id, req.body.name, req.body.query, JSON.stringify(req.body.filters ?? {})],
    );
    await client.query(
      `INSERT INTO audit_logs (id, actor, action, user_id, resource_type, resource_id, details)
       VALUES (gen_random_uuid(), $1, 'saved_search.created', $2, 'saved_search', $3, $4)`,
      [`user:${user.identity_user_id}`, user.identity_user_id, rows[0].id, JSON.stringify({ via: 'jwt' })],
    );
    await client.query('COMMIT');
    res.status(201).json(toResponse(rows[0]));
  } catch {
    await client?.query('ROLLBACK').catch(() => {});
    res.status(500).end();
  } finally {
    client?.release();
  }
});

app.get('/health', (_req, res) => res.json({ status: 'ok' }));

app.listen(Number(process.env.PORT), '127.0.0.1');
