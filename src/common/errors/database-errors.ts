/**
 * PostgreSQL errors the API answers on purpose, recognised whether they arrive from pg directly (`code`
 * is the SQLSTATE), from a Prisma model query (its own `P2xxx` code) or from a Prisma raw query (`P2010`
 * with the SQLSTATE in `meta.driverAdapterError.cause.originalCode`).
 */
function hasDatabaseCode(error: unknown, prismaCode: string, sqlState: string, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  const e = error as {
    code?: unknown;
    meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } };
    cause?: unknown;
  };
  if (e.code === prismaCode || e.code === sqlState) return true;
  if (e.meta?.driverAdapterError?.cause?.originalCode === sqlState) return true;
  return hasDatabaseCode(e.cause, prismaCode, sqlState, depth + 1);
}

/** A string longer than its VARCHAR(n) column (22001 string_data_right_truncation, Prisma P2000). */
export const isValueTooLong = (error: unknown): boolean => hasDatabaseCode(error, 'P2000', '22001');

/** A row pointing at a row that does not exist (23503 foreign_key_violation, Prisma P2003). */
export const isForeignKeyViolation = (error: unknown): boolean => hasDatabaseCode(error, 'P2003', '23503');

/** A second row with a value a unique index allows once (23505 unique_violation, Prisma P2002). */
export const isUniqueViolation = (error: unknown): boolean => hasDatabaseCode(error, 'P2002', '23505');

/**
 * A transaction PostgreSQL aborted to break a lock cycle (40P01 deadlock_detected; Prisma reports an
 * interactive transaction's as P2034). Running it again is safe where the work is idempotent.
 */
export const isDeadlock = (error: unknown): boolean => hasDatabaseCode(error, 'P2034', '40P01');
