const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'P1001',
  'P1002',
  'P1017',
  'P2024',
  '57P01',
  '57P03',
  '08000',
  '08003',
  '08006',
]);

const MESSAGES = [
  /connection terminated/i,
  /connection (is )?closed/i,
  /timeout exceeded when trying to connect/i,
  /can't reach database server/i,
  /stream isn't writeable/i,
  /connection is closed/i,
  /max retries per request/i,
  /reached the max retries/i,
  /unable to start a transaction in the given time/i,
  /transaction api error/i,
  /client has encountered a connection error/i,
  // ioredis gives up on a command after RedisService's commandTimeout.
  /command timed out/i,
  /server has closed the connection/i,
];

/**
 * True when an error means "a store we depend on is unreachable" (PostgreSQL through Prisma or pg,
 * Redis through ioredis), which the API reports as 503 so clients and providers retry.
 */
export function isDependencyFailure(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  const e = error as {
    code?: unknown;
    errorCode?: unknown;
    message?: unknown;
    cause?: unknown;
    name?: unknown;
  };
  const code =
    typeof e.code === 'string' ? e.code : typeof e.errorCode === 'string' ? e.errorCode : undefined;
  if (code && NETWORK_CODES.has(code)) return true;
  if (e.name === 'PrismaClientInitializationError' || e.name === 'MaxRetriesPerRequestError') return true;
  if (typeof e.message === 'string' && MESSAGES.some((re) => re.test(e.message as string))) return true;
  return isDependencyFailure(e.cause, depth + 1);
}
