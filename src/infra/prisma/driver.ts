import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';

/**
 * What a driver statement runs on: node-postgres' query(), on the pool (a statement of its own) or on the
 * connection of an open transaction. Repositories use it for their hottest statements, where Prisma's
 * per-statement cost dominates (issue 15 item 3): always with text and values, never interpolated SQL.
 */
export interface Driver {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    config: pg.QueryConfig | string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/** A transaction's connection was asked for after the transaction ended: a programming error. */
export class TransactionClosedError extends Error {
  constructor() {
    super('a driver statement was issued on a transaction that has already ended');
    this.name = 'TransactionClosedError';
  }
}

interface Opening {
  client?: pg.PoolClient;
  /** The transaction's callback has started: later checkouts in this context are not its connection. */
  bound?: boolean;
}

/** Set while PrismaService opens an interactive transaction: the pool hands it the connection it checks out. */
const opening = new AsyncLocalStorage<Opening>();

/**
 * The pool under Prisma's adapter. The adapter checks out a connection for each interactive transaction
 * with the promise form of connect() (its single statements use query(), which connects with a callback);
 * while PrismaService opens a transaction, that connection is handed to the opener, so the transaction's
 * driver statements run on the very connection its Prisma statements use.
 */
export class TransactionTrackingPool extends pg.Pool {
  override connect(): Promise<pg.PoolClient>;
  override connect(
    callback: (
      err: Error | undefined,
      client: pg.PoolClient | undefined,
      done: (release?: unknown) => void,
    ) => void,
  ): void;
  override connect(
    callback?: (
      err: Error | undefined,
      client: pg.PoolClient | undefined,
      done: (release?: unknown) => void,
    ) => void,
  ): Promise<pg.PoolClient> | void {
    if (callback) return super.connect(callback);
    const slot = opening.getStore();
    return super.connect().then((client) => {
      if (slot && !slot.bound && !slot.client) slot.client = client;
      return client;
    });
  }
}

/**
 * The driver of one transaction: its connection until Prisma releases it (commit, rollback or Prisma's
 * own timeout), then a refusal, so a late statement can never run inside another caller's transaction.
 * The check and the send happen in one synchronous step: nothing can release the connection in between.
 */
class TransactionDriver implements Driver {
  private released = false;

  constructor(private readonly client: pg.PoolClient) {
    const release = client.release.bind(client);
    client.release = (err?: Error | boolean) => {
      this.released = true;
      client.release = release;
      return release(err);
    };
  }

  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    config: pg.QueryConfig | string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    if (this.released) return Promise.reject(new TransactionClosedError());
    return this.client.query<R>(config as pg.QueryConfig, values);
  }
}

const drivers = new WeakMap<object, Driver>();

/**
 * Runs `open` (which opens an interactive transaction) so that the connection the pool checks out for it
 * becomes the transaction's driver: `bind(tx)`, called first thing inside the transaction's callback,
 * registers it for `driverOf(tx)`.
 */
export function openTracked<T>(open: (bind: (tx: object) => void) => Promise<T>): Promise<T> {
  const slot: Opening = {};
  return opening.run(slot, () =>
    open((tx) => {
      slot.bound = true;
      if (slot.client) drivers.set(tx, new TransactionDriver(slot.client));
      slot.client = undefined;
    }),
  );
}

/** The root client's driver is its pool (PrismaService registers it at construction). */
export function registerRootDriver(client: object, pool: pg.Pool): void {
  drivers.set(client, pool);
}

/** The driver of the root client or of a transaction opened through PrismaService; undefined otherwise. */
export function registeredDriver(db: object): Driver | undefined {
  return drivers.get(db);
}
