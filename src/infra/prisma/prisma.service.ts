import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import type * as runtime from '@prisma/client/runtime/client';
import pg from 'pg';
import { AppConfig } from '../../config/app-config.js';
import { Prisma, PrismaClient } from '../../generated/prisma/client.js';
import {
  type Driver,
  openTracked,
  registerRootDriver,
  registeredDriver,
  TransactionTrackingPool,
} from './driver.js';

export type Tx = Prisma.TransactionClient;
/** Either the root client or a transaction: repositories accept both. */
export type Db = PrismaClient | Tx;

export function createPool(config: AppConfig, applicationName: string): pg.Pool {
  return new TransactionTrackingPool({
    connectionString: config.database.url,
    max: config.database.poolSize,
    // A dead database must fail a request within seconds (503), not hang it.
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30000,
    keepAlive: true,
    statement_timeout: config.database.statementTimeoutMs || undefined,
    application_name: applicationName,
    // Short OLTP queries: JIT compilation costs more than it saves (seen: ~90 ms on a metrics query).
    options: '-c jit=off',
  });
}

/**
 * The Prisma client over a pg pool we own (PrismaPg adapter, Rust-free client). The pool is exposed for
 * the few places that need plain SQL without Prisma's overhead (health probes); `driverOf` gives the hot
 * repositories the driver of the client they were handed (see driverOf).
 */
@Injectable()
export class PrismaService extends PrismaClient implements OnModuleDestroy {
  readonly pool: pg.Pool;
  private readonly logger = new Logger(PrismaService.name);

  constructor(config: AppConfig) {
    const pool = createPool(config, config.project.projectSlug);
    super({
      adapter: new PrismaPg(pool),
      // Row locks make some transactions wait for others (credit deducts on one hot user).
      transactionOptions: { maxWait: 10_000, timeout: 20_000 },
    });
    this.pool = pool;
    // `this` is the object Prisma's constructor returned (not an instance of this class for instanceof).
    registerRootDriver(this, pool);
    // Our own listener for the pool's whole life: the adapter removes its listener on $disconnect, before
    // pool.end() has closed the sockets, and an idle connection failing then (the server terminating it)
    // would be an 'error' event without a listener: an uncaught exception that crashes the process.
    pool.on('error', (err) => this.logger.warn({ err: err.message }, 'idle database connection failed'));
  }

  /**
   * Interactive transactions are opened so that their connection is known (see driver.ts); array
   * transactions are Prisma's as they are.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Prisma's own signature
  override $transaction<P extends Prisma.PrismaPromise<any>[]>(
    arg: [...P],
    options?: { maxWait?: number; timeout?: number; isolationLevel?: Prisma.TransactionIsolationLevel },
  ): runtime.Types.Utils.JsPromise<runtime.Types.Utils.UnwrapTuple<P>>;
  override $transaction<R>(
    fn: (prisma: Omit<PrismaClient, runtime.ITXClientDenyList>) => runtime.Types.Utils.JsPromise<R>,
    options?: { maxWait?: number; timeout?: number; isolationLevel?: Prisma.TransactionIsolationLevel },
  ): runtime.Types.Utils.JsPromise<R>;
  override $transaction(arg: unknown, options?: unknown): Promise<unknown> {
    const base = super.$transaction as unknown as (arg: unknown, options?: unknown) => Promise<unknown>;
    if (typeof arg !== 'function') return base.call(this, arg, options);
    const fn = arg as (tx: Tx) => Promise<unknown>;
    return openTracked((bind) =>
      base.call(
        this,
        (tx: Tx) => {
          bind(tx);
          return fn(tx);
        },
        options,
      ),
    );
  }

  async onModuleDestroy(): Promise<void> {
    await this.$disconnect();
    await this.pool.end();
  }
}

/**
 * Where a repository's driver statement runs: on the pool for the root client, on the transaction's own
 * connection for a transaction PrismaService opened (see driver.ts). Any other client is a programming error.
 */
export function driverOf(db: Db): Driver {
  const driver = registeredDriver(db);
  if (driver) return driver;
  throw new Error('driverOf: this client is neither the root client nor a transaction it opened');
}
