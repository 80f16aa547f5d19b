import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { AppConfig } from '../../config/app-config.js';
import { Prisma, PrismaClient } from '../../generated/prisma/client.js';

export type Tx = Prisma.TransactionClient;
/** Either the root client or a transaction: repositories accept both. */
export type Db = PrismaClient | Tx;

export function createPool(config: AppConfig, applicationName: string): pg.Pool {
  return new pg.Pool({
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
 * the few places that need plain SQL without Prisma's overhead (health probes).
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
    // Our own listener for the pool's whole life: the adapter removes its listener on $disconnect, before
    // pool.end() has closed the sockets, and an idle connection failing then (the server terminating it)
    // would be an 'error' event without a listener: an uncaught exception that crashes the process.
    pool.on('error', (err) => this.logger.warn({ err: err.message }, 'idle database connection failed'));
  }

  async onModuleDestroy(): Promise<void> {
    await this.$disconnect();
    await this.pool.end();
  }
}
