import { createPublicKey, type KeyObject } from 'node:crypto';
import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { z } from 'zod';
import { AppConfig } from '../../config/app-config.js';
import { HttpClient } from '../../infra/http/http-client.js';

/** The key set could not be read (unreachable, off-contract): the caller answers 503. */
export class KeySetUnavailableError extends Error {
  override readonly name = 'KeySetUnavailableError';
}

/** The key set was read and has no usable key under this kid: the token is invalid (401). */
export class UnknownKeyError extends Error {
  override readonly name = 'UnknownKeyError';
}

const jwks = z.object({ keys: z.array(z.record(z.string(), z.unknown())).max(100) });

/** A key set is a few kB; anything much larger is not one. */
const MAX_JWKS_BYTES = 256 * 1024;

/**
 * The identity provider's signing keys (JWKS), shared by every request of the process.
 *
 * - Prefetched at boot and refreshed every `refreshIntervalMs` (5 min), so a key the provider publishes
 *   before signing with it (the usual rotation) is known before the first token carrying it arrives.
 * - A token with an unknown kid joins the next refresh: at most one fetch per `cooldownMs` (5 s) for all
 *   callers together, however many unknown kids arrive, and every caller waiting for it shares it. Garbage
 *   kids cannot use up a fetch budget that a real user would need after a rotation: they only make the
 *   next refresh happen, which a real user's new kid is then found in (at most `cooldownMs` later).
 * - A failed refresh keeps the keys already known (an outage does not log anyone out); an unknown kid
 *   while the key set cannot be read is an outage (503), not a bad token.
 * - Only RSA signing keys are kept (kty RSA, use absent or `sig`, alg absent or RS256).
 */
@Injectable()
export class IdentityKeySet implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(IdentityKeySet.name);
  /** Minimum time between two fetches triggered by unknown kids; tests shorten it. */
  cooldownMs = 5_000;
  refreshIntervalMs = 5 * 60_000;
  timeoutMs = 5_000;

  private keys = new Map<string, KeyObject>();
  private lastFetchStartedAt = 0;
  private lastFetchFailed = false;
  private inflight: Promise<void> | null = null;
  private scheduled: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly http: HttpClient,
  ) {}

  get url(): string | null {
    return this.config.identity.jwksUrl;
  }

  onModuleInit(): void {
    if (!this.url) return;
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.refreshIntervalMs);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** The public key for `kid`, refreshing the set (at most once per cooldown, shared) when unknown. */
  async key(kid: string): Promise<KeyObject> {
    const known = this.keys.get(kid);
    if (known) return known;
    await this.refreshSoon();
    const found = this.keys.get(kid);
    if (found) return found;
    if (this.lastFetchFailed) throw new KeySetUnavailableError('the identity key set is unavailable');
    throw new UnknownKeyError('no signing key with this kid');
  }

  /**
   * Waits for the next refresh every unknown-kid caller shares: the one in flight, or one started when
   * the cooldown since the previous fetch is over.
   */
  private refreshSoon(): Promise<void> {
    if (this.inflight) return this.inflight;
    if (this.scheduled) return this.scheduled;
    const wait = this.lastFetchStartedAt + this.cooldownMs - Date.now();
    if (wait <= 0) return this.refresh();
    this.scheduled = new Promise<void>((resolve) => setTimeout(resolve, wait).unref()).then(() => {
      this.scheduled = null;
      return this.refresh();
    });
    return this.scheduled;
  }

  /** One fetch at a time; never throws (the outcome is in `keys` and `lastFetchFailed`). */
  refresh(): Promise<void> {
    if (this.inflight) return this.inflight;
    this.lastFetchStartedAt = Date.now();
    this.inflight = this.fetchKeys()
      .then((keys) => {
        this.keys = keys;
        this.lastFetchFailed = false;
      })
      .catch((err: unknown) => {
        this.lastFetchFailed = true;
        this.logger.warn({ err: (err as Error).message }, 'identity key set refresh failed');
      })
      .finally(() => {
        this.inflight = null;
      });
    return this.inflight;
  }

  private async fetchKeys(): Promise<Map<string, KeyObject>> {
    if (!this.url) throw new Error('IDENTITY_JWKS_URL is not set');
    const { body } = await this.http.request({
      method: 'GET',
      url: this.url,
      provider: 'identity',
      schema: jwks,
      maxAttempts: 1,
      timeoutMs: this.timeoutMs,
      maxResponseBytes: MAX_JWKS_BYTES,
    });
    const keys = new Map<string, KeyObject>();
    for (const jwk of body.keys) {
      const { kid, kty, use, alg } = jwk;
      if (typeof kid !== 'string' || kid.length === 0 || kid.length > 256) continue;
      if (kty !== 'RSA' || (use !== undefined && use !== 'sig') || (alg !== undefined && alg !== 'RS256'))
        continue;
      try {
        const key = createPublicKey({ key: { kty, n: jwk.n, e: jwk.e } as never, format: 'jwk' });
        // A short modulus is as good as no signature.
        if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) continue;
        keys.set(kid, key);
      } catch {
        // Not a usable RSA public key: skipped, like a key of another type.
      }
    }
    return keys;
  }
}
