import { createHmac, timingSafeEqual } from 'node:crypto';

/** Paddle's tolerance for the signed timestamp (replay window). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;
/** More h1 values than any rotation needs: refuse before doing that much HMAC work. */
const MAX_SIGNATURES = 8;
const HEX_SHA256 = /^[0-9a-f]{64}$/i;

export type SignatureCheck =
  { ok: true; timestamp: number } | { ok: false; reason: 'missing' | 'malformed' | 'expired' | 'mismatch' };

/** h1 = hex(HMAC-SHA256(secret, `${ts}:${rawBody}`)); exported for tests and local tooling. */
export function paddleSignature(secret: string, timestamp: number, rawBody: Buffer | string): string {
  return createHmac('sha256', secret).update(`${timestamp}:`).update(rawBody).digest('hex');
}

/**
 * Verifies a `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>...]` header over the raw request bytes.
 * Several h1 values are allowed (secret rotation); each is compared in constant time; the timestamp
 * must be within five minutes of now in either direction. Hand-written because Paddle's SDK is not a
 * dependency and the scheme is this small.
 */
export function verifyPaddleSignature(
  header: string | undefined,
  rawBody: Buffer,
  secret: string,
  nowMs: number = Date.now(),
  toleranceSeconds: number = SIGNATURE_TOLERANCE_SECONDS,
): SignatureCheck {
  if (!header) return { ok: false, reason: 'missing' };
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at <= 0) return { ok: false, reason: 'malformed' };
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 'ts') {
      if (timestamp !== null || !/^\d{1,12}$/.test(value)) return { ok: false, reason: 'malformed' };
      timestamp = Number(value);
    } else if (key === 'h1') {
      signatures.push(value);
    }
  }
  if (timestamp === null || signatures.length === 0 || signatures.length > MAX_SIGNATURES) {
    return { ok: false, reason: 'malformed' };
  }
  if (Math.abs(nowMs / 1000 - timestamp) > toleranceSeconds) return { ok: false, reason: 'expired' };
  const expected = Buffer.from(paddleSignature(secret, timestamp, rawBody), 'hex');
  let matched = false;
  for (const candidate of signatures) {
    // Buffer.from(hex) silently truncates bad input: only well-formed digests reach the comparison.
    if (!HEX_SHA256.test(candidate)) continue;
    if (timingSafeEqual(Buffer.from(candidate, 'hex'), expected)) matched = true;
  }
  return matched ? { ok: true, timestamp } : { ok: false, reason: 'mismatch' };
}
