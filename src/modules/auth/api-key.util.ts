import { createHash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'sk_live_';
const SHORT_ID_BYTES = 6;
const SECRET_BYTES = 32;

/** A new key: `sk_live_<short id>_<32 random bytes, base64url>`. Only its hash is ever stored. */
export function generateApiKey(): { key: string; prefix: string; secretHash: string } {
  const prefix = `${API_KEY_PREFIX}${randomBytes(SHORT_ID_BYTES).toString('hex')}`;
  const key = `${prefix}_${randomBytes(SECRET_BYTES).toString('base64url')}`;
  return { key, prefix, secretHash: hashApiKey(key) };
}

/** SHA-256 is enough for 32 random bytes (no dictionary to attack), and fast on every request. */
export const hashApiKey = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');

export const looksLikeApiKey = (token: string): boolean => token.startsWith(API_KEY_PREFIX);
