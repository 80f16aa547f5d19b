// The development identity provider: an RS256 key under .data/dev-identity/ and its JWKS on
// 127.0.0.1:LOCAL_IDENTITY_PORT; `npm run dev:token -- <email>` mints tokens with that key.
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK } from 'jose';
import { dataDir } from '../lib/env.mjs';
import { say } from '../lib/output.mjs';
import { started } from '../lib/processes.mjs';

const devIdentityKeyFile = () => join(dataDir(), 'dev-identity', 'signing-key.json');

/**
 * The development identity provider's issuer. Deliberately not the JWKS server's address: tokens stay
 * valid when LOCAL_IDENTITY_PORT changes, and the .localhost name can never belong to a real provider.
 */
export const DEV_ISSUER = 'http://dev-identity.localhost';
/** Seeded by `npm start`; dev-token maps this e-mail to this subject so the token finds the seeded row. */
export const DEMO_ADMIN = { identityUserId: 'user_dev_admin', email: 'admin@example.com' };

/** The subject a development token gets for an e-mail: stable, so the same e-mail is the same user. */
export function devSubjectFor(email) {
  const normalized = email.trim().toLowerCase();
  if (normalized === DEMO_ADMIN.email) return DEMO_ADMIN.identityUserId;
  return `user_dev_${createHash('sha256').update(normalized).digest('hex').slice(0, 16)}`;
}

/** The signing key written by `npm start`: { kid, privateJwk }, or null when it does not exist yet. */
export async function readDevSigningKey() {
  try {
    return JSON.parse(await readFile(devIdentityKeyFile(), 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return null;
    throw new Error(`${devIdentityKeyFile()}: ${error.message}`, { cause: error });
  }
}

async function ensureDevSigningKey() {
  const existing = await readDevSigningKey();
  if (existing) return existing;
  const { privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(jwk);
  const key = { kid, privateJwk: { ...jwk, kid, alg: 'RS256', use: 'sig' } };
  await mkdir(dirname(devIdentityKeyFile()), { recursive: true, mode: 0o700 });
  await writeFile(devIdentityKeyFile(), `${JSON.stringify(key, null, 2)}\n`, { mode: 0o600 });
  say(`generated the development signing key ${devIdentityKeyFile()} (kid ${kid})`);
  return key;
}

/** Serves the development key's public half, as the real identity provider serves its JWKS. */
export async function startDevIdentity(port) {
  const { kid, privateJwk } = await ensureDevSigningKey();
  const body = JSON.stringify({
    keys: [{ kty: 'RSA', n: privateJwk.n, e: privateJwk.e, kid, alg: 'RS256', use: 'sig' }],
  });
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/.well-known/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' }).end(body);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  started.push({
    name: 'development JWKS server',
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
  return `http://127.0.0.1:${server.address().port}/.well-known/jwks.json`;
}

/**
 * A development access token for `email`, signed with `key` as the development identity provider signs
 * them (RS256, iss DEV_ISSUER, a verified e-mail; IDENTITY_AUDIENCE and the first
 * IDENTITY_AUTHORIZED_PARTIES honoured so the API's checks pass).
 */
export async function signDevToken(key, { email, subject = devSubjectFor(email), ttl = 3600 }) {
  const env = (name) => process.env[name]?.trim() || undefined;
  // The development identity provider vouches for the address, as a real one does for a verified e-mail.
  const claims = { email, email_verified: true };
  const azp = env('IDENTITY_AUTHORIZED_PARTIES')?.split(',')[0].trim();
  if (azp) claims.azp = azp;
  let token = new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
    .setIssuer(DEV_ISSUER)
    .setSubject(subject)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttl);
  if (env('IDENTITY_AUDIENCE')) token = token.setAudience(env('IDENTITY_AUDIENCE'));
  return token.sign(await importJWK(key.privateJwk, 'RS256'));
}
