import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable, Logger } from '@nestjs/common';
import type { Prisma } from '../../generated/prisma/client.js';
import { PrismaService, type Tx } from './prisma.service.js';

/** What runs once a unit has committed (the outbox's push); never run after a rollback. */
export type AfterCommit = () => Promise<void>;

export interface UnitOptions {
  isolationLevel?: Prisma.TransactionIsolationLevel;
  /** Longest the transaction may run (ms); the client's default otherwise. */
  timeout?: number;
  /**
   * `wait` (default): `run` resolves once the after-commit work is done (the outbox bounds its own wait).
   * `background`: `run` resolves at commit and the after-commit work goes on without it (a metered call
   * that must not wait for Redis).
   */
  afterCommit?: 'wait' | 'background';
  /**
   * Writers that can (the audit trail) collect their rows and write them in one multi-row statement just
   * before the commit instead of one statement each (a batch of webhook events, issue 15 item 3). A
   * collected write that fails, fails the unit at its end.
   */
  collectWrites?: boolean;
}

function transactionOptions(options: UnitOptions): {
  isolationLevel?: Prisma.TransactionIsolationLevel;
  timeout?: number;
} {
  // Only what the caller set: an explicit undefined must not replace the client's defaults.
  return {
    ...(options.isolationLevel ? { isolationLevel: options.isolationLevel } : {}),
    ...(options.timeout ? { timeout: options.timeout } : {}),
  };
}

/** A programming error: a writer that needs a unit of work was handed a transaction opened elsewhere. */
export class OutsideUnitOfWorkError extends Error {
  constructor(what: string) {
    super(`${what} must run inside UnitOfWork.run(): this transaction is not an open unit of work`);
    this.name = 'OutsideUnitOfWorkError';
  }
}

/**
 * One open transaction and the work it owes after commit. Created by UnitOfWork.run only; a writer finds
 * the unit of the transaction it was handed with `Unit.of(tx)`.
 */
export class Unit {
  private static readonly byTx = new WeakMap<Tx, Unit>();
  private readonly hooks: AfterCommit[] = [];
  private readonly collected = new Map<
    string,
    { items: unknown[]; flush: (items: unknown[]) => Promise<void> }
  >();
  private state: 'open' | 'committed' | 'rolled-back' = 'open';
  /** A joined (nested) run failed: the unit must not commit even if its caller swallowed the error. */
  private failedInside: unknown = undefined;

  private constructor(
    readonly tx: Tx,
    /** See UnitOptions.collectWrites. */
    readonly collectsWrites: boolean,
  ) {}

  /** The open unit `tx` belongs to; throws OutsideUnitOfWorkError for any other transaction. */
  static of(tx: Tx, what = 'this writer'): Unit {
    const unit = Unit.byTx.get(tx);
    if (!unit || unit.state !== 'open') throw new OutsideUnitOfWorkError(what);
    return unit;
  }

  /** The open unit `tx` belongs to, or undefined (a bare transaction, an ended unit). */
  static find(tx: Tx): Unit | undefined {
    const unit = Unit.byTx.get(tx);
    return unit?.state === 'open' ? unit : undefined;
  }

  /** @internal UnitOfWork only. */
  static open(tx: Tx, collectsWrites = false): Unit {
    const unit = new Unit(tx, collectsWrites);
    Unit.byTx.set(tx, unit);
    return unit;
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  /** Registers work for after commit, in registration order. */
  afterCommit(hook: AfterCommit): void {
    if (this.state !== 'open') throw new OutsideUnitOfWorkError('afterCommit');
    this.hooks.push(hook);
  }

  /**
   * Collects `item` under `key` (one writer's rows); `flush` writes all of them in one statement inside
   * the transaction once the unit's work is done, before the commit. Only for a unit that collects writes.
   */
  collect<T>(key: string, item: T, flush: (items: T[]) => Promise<void>): void {
    if (this.state !== 'open' || !this.collectsWrites) throw new OutsideUnitOfWorkError('collect');
    const entry = this.collected.get(key);
    if (entry) entry.items.push(item);
    else this.collected.set(key, { items: [item], flush: flush as (items: unknown[]) => Promise<void> });
  }

  /**
   * Writes what `key` collected so far, now: its writer is about to read or write the same rows with a
   * statement of its own. Later items under `key` are collected again.
   */
  async flush(key: string): Promise<void> {
    const entry = this.collected.get(key);
    if (!entry) return;
    this.collected.delete(key);
    await entry.flush(entry.items);
  }

  /** @internal Writes what was collected, in the order the writers first collected. */
  async flushCollected(): Promise<void> {
    for (const key of [...this.collected.keys()]) await this.flush(key);
  }

  /** @internal */
  markFailedInside(err: unknown): void {
    this.failedInside ??= err;
  }

  /** @internal Throws (so the transaction rolls back) when a joined run failed. */
  assertCommittable(): void {
    if (this.failedInside !== undefined) {
      throw new Error('a nested unit of work failed; the whole unit rolls back', {
        cause: this.failedInside,
      });
    }
  }

  /** @internal */
  close(committed: boolean): AfterCommit[] {
    this.state = committed ? 'committed' : 'rolled-back';
    const hooks = committed ? [...this.hooks] : [];
    this.hooks.length = 0;
    return hooks;
  }
}

/**
 * The transaction runner (issue 16 item 3). `run(fn)` opens one Prisma interactive transaction and hands
 * `fn` its client; writers that owe work after commit (the outbox) register it with the unit, and it runs
 * only once the transaction has committed. A `run` inside an open unit joins it (no savepoint): its writes
 * commit or roll back with the outer unit, and its failure rolls the outer unit back even when caught.
 */
@Injectable()
export class UnitOfWork {
  private readonly logger = new Logger(UnitOfWork.name);
  private readonly current = new AsyncLocalStorage<Unit>();

  constructor(private readonly prisma: PrismaService) {}

  async run<T>(fn: (tx: Tx) => Promise<T>, options: UnitOptions = {}): Promise<T> {
    const outer = this.current.getStore();
    if (outer?.isOpen) return this.join(outer, fn);

    let unit: Unit | undefined;
    let result: T;
    try {
      result = await this.prisma.$transaction(async (tx) => {
        unit = Unit.open(tx, options.collectWrites ?? false);
        const value = await this.current.run(unit, () => fn(tx));
        unit.assertCommittable();
        await unit.flushCollected();
        return value;
      }, transactionOptions(options));
    } catch (err) {
      unit?.close(false);
      throw err;
    }
    const hooks = unit!.close(true);
    if (hooks.length > 0) {
      // Outside this unit's context: after-commit work that opens a unit gets a new one.
      const done = this.current.exit(() => this.runHooks(hooks));
      if (options.afterCommit !== 'background') await done;
    }
    return result;
  }

  private async join<T>(unit: Unit, fn: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await fn(unit.tx);
    } catch (err) {
      unit.markFailedInside(err);
      throw err;
    }
  }

  /** The commit is done: a failing hook is logged, never turned into a failure of the committed work. */
  private async runHooks(hooks: AfterCommit[]): Promise<void> {
    for (const hook of hooks) {
      try {
        await hook();
      } catch (err) {
        this.logger.warn({ err: (err as Error).message }, 'after-commit work failed');
      }
    }
  }
}
