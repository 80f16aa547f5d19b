/** The prefix of every API route (`/api/v1/...`); the operational trio and the webhook receivers stand outside it. */
export const API_PREFIX = 'api/v1';
