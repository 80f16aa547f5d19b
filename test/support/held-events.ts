import type { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { holding } from './lock-holder.js';
import { waitFor } from './wait.js';

/** A held event's transaction waits at its gate until open() (see HeldEvents.gate). */
export interface Gate {
  /** Resolves once the held transaction waits at the gate: its handler ran, it has not committed. */
  reached(): Promise<void>;
  open(): Promise<void>;
}

/**
 * Holds the transaction that applies a webhook event open at its very end. The audit entries of an apply
 * batch are inserted right before its commit: a trigger on audit_logs stops the transaction whose entry
 * names an event listed in `test_held_events`, once per attempt (the row is deleted by the transaction it
 * holds; a rolled-back attempt is held again), for some seconds or until the test opens the event's gate.
 */
export class HeldEvents {
  private constructor(private readonly prisma: PrismaService) {}

  static async install(prisma: PrismaService): Promise<HeldEvents> {
    // seconds null: held until the gate (an advisory lock the test holds) opens.
    await prisma.$executeRawUnsafe(
      `CREATE TABLE test_held_events (event_id text PRIMARY KEY, seconds float8)`,
    );
    await prisma.$executeRawUnsafe(`
      CREATE FUNCTION test_hold_event() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE held test_held_events;
      BEGIN
        DELETE FROM test_held_events WHERE event_id = NEW.details->>'event_id' RETURNING * INTO held;
        IF held.event_id IS NULL THEN RETURN NEW; END IF;
        IF held.seconds IS NULL THEN
          PERFORM pg_advisory_xact_lock_shared(hashtextextended('test-gate:' || held.event_id, 0));
        ELSE
          PERFORM pg_sleep(held.seconds);
        END IF;
        RETURN NEW;
      END $$`);
    await prisma.$executeRawUnsafe(
      `CREATE TRIGGER test_hold_event BEFORE INSERT ON audit_logs FOR EACH ROW EXECUTE FUNCTION test_hold_event()`,
    );
    return new HeldEvents(prisma);
  }

  /** The next attempt at `eventId` stays open `seconds` after its handler ran. */
  async holdFor(eventId: string, seconds: number): Promise<void> {
    await this.prisma.$executeRaw`
      INSERT INTO test_held_events (event_id, seconds) VALUES (${eventId}, ${seconds})`;
  }

  /** The next attempt at `eventId` stays open until the gate is opened. */
  async gate(eventId: string): Promise<Gate> {
    const key = `test-gate:${eventId}`;
    const closed = await holding(
      this.prisma,
      (tx) => tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`,
    );
    await this.prisma.$executeRaw`INSERT INTO test_held_events (event_id, seconds) VALUES (${eventId}, NULL)`;
    return {
      reached: () => waitForLockWaiters(this.prisma, key),
      open: async () => {
        closed.release();
        await closed.done;
      },
    };
  }
}

/** Sessions of this database waiting for the transaction-scoped advisory lock on `key` (hashtextextended). */
export async function lockWaiters(prisma: PrismaService, key: string): Promise<number> {
  const [{ n }] = await prisma.$queryRaw<{ n: number }[]>`
    WITH k AS (SELECT hashtextextended(${key}, 0) AS v)
    SELECT count(*)::int AS n FROM pg_locks, k
    WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND classid = ((k.v >> 32) & 4294967295)::oid AND objid = (k.v & 4294967295)::oid`;
  return n;
}

/** Resolves once `count` sessions wait for the advisory lock on `key`. */
export function waitForLockWaiters(prisma: PrismaService, key: string, count = 1): Promise<void> {
  return waitFor(async () => (await lockWaiters(prisma, key)) >= count, 20_000).then(() => undefined);
}
