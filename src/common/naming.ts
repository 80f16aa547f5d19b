/** A camelCase name (a Prisma model field) in snake_case (its column, its wire key): `expiresAt` -> `expires_at`. */
export const snakeCase = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The reverse of snakeCase: `expires_at` -> `expiresAt`. */
export const camelCase = (name: string): string =>
  name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
