/** Spec limits: "retry of external calls: exponential backoff, at most 3 attempts". */
export const MAX_HTTP_ATTEMPTS = 3;

/** The longest wait between two attempts: a provider's Retry-After is capped here (backoff stays far below). */
export const RETRY_AFTER_CAP_MS = 30_000;
