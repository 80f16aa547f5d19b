/** What a row fault needs of a Prisma client. */
interface RawDb {
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
}

/** A database fault on the rows of one table, for the keys a test lists (installRowFault). */
export interface RowFault {
  /** Writes of rows with this key fail from now on. */
  refuse(key: string): Promise<void>;
  /** Writes succeed again, for every key. */
  lift(): Promise<void>;
  /** Removes the fault (its trigger; its key list stays, empty once lifted). */
  remove(): Promise<void>;
}

/**
 * A database fault for tests: a write (`on`, e.g. `INSERT` or `INSERT OR UPDATE`) to `table` whose key
 * (`key`, an SQL expression of NEW) a test has listed raises `test: database refused`, and only when `when`
 * (an SQL condition on NEW) holds. It stands in for any processing failure of a handler: a lock timeout, a
 * deadlock storm, a bad deploy. `name` names the trigger, its function and its key list (unique per database).
 */
export async function installRowFault(
  db: RawDb,
  fault: { name: string; table: string; on: string; key: string; when?: string },
): Promise<RowFault> {
  const keys = `${fault.name}_keys`;
  await db.$executeRawUnsafe(`CREATE TABLE ${keys} (key text PRIMARY KEY)`);
  await db.$executeRawUnsafe(`
    CREATE FUNCTION ${fault.name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (${fault.when ?? 'true'}) AND EXISTS (SELECT 1 FROM ${keys} WHERE key = ${fault.key}) THEN
        RAISE EXCEPTION 'test: database refused';
      END IF;
      RETURN NEW;
    END $$`);
  await db.$executeRawUnsafe(
    `CREATE TRIGGER ${fault.name} BEFORE ${fault.on} ON ${fault.table} FOR EACH ROW EXECUTE FUNCTION ${fault.name}()`,
  );
  return {
    refuse: async (key) => {
      await db.$executeRawUnsafe(`INSERT INTO ${keys} VALUES ($1) ON CONFLICT DO NOTHING`, key);
    },
    lift: async () => {
      await db.$executeRawUnsafe(`DELETE FROM ${keys}`);
    },
    remove: async () => {
      await db.$executeRawUnsafe(`DROP TRIGGER ${fault.name} ON ${fault.table}`);
    },
  };
}
