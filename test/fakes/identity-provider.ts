import { createHmac, createPrivateKey, randomBytes, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  exportJWK,
  exportPKCS8,
  exportSPKI,
  generateKeyPair,
  importPKCS8,
  SignJWT,
  type CryptoKey,
  type JWK,
} from 'jose';

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  publicPem: string;
}

export interface TokenOptions {
  /** Seconds from now; negative for an expired token. Default 60 (the provider's default lifetime). */
  expiresIn?: number;
  notBefore?: number;
  issuer?: string;
  audience?: string;
  kid?: string;
  /** Sign with a key that is NOT published in the JWKS (but reuse the current kid). */
  foreignKey?: boolean;
  /**
   * Another RSA algorithm with the same (published) key and kid: the service must refuse anything but
   * RS256 even when the signature itself is valid.
   */
  alg?: 'RS256' | 'RS384' | 'RS512' | 'PS256' | 'PS384' | 'PS512';
  /** Seconds from now for `iat` (default 0); positive for a token issued in the future. */
  issuedAt?: number;
}

export interface TokenClaims {
  sub: string;
  email?: string;
  /** Defaults to true when `email` is given (the provider only puts verified addresses in its tokens). */
  email_verified?: unknown;
  azp?: string;
}

async function newKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = `kid_${randomBytes(6).toString('hex')}`;
  return {
    kid,
    privateKey,
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' },
    publicPem: await exportSPKI(publicKey),
  };
}

const b64url = (value: object | string) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/**
 * A local identity provider for tests: serves a JWKS over HTTP and mints RS256 tokens with its keys,
 * plus the hostile variants (alg none, HS256 keyed with the public key, foreign key) the auth tests need.
 */
export class FakeIdentityProvider {
  private keys: SigningKey[] = [];
  private server!: Server;
  jwksRequests = 0;
  /** When false, the JWKS endpoint answers 503. */
  available = true;
  issuer = '';
  jwksUrl = '';

  static async start(): Promise<FakeIdentityProvider> {
    const idp = new FakeIdentityProvider();
    idp.keys = [await newKey()];
    idp.server = createServer((req, res) => {
      if (req.url !== '/.well-known/jwks.json') {
        res.writeHead(404).end();
        return;
      }
      idp.jwksRequests += 1;
      if (!idp.available) {
        res.writeHead(503).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: idp.keys.map((k) => k.publicJwk) }));
    });
    await new Promise<void>((resolve) => idp.server.listen(0, '127.0.0.1', resolve));
    const { port } = idp.server.address() as AddressInfo;
    idp.issuer = `http://127.0.0.1:${port}`;
    idp.jwksUrl = `${idp.issuer}/.well-known/jwks.json`;
    return idp;
  }

  get currentKid(): string {
    return this.keys[this.keys.length - 1].kid;
  }

  /** Publishes a new key and signs with it from now on; `keepOld: false` drops the previous keys. */
  async rotate(keepOld = false): Promise<void> {
    const key = await newKey();
    this.keys = keepOld ? [...this.keys, key] : [key];
  }

  async token(claims: TokenClaims, options: TokenOptions = {}): Promise<string> {
    const key = options.foreignKey
      ? { ...(await newKey()), kid: this.currentKid }
      : this.keys[this.keys.length - 1];
    const alg = options.alg ?? 'RS256';
    // WebCrypto keys are bound to one algorithm: re-import the same key material for another one.
    const signingKey =
      alg === 'RS256' ? key.privateKey : await importPKCS8(await exportPKCS8(key.privateKey), alg);
    const now = Math.floor(Date.now() / 1000);
    const payload: Record<string, unknown> = { ...claims };
    if (claims.email !== undefined && !('email_verified' in claims)) payload.email_verified = true;
    const jwt = new SignJWT(payload)
      .setProtectedHeader({ alg, kid: options.kid ?? key.kid, typ: 'JWT' })
      .setIssuer(options.issuer ?? this.issuer)
      .setSubject(claims.sub)
      .setIssuedAt(now + (options.issuedAt ?? 0))
      .setExpirationTime(now + (options.expiresIn ?? 60));
    if (options.notBefore !== undefined) jwt.setNotBefore(now + options.notBefore);
    if (options.audience) jwt.setAudience(options.audience);
    return jwt.sign(signingKey);
  }

  /**
   * Any header and payload, RS256-signed with the current published key (validly signed, so only the
   * service's own checks can refuse it): `iss` defaults to the issuer, `kid`/`alg` to the current ones.
   * jose refuses to sign some of these (unknown `crit`), hence the hand-made JWS.
   */
  async rawToken(header: Record<string, unknown>, payload: Record<string, unknown>): Promise<string> {
    const key = this.keys[this.keys.length - 1];
    const input = `${b64url({ alg: 'RS256', typ: 'JWT', kid: key.kid, ...header })}.${b64url({ iss: this.issuer, ...payload })}`;
    const privateKey = createPrivateKey(await exportPKCS8(key.privateKey));
    return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
  }

  /**
   * A JWS whose payload is exactly these bytes (`null`, `5`, `[]`: JSON that is not a claims object),
   * RS256-signed with the current published key under `{alg: RS256, typ: JWT, kid}`: a valid signature
   * over a payload no identity provider would issue.
   */
  async tokenWithPayload(payload: string, header: Record<string, unknown> = {}): Promise<string> {
    const key = this.keys[this.keys.length - 1];
    const input = `${b64url({ alg: 'RS256', typ: 'JWT', kid: key.kid, ...header })}.${b64url(payload)}`;
    const privateKey = createPrivateKey(await exportPKCS8(key.privateKey));
    return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
  }

  /** `alg: none`, no signature. */
  unsignedToken(claims: { sub: string; email?: string }): string {
    const now = Math.floor(Date.now() / 1000);
    return `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ ...claims, iss: this.issuer, iat: now, exp: now + 60 })}.`;
  }

  /** Algorithm confusion: HS256 with the RSA public key (PEM) as the HMAC secret. */
  hs256WithPublicKey(claims: { sub: string; email?: string }): string {
    const key = this.keys[this.keys.length - 1];
    const now = Math.floor(Date.now() / 1000);
    const input = `${b64url({ alg: 'HS256', typ: 'JWT', kid: key.kid })}.${b64url({ ...claims, iss: this.issuer, iat: now, exp: now + 60 })}`;
    return `${input}.${createHmac('sha256', key.publicPem).update(input).digest('base64url')}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
