/**
 * Canonical UUID text, any version. PostgreSQL would reject anything else with an error (a 500 if it
 * reached the database), so a malformed id is answered like a missing row without a query.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
