import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Tx } from '../../src/infra/prisma/prisma.service.js';
import { OutsideUnitOfWorkError, Unit, UnitOfWork } from '../../src/infra/prisma/unit-of-work.js';
import { OutboxService } from '../../src/infra/queue/outbox.service.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { AuditService } from '../../src/modules/audit/audit.service.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

// Issue 16 item 3: one transaction runner. The outbox entries a unit writes are pushed to BullMQ once it
// has committed, never after a rollback; a run inside a unit joins it; the outbox refuses a transaction
// that is not a unit (its commit would never be followed by the push). Real PostgreSQL and Redis; the API
// process has no worker, so a pushed job stays in its queue to be looked at.

describe('UnitOfWork: after-commit dispatch of outbox jobs', () => {
  let env: TestEnv;
  let api: ApiApp;
  let uow: UnitOfWork;
  let outbox: OutboxService;
  let audit: AuditService;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    uow = api.app.get(UnitOfWork);
    outbox = api.app.get(OutboxService);
    audit = api.app.get(AuditService);
  });
  afterAll(() => env.close());

  const job = JOBS.emailChanged;
  const newJobId = () => `uow-test-${randomUUID()}`;
  const add = (tx: Tx, jobId: string) => outbox.add(tx, job, { userId: randomUUID() }, jobId);
  const entry = (jobId: string) => api.prisma.outboxEntry.findUnique({ where: { jobId } });
  const queued = async (jobId: string) =>
    (await api.app.get(QueueService).queue(job.queue).getJob(jobId)) !== undefined;

  it('pushes the jobs a unit wrote once it has committed, together', async () => {
    const [first, second] = [newJobId(), newJobId()];
    const seenInside: boolean[] = [];
    await uow.run(async (tx) => {
      await add(tx, first);
      await add(tx, second);
      // Nothing is pushed before the commit: a worker would not find the rows yet.
      seenInside.push(await queued(first), await queued(second));
    });
    expect(seenInside).toEqual([false, false]);
    // `run` resolves once the push is done (the default `afterCommit: 'wait'`).
    expect(await queued(first)).toBe(true);
    expect(await queued(second)).toBe(true);
    expect((await entry(first))?.dispatchedAt).not.toBeNull();
    expect((await entry(second))?.dispatchedAt).not.toBeNull();
  });

  it('pushes nothing and keeps no row when the unit rolls back', async () => {
    const jobId = newJobId();
    const ran: string[] = [];
    await expect(
      uow.run(async (tx) => {
        await add(tx, jobId);
        Unit.of(tx).afterCommit(async () => {
          ran.push('after-commit work');
        });
        throw new Error('the caller failed after writing the job');
      }),
    ).rejects.toThrow('the caller failed');
    expect(ran).toEqual([]);
    expect(await entry(jobId)).toBeNull();
    expect(await queued(jobId)).toBe(false);
  });

  it('runs after-commit work in registration order, and a failing one neither fails the unit nor the rest', async () => {
    const ran: string[] = [];
    const value = await uow.run(async (tx) => {
      Unit.of(tx).afterCommit(async () => {
        ran.push('first');
        throw new Error('push failed');
      });
      Unit.of(tx).afterCommit(async () => {
        ran.push('second');
      });
      return 'committed';
    });
    expect(value).toBe('committed');
    expect(ran).toEqual(['first', 'second']);
  });

  it('pushes nothing when the commit itself fails', async () => {
    const jobId = newJobId();
    const id = randomUUID();
    // A deferred constraint fails at COMMIT, after the callback returned.
    await expect(
      uow.run(async (tx) => {
        await add(tx, jobId);
        await tx.$executeRawUnsafe(
          'CREATE TEMP TABLE uow_deferred (id uuid UNIQUE DEFERRABLE INITIALLY DEFERRED)',
        );
        await tx.$executeRaw`INSERT INTO uow_deferred (id) VALUES (${id}::uuid), (${id}::uuid)`;
      }),
    ).rejects.toThrow();
    expect(await entry(jobId)).toBeNull();
    expect(await queued(jobId)).toBe(false);
  });

  it('joins a run inside an open unit: same transaction, one push after the outer commit', async () => {
    const [outerJob, innerJob] = [newJobId(), newJobId()];
    let innerTx: Tx | undefined;
    let outerTx: Tx | undefined;
    const afterInner: boolean[] = [];
    await uow.run(async (tx) => {
      outerTx = tx;
      await add(tx, outerJob);
      await uow.run(async (inner) => {
        innerTx = inner;
        await add(inner, innerJob);
      });
      // The inner run has returned, but its unit is the outer one: nothing committed, nothing pushed.
      afterInner.push(await queued(innerJob), (await entry(innerJob)) !== null);
    });
    expect(innerTx).toBe(outerTx);
    expect(afterInner).toEqual([false, false]);
    expect(await queued(outerJob)).toBe(true);
    expect(await queued(innerJob)).toBe(true);
  });

  it('rolls the whole unit back when a joined run failed, even if the outer caller caught it', async () => {
    const [outerJob, innerJob] = [newJobId(), newJobId()];
    await expect(
      uow.run(async (tx) => {
        await add(tx, outerJob);
        await uow
          .run(async (inner) => {
            await add(inner, innerJob);
            throw new Error('inner failure');
          })
          .catch(() => undefined);
      }),
    ).rejects.toThrow('a nested unit of work failed');
    expect(await entry(outerJob)).toBeNull();
    expect(await entry(innerJob)).toBeNull();
    expect(await queued(outerJob)).toBe(false);
  });

  it('refuses an outbox write outside a unit, before writing anything', async () => {
    const jobId = newJobId();
    await expect(api.prisma.$transaction((tx) => add(tx, jobId))).rejects.toBeInstanceOf(
      OutsideUnitOfWorkError,
    );
    expect(await entry(jobId)).toBeNull();
    // Nor with the transaction of a unit that has ended (a leaked reference).
    let leaked: Tx | undefined;
    await uow.run(async (tx) => {
      leaked = tx;
    });
    await expect(add(leaked!, newJobId())).rejects.toBeInstanceOf(OutsideUnitOfWorkError);
  });

  it('starts a new unit for a run that follows a committed one in the same async context', async () => {
    const jobId = newJobId();
    await uow.run(async () => {
      await Promise.resolve();
    });
    await uow.run((tx) => add(tx, jobId));
    expect(await queued(jobId)).toBe(true);
  });

  it('with afterCommit "background", resolves at commit and still pushes', async () => {
    const jobId = newJobId();
    await uow.run((tx) => add(tx, jobId), { afterCommit: 'background' });
    expect(await entry(jobId)).not.toBeNull();
    await waitFor(() => queued(jobId));
  });

  describe('collected writes (a batch of webhook events)', () => {
    const audited = (action: string, db: Tx | typeof api.prisma = api.prisma) =>
      db.auditLog.count({ where: { action } });

    it('writes the collected audit entries in one statement before the commit', async () => {
      const action = `uow.collected.${randomUUID()}`;
      const insideBefore: number[] = [];
      await uow.run(
        async (tx) => {
          await audit.record(tx, { actor: 'system:test', action });
          await audit.record(tx, { actor: 'system:test', action });
          // Collected, not yet written: the transaction itself does not see them.
          insideBefore.push(await audited(action, tx));
        },
        { collectWrites: true },
      );
      expect(insideBefore).toEqual([0]);
      expect(await audited(action)).toBe(2);
      // A unit that does not collect writes each entry at once.
      const plain = `uow.plain.${randomUUID()}`;
      const insidePlain: number[] = [];
      await uow.run(async (tx) => {
        await audit.record(tx, { actor: 'system:test', action: plain });
        insidePlain.push(await audited(plain, tx));
      });
      expect(insidePlain).toEqual([1]);
    });

    it('writes what one key collected when its writer flushes it, and collects anew after', async () => {
      const action = `uow.flushed.${randomUUID()}`;
      const seen: number[] = [];
      await uow.run(
        async (tx) => {
          await audit.record(tx, { actor: 'system:test', action });
          await audit.record(tx, { actor: 'system:test', action });
          await Unit.of(tx).flush('audit_logs');
          seen.push(await audited(action, tx));
          await audit.record(tx, { actor: 'system:test', action });
          seen.push(await audited(action, tx));
          // A key nothing collected under: nothing to write.
          await Unit.of(tx).flush('nothing_here');
        },
        { collectWrites: true },
      );
      expect(seen).toEqual([2, 2]);
      expect(await audited(action)).toBe(3);
    });

    it('fails the unit, and keeps none of its writes, when the collected write fails', async () => {
      const action = `uow.collected.${randomUUID()}`;
      const jobId = newJobId();
      await expect(
        uow.run(
          async (tx) => {
            await add(tx, jobId);
            await audit.record(tx, { actor: 'system:test', action });
            // user_id references an existing identity user: this one fails the insert at the flush.
            await audit.record(tx, { actor: 'system:test', action, userId: `user_missing_${randomUUID()}` });
          },
          { collectWrites: true },
        ),
      ).rejects.toThrow();
      expect(await audited(action)).toBe(0);
      expect(await entry(jobId)).toBeNull();
      expect(await queued(jobId)).toBe(false);
    });
  });
});
