import { randomInt } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import type { JobsOptions } from 'bullmq';
import { AppConfig } from '../../config/app-config.js';
import { AppError, ConflictError, NotFoundError } from '../../common/errors/app-error.js';
import { recordableError } from '../../common/errors/internal-text.js';
import { MetricsService } from '../../infra/metrics/metrics.service.js';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import { Unit, UnitOfWork } from '../../infra/prisma/unit-of-work.js';
import { DISPATCH_WAIT_MS } from '../../infra/queue/outbox.service.js';
import { QueueService } from '../../infra/queue/queue.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import { withTraceContext } from '../../infra/tracing/spans.js';
import { AuditService, systemActor, webhookActor } from '../audit/audit.service.js';
import { Coalescer } from '../../common/async/coalescer.js';
import {
  type AcceptedInput,
  type AcceptedRow,
  type ArchiveFilter,
  ERASED_REASON,
  type InboundEvent,
  isRedactedPayload,
  type ReappliedRow,
  type StoredEvent,
  WebhookInboxRepository,
  type WebhookProvider,
} from './webhook-inbox.repository.js';
import { WebhookRefusalsService } from './webhook-refusals.service.js';

export type { InboundEvent, StoredEvent, WebhookProvider } from './webhook-inbox.repository.js';

export type HandlerOutcome = { status: 'processed' } | { status: 'skipped'; reason: string };

/** What the receiver answers: the event is stored and will be applied (accepted), or was stored before. */
export interface Acceptance {
  duplicate: boolean;
  /** The archive row id (absent for a duplicate). */
  id?: string;
}

/**
 * Applies one stored event inside the worker's unit of work (its outbox jobs are pushed after commit). It
 * must converge whatever the order of the provider's events and however late one is applied: an event that
 * failed processing is re-applied automatically for days (WebhookInboxService.reapplyDue), after newer
 * events of the same user or message were applied. A payload it can never apply is refused with a 4xx
 * AppError (never re-applied).
 */
export type StoredEventHandler = (tx: Tx, event: StoredEvent) => Promise<HandlerOutcome>;

/**
 * Runs once before a provider's events of a batch are applied, in the same transaction, right before the
 * first of them (a set-based read or lock for all of them: the billing handler locks and reads all their
 * subscriptions in one statement). What it prepares is the handler's own business.
 */
export type StoredEventsPreparer = (tx: Tx, events: readonly StoredEvent[]) => Promise<void>;

/**
 * The order in which a batch runs its providers' preparers, then their handlers: identity (its preparer
 * locks the identities), billing (subscriptions, then their users' rows), e-mail (no preparer). Two batches
 * then take their up-front locks in the same order whatever order their jobs arrived in: a batch of a
 * billing and an identity event about one user no longer locks the user's row before the identity's lock
 * while another batch holds that lock and waits for the row.
 */
const PROVIDER_ORDER: readonly string[] = ['identity', 'billing', 'email'] satisfies WebhookProvider[];
const providerRank = (provider: string): number => {
  const rank = PROVIDER_ORDER.indexOf(provider);
  return rank === -1 ? PROVIDER_ORDER.length : rank;
};

/**
 * The `data.id` of each event of `batch` whose type is in `types` (a subscription, an identity user): what a
 * provider's preparer locks before the batch's handlers run. An event without one is left out; it fails in
 * its handler, as it would alone.
 */
export function dataIdsOf(batch: readonly StoredEvent[], types: ReadonlySet<string>): string[] {
  const ids: string[] = [];
  for (const stored of batch) {
    if (!types.has(stored.eventType)) continue;
    const id = (stored.payload as { data?: { id?: unknown } } | null)?.data?.id;
    if (typeof id === 'string') ids.push(id);
  }
  return ids;
}

/** How one event of a batch ended (WebhookInboxService.applyBatch). */
type Attempt =
  | { kind: 'applied'; outcome: HandlerOutcome; provider: string }
  | { kind: 'duplicate' }
  | { kind: 'error'; err: unknown; stored: StoredEvent | null };

export interface ApplyResult {
  /** processed / skipped, or `duplicate` when the row was no longer RECEIVED (another job applied it). */
  outcome: 'processed' | 'skipped' | 'duplicate' | 'failed';
}

/** What an applyWebhooks job did: how many of its events ended how (kept as the job's result). */
export type BatchResult = Record<ApplyResult['outcome'], number>;

/** A job as pushed: applyWebhooks' {ids} (an intake group's rows) or processWebhook's {id, provider}. */
interface WebhookJob<T> {
  data: T;
  options: JobsOptions;
}

/** An accepted delivery at intake: its archive row, and the push of its group's job (never rejects). */
interface Intake {
  row: AcceptedRow;
  pushed: Promise<void>;
}

/**
 * Intake statements that share one job (see WebhookInboxService.joinGroup): the statements that start within
 * GROUP_WINDOW_MS of the group's first. Their rows are stamped with the group's id (AcceptedRow.batch).
 */
interface IntakeGroup {
  /** A bigint in decimal, chosen not to meet another's (see nextGroupId): the job is `webhooks-<id>`. */
  id: string;
  /** Whether starting statements may still join (for GROUP_WINDOW_MS). */
  open: boolean;
  /** The group's statements still running; once closed, its job is pushed when the last one has finished. */
  running: number;
  rows: AcceptedRow[];
  /** Settles when the job was pushed, or its push failed (left to the relay), or nothing was accepted. */
  pushed: Promise<void>;
  settle: () => void;
}

/** Older RECEIVED rows than this get their job re-pushed by the relay. */
const RELAY_AFTER_MS = 15_000;
const RELAY_BATCH = 500;
/** Intake statements in flight at once, and deliveries per statement (see Coalescer). */
const INTAKE_IN_FLIGHT = 4;
/**
 * How long a delivery waits for others to share its statement while another intake statement is in flight
 * (see CoalescerOptions.lingerMs). Measured with 16 senders while the worker applies (bench/RESULTS.md,
 * 2026-11-28, decision 15h): 3 ms gave fewer, fuller statements, less CPU per event in the API and
 * PostgreSQL, and the lowest intake p99.
 */
const INTAKE_LINGER_MS = 3;
const INTAKE_BATCH = 64;
/**
 * How long an intake group takes in statements after its first one started (see joinGroup). Measured with
 * 16 senders while the worker applies (bench/RESULTS.md, 2026-12-06, decision 15m), alternated runs: one job
 * per statement, 6.2 events per job, 1.41 ms of machine CPU per event; a group closed when its first statement
 * finished, 8.0 per job, 1.31-1.32 ms; this window, 12.5-13.1 per job, 1.16-1.23 ms; 10 ms, 15.5 per job but
 * each delivery waits that much longer, so 16 senders send less.
 */
const GROUP_WINDOW_MS = 5;
/**
 * Apply transactions in flight at once, events per transaction (see applyBatch), and the gather window: every
 * apply batch that is not full waits up to APPLY_GATHER_MS after its oldest event, even with nothing in
 * flight (CoalescerOptions.lingerWhenIdle). The batch's statements are set-based (decision 15h), so a fuller
 * batch costs the worker and PostgreSQL less per event, and the CPU it leaves goes to the intake on the same
 * machine. Measured on the bench (2026-12-06, decision 15l), same machine and hour: 4 in flight of up to 16
 * with a 25 ms linger only while another was in flight (before): with 16 senders the machine spent 1.35-1.46
 * ms per event and the worker alone applied 2,232-2,427 events/s; gathered batches (1-2 in flight, 128-512
 * events, 50-250 ms): 1.05-1.13 ms and 3,297-4,485/s; this setting: 1.12 ms, 4,485/s. A lone event now waits
 * up to 50 ms (lag p99 at a steady 300 events/s 66 ms, against 36 before; goal 2 s).
 */
const APPLY_IN_FLIGHT = 2;
const APPLY_BATCH = 128;
const APPLY_GATHER_MS = 50;

/** A handler failed: the event it failed on travels with the error (for the refusal record). */
class EventFailed extends Error {
  constructor(
    readonly event: StoredEvent,
    readonly failure: unknown,
  ) {
    super(failure instanceof Error ? failure.message : String(failure));
    this.name = 'EventFailed';
  }
}

/** A second delivery of an event id waits for the next statement, which answers it as the duplicate. */
const notInBatch = (input: AcceptedInput, batch: readonly AcceptedInput[]): boolean =>
  !batch.some((other) => other.provider === input.provider && other.event.eventId === input.event.eventId);

/**
 * The webhook pipeline (issue 15). The receiver verifies, validates and calls accept(): ONE statement claims
 * the event id and archives the payload as RECEIVED (concurrent deliveries share the statement), then the
 * job of the statement's group (the statements started within a few milliseconds) is pushed and the provider
 * gets its 200.
 * The worker's apply() runs the provider's handler in a transaction that also moves the row to PROCESSED or
 * SKIPPED, so a redelivered job finds it done (exactly once); a row the erasure redacted while it waited is
 * SKIPPED (`erased`) without its handler. A failed attempt rolls back and is retried with
 * backoff; after the last attempt, or at once for a payload that can never succeed, the row is FAILED with a
 * `webhook.failed` audit entry and the claim is released, so the provider's redelivery or a replay is
 * accepted again. When the push fails (Redis down) the row itself is the durable record: the relay re-pushes
 * RECEIVED rows that have no job.
 */
@Injectable()
export class WebhookInboxService {
  private readonly logger = new Logger(WebhookInboxService.name);
  private readonly handlers = new Map<
    string,
    { apply: StoredEventHandler; prepare: StoredEventsPreparer | undefined }
  >();
  /**
   * Concurrent deliveries share one intake statement (one commit); a lone delivery goes out at once. The
   * accepted rows of the statements started within a few milliseconds get one job (see joinGroup).
   */
  private readonly intakes = new Coalescer<AcceptedInput, Intake | null>(
    (events) => this.intakeBatch(events),
    {
      maxBatch: INTAKE_BATCH,
      maxInFlight: INTAKE_IN_FLIGHT,
      canJoin: notInBatch,
      lingerMs: INTAKE_LINGER_MS,
    },
  );

  /** The intake group that a starting statement joins (null: the next statement starts a new one). */
  private openGroup: IntakeGroup | null = null;
  private readonly groupPrefix = BigInt(randomInt(1, 2 ** 31)) << 32n;
  private groupCounter = 0;

  /** Concurrent groups share one push of their jobs to Redis (addBulk); a lone one goes at once. */
  private readonly pushes = new Coalescer<WebhookJob<{ ids: string[] }>, void>(
    async (jobs) => {
      await this.queues.addMany(JOBS.applyWebhooks, jobs);
      return jobs.map(() => undefined);
    },
    { maxBatch: INTAKE_BATCH, maxInFlight: INTAKE_IN_FLIGHT },
  );

  /** Concurrent jobs share one apply transaction (one commit), gathered for up to APPLY_GATHER_MS. */
  private readonly applies = new Coalescer<string, Attempt>((ids) => this.applyBatch(ids), {
    maxBatch: APPLY_BATCH,
    maxInFlight: APPLY_IN_FLIGHT,
    lingerMs: APPLY_GATHER_MS,
    lingerWhenIdle: true,
  });

  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly inbox: WebhookInboxRepository,
    private readonly queues: QueueService,
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly refusals: WebhookRefusalsService,
  ) {}

  /**
   * Each provider's module registers how its stored events are applied (in both processes). An event of
   * any provider that failed processing through all its attempts is re-applied automatically later
   * (reapplyDue), so the handler must converge whatever the order and delay (StoredEventHandler).
   */
  register(provider: WebhookProvider, apply: StoredEventHandler, prepare?: StoredEventsPreparer): void {
    this.handlers.set(provider, { apply, prepare });
  }

  /** Intake: one statement, then the push. Throws only when the database refuses the statement. */
  async accept(provider: WebhookProvider, event: InboundEvent): Promise<Acceptance> {
    const accepted = await this.intakes.run({ provider, event });
    if (!accepted) {
      this.metrics.webhookEvents.inc({ provider, outcome: 'duplicate' });
      return { duplicate: true };
    }
    this.metrics.webhookEvents.inc({ provider, outcome: 'accepted' });
    // The provider times out after a few seconds and the row is already durable: wait for the push at
    // most DISPATCH_WAIT_MS (with Redis unreachable it can take the full command timeout).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      accepted.pushed,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, DISPATCH_WAIT_MS))),
    ]);
    clearTimeout(timer);
    return { duplicate: false, id: accepted.row.id };
  }

  /**
   * One intake statement for a batch of deliveries. Its rows go into its group's job (joinGroup), pushed
   * when the group's last statement has finished; each delivery awaits that push (accept). A failed push is
   * logged once for the group and left to the relay.
   */
  private async intakeBatch(events: AcceptedInput[]): Promise<(Intake | null)[]> {
    const group = this.joinGroup();
    let rows: (AcceptedRow | null)[] = [];
    try {
      rows = await this.inbox.intake(events, group.id);
    } finally {
      this.leaveGroup(
        group,
        rows.filter((row): row is AcceptedRow => row !== null),
      );
    }
    return rows.map((row) => row && { row, pushed: group.pushed });
  }

  /**
   * The group a starting intake statement belongs to: the open one, or a new one, open for GROUP_WINDOW_MS.
   * The group's job is pushed once the window has closed and its statements have finished, so a delivery
   * waits for its own statement and at most for the rest of the window and the statements started in it.
   * A job holds at most the deliveries of the statements started in one window (a few hundred at most:
   * INTAKE_IN_FLIGHT statements of INTAKE_BATCH at a time).
   * One job per group instead of one per statement: each job costs the API its share of a push, the worker
   * a fetch, a lock and a completion, and Redis its hash for the 24 h retention (decision 15m).
   */
  private joinGroup(): IntakeGroup {
    let group = this.openGroup;
    if (group) {
      group.running += 1;
    } else {
      let settle!: () => void;
      const pushed = new Promise<void>((resolve) => (settle = resolve));
      const opened: IntakeGroup = {
        id: this.nextGroupId(),
        open: true,
        running: 1,
        rows: [],
        pushed,
        settle,
      };
      this.openGroup = group = opened;
      setTimeout(() => this.closeGroup(opened), GROUP_WINDOW_MS);
    }
    return group;
  }

  /** The window has closed: no more statements join; the job is pushed now if they have all finished. */
  private closeGroup(group: IntakeGroup): void {
    if (!group.open) return;
    group.open = false;
    if (this.openGroup === group) this.openGroup = null;
    if (group.running === 0) this.pushGroup(group);
  }

  /** A statement of the group finished (or failed): the last one, once the group is closed, pushes its job. */
  private leaveGroup(group: IntakeGroup, accepted: readonly AcceptedRow[]): void {
    group.rows.push(...accepted);
    group.running -= 1;
    if (group.running === 0 && !group.open) this.pushGroup(group);
  }

  /** Pushes the group's job (never rejects: a failed push is left to the relay) and settles `pushed`. */
  private pushGroup(group: IntakeGroup): void {
    if (group.rows.length === 0) return group.settle();
    this.pushes
      .run(this.batchJobOf(group))
      .catch((err: Error) =>
        this.logger.warn(
          { ids: group.rows.map((row) => row.id), err: err.message },
          'webhooks accepted; their job will be pushed by the relay',
        ),
      )
      .finally(group.settle);
  }

  /**
   * A new group id: this process's random 31-bit prefix and a counter, so ids of concurrent API processes
   * do not meet (a collision would only delay the rows to the relay: BullMQ ignores a job id it holds).
   * Always at least 2^32: above the transaction ids that named earlier versions' jobs, unless the cluster
   * has run past 2^32 transactions (whose ids then meet these only as rarely as two prefixes do).
   */
  private nextGroupId(): string {
    this.groupCounter = (this.groupCounter + 1) % 2 ** 32;
    return (this.groupPrefix | BigInt(this.groupCounter)).toString();
  }

  /**
   * A verified event whose payload breaks the provider contract, refused at intake with a 4xx: archived
   * FAILED (no claim, so a corrected deployment processes the provider's retry) and audited.
   */
  async refuse(provider: WebhookProvider, event: InboundEvent, err: AppError): Promise<void> {
    this.refusals.refused(provider, { reason: err.code, eventId: event.eventId, detail: err.message });
    this.metrics.webhookEvents.inc({ provider, outcome: 'failed' });
    const message = recordableError(err);
    try {
      await this.prisma.$transaction(async (tx) => {
        if (!(await this.inbox.archiveRefused(tx, provider, event, message))) return;
        await this.auditFailure(tx, provider, event.eventId, event.eventType, message);
      });
    } catch (recordErr) {
      this.logger.error(
        { err: (recordErr as Error).message, provider, event_id: event.eventId },
        'could not record a refused webhook',
      );
    }
  }

  /**
   * Worker: applies one accepted event. `final` is true on the job's last attempt. Concurrent jobs share
   * one transaction (see applyBatch); what follows an attempt (metrics, the outbox push, the failure
   * record or the retry) is this event's own.
   */
  async apply(id: string, final: boolean): Promise<ApplyResult> {
    let attempt: Attempt;
    try {
      attempt = await this.applies.run(id);
    } catch (err) {
      // applyBatch answers every event's failure as its attempt; this is the Coalescer's own failure.
      attempt = { kind: 'error', err, stored: null };
    }
    if (attempt.kind === 'duplicate') return { outcome: 'duplicate' };
    // Counted, and the handler's outbox jobs pushed, when the batch's unit of work committed.
    if (attempt.kind === 'applied') return { outcome: attempt.outcome.status };
    const { err, stored: event } = attempt;
    const hopeless = err instanceof AppError && err.status < 500;
    if (event && hopeless) {
      this.refusals.refused(event.provider as WebhookProvider, {
        reason: (err as AppError).code,
        eventId: event.eventId,
        detail: (err as Error).message,
      });
    }
    if (hopeless || final) {
      // A payload that can never succeed is never re-applied automatically; a processing failure may be.
      if (await this.recordFailure(id, err, !hopeless)) return { outcome: 'failed' };
    } else {
      this.logger.warn({ id, err: fullText(err) }, 'webhook attempt failed; it will be retried');
      await this.inbox.recordAttempt(this.prisma, id, recordableError(err)).catch(() => undefined);
    }
    throw err;
  }

  /**
   * Worker: applies the events of one intake group (an applyWebhooks job). Each event is apply()'d as a
   * job of its own would be (they still share transactions with other jobs' events, see applyBatch). When an
   * event fails on a non-final attempt, the job fails after all its events ran, and BullMQ retries it with
   * backoff: the retry finds the applied ones no longer RECEIVED (duplicates) and applies only the rest.
   */
  async applyMany(ids: readonly string[], final: boolean): Promise<BatchResult> {
    const settled = await Promise.allSettled(ids.map((id) => this.apply(id, final)));
    const result: BatchResult = { processed: 0, skipped: 0, duplicate: 0, failed: 0 };
    let failure: unknown;
    for (const outcome of settled) {
      if (outcome.status === 'fulfilled') result[outcome.value.outcome] += 1;
      else failure ??= outcome.reason;
    }
    if (failure !== undefined) throw failure;
    return result;
  }

  /**
   * Applies a batch of accepted events (issue 15 item 3). A lone event runs in its own transaction. Several
   * share one: their archive rows are locked in one statement, each handler runs in turn, and the PROCESSED
   * outcomes and the audit entries (collected by the unit) are written in one statement each before the
   * single commit. No savepoints: when any event of the batch fails (or the batch's lock or commit), the
   * whole transaction rolls back and every event of the batch is applied again alone, so only the failing
   * one fails and the others' effects are applied once. Failures are rare; a savepoint per event cost two
   * round trips each on every batch.
   */
  private async applyBatch(ids: string[]): Promise<Attempt[]> {
    if (ids.length === 1) return [await this.applyAlone(ids[0])];
    try {
      return await this.applyTogether(ids);
    } catch (err) {
      this.logger.debug(
        { events: ids.length, err: fullText(err) },
        'webhook batch rolled back; applying its events one by one',
      );
      const attempts: Attempt[] = [];
      for (const id of ids) attempts.push(await this.applyAlone(id));
      return attempts;
    }
  }

  /** One event in its own transaction; its failure (with the event, when it was read) is its attempt's. */
  private async applyAlone(id: string): Promise<Attempt> {
    try {
      return (await this.applyTogether([id]))[0];
    } catch (err) {
      if (err instanceof EventFailed) return { kind: 'error', err: err.failure, stored: err.event };
      return { kind: 'error', err, stored: null };
    }
  }

  /**
   * Events in one transaction; throws (and so rolls back) when any of them fails: EventFailed when its
   * handler did. Every provider's preparer runs first, then each provider's events together, providers in
   * PROVIDER_ORDER (within a provider, the order of a batch's events is the order in which their jobs
   * happened to run, so nothing depends on it).
   */
  private applyTogether(ids: string[]): Promise<Attempt[]> {
    return this.uow.run(
      async (tx) => {
        const attempts: Attempt[] = ids.map(() => ({ kind: 'duplicate' }));
        this.countAtCommit(tx, attempts);
        const stored = await this.inbox.lockReceivedMany(tx, ids);
        const byProvider = new Map<string, { index: number; event: StoredEvent }[]>();
        const erased: { index: number; event: StoredEvent }[] = [];
        ids.forEach((id, index) => {
          const event = stored.get(id);
          // The same id twice in one batch (a stalled job running again) is applied once.
          stored.delete(id);
          if (!event) return;
          if (isRedactedPayload(event.payload)) {
            // Scrubbed by an erasure while it waited: about the erased user, nothing left to apply. SKIPPED,
            // not FAILED: no `webhook.failed`, and a replay would find the same redaction.
            erased.push({ index, event });
            return;
          }
          const group = byProvider.get(event.provider);
          if (group) group.push({ index, event });
          else byProvider.set(event.provider, [{ index, event }]);
        });
        const processed: string[] = [];
        for (const { index, event } of erased) {
          const outcome: HandlerOutcome = { status: 'skipped', reason: ERASED_REASON };
          await this.inbox.markSkipped(tx, event.id, outcome.reason);
          attempts[index] = { kind: 'applied', outcome, provider: event.provider };
        }
        // Every provider's preparer first, then the handlers, both in PROVIDER_ORDER: each batch takes its
        // up-front locks (identities, then subscriptions and their users) in one global order before any
        // handler locks more, whatever order its jobs arrived in.
        const groups = [...byProvider].sort(([a], [b]) => providerRank(a) - providerRank(b));
        const handlers = groups.map(([provider, group]) => {
          const handler = this.handlers.get(provider);
          if (!handler) throw new Error(`no webhook handler registered for provider ${provider}`);
          return { handler, group };
        });
        for (const { handler, group } of handlers) {
          await handler
            .prepare?.(
              tx,
              group.map(({ event }) => event),
            )
            .catch((err: unknown) => {
              throw new EventFailed(group[0].event, err);
            });
        }
        for (const { handler, group } of handlers) {
          for (const { index, event } of group) {
            const outcome = await handler.apply(tx, event).catch((err: unknown) => {
              throw new EventFailed(event, err);
            });
            // A SKIPPED outcome is written at once: a later event of the batch may look for it (a parked
            // event is replayed when its subscription arrives). PROCESSED ones are written together below.
            if (outcome.status === 'processed') processed.push(event.id);
            else await this.inbox.markSkipped(tx, event.id, outcome.reason);
            attempts[index] = { kind: 'applied', outcome, provider: event.provider };
          }
        }
        await this.inbox.markProcessedMany(tx, processed);
        return attempts;
      },
      { collectWrites: true },
    );
  }

  /**
   * The applied outcomes in `attempts` (filled in as the events run) are counted once the unit has
   * committed, before it pushes the handlers' outbox jobs (registered first, so run first). Nothing is
   * counted for a rolled-back unit.
   */
  private countAtCommit(tx: Tx, attempts: readonly Attempt[]): void {
    Unit.of(tx).afterCommit(async () => {
      for (const attempt of attempts) {
        if (attempt.kind === 'applied') {
          this.metrics.webhookEvents.inc({ provider: attempt.provider, outcome: attempt.outcome.status });
        }
      }
    });
  }

  /**
   * An operator's replay of one archived event, applied now in this process with the same handler and
   * exactly-once rules. A PROCESSED event is a conflict (`already_processed`), and so is a RECEIVED one
   * (`still_processing`): the worker holds it, or a concurrent replay has just reopened it.
   */
  async replay(
    id: string,
    actor: string,
  ): Promise<{ id: string; status: string; outcome: ApplyResult['outcome'] }> {
    const before = await this.prisma.$transaction(async (tx) => {
      const status = await this.inbox.reopen(tx, id);
      if (status === null) throw new NotFoundError('No such webhook event.', 'not_found');
      if (status === 'PROCESSED') {
        throw new ConflictError(
          'This event was processed already; it cannot be replayed.',
          'already_processed',
        );
      }
      // RECEIVED: the worker has it (waiting, or between retries). Running it here would spend its last
      // attempt now (FAILED after 3 of WEBHOOK_PROCESS_ATTEMPTS) and a later bulk replay would start a
      // second retry chain beside the one still scheduled.
      if (status === 'RECEIVED') {
        throw new ConflictError(
          'This event is waiting for the worker or between its retries; replay runs FAILED or SKIPPED events.',
          'still_processing',
        );
      }
      const row = await this.inbox.find(tx, id);
      await this.audit.record(tx, {
        actor,
        action: 'webhook.replayed',
        resourceType: 'webhook_event',
        resourceId: row!.eventId,
        details: {
          provider: row!.provider,
          event_id: row!.eventId,
          event_type: row!.eventType,
          previous_status: status,
        },
      });
      return status;
    });
    let outcome: ApplyResult['outcome'];
    try {
      outcome = (await this.apply(id, true)).outcome;
    } catch {
      // apply() recorded the failure (FAILED + webhook.failed) when it could.
      outcome = 'failed';
    }
    const after = await this.inbox.find(this.prisma, id);
    this.logger.log({ id, previous_status: before, outcome }, 'webhook replayed');
    return { id, status: after?.status ?? 'RECEIVED', outcome };
  }

  /** Bulk replay: the matching rows become RECEIVED and the worker applies them; returns how many. */
  async replayMany(filter: ArchiveFilter & { status: 'FAILED' | 'SKIPPED' }, actor: string): Promise<number> {
    const rows = await this.inbox.reopenMany(this.prisma, filter);
    // The rows are durable, the relay pushes what fails here.
    await this.pushReopened(rows);
    await this.audit.recordStandalone({
      actor,
      action: 'webhook.replayed',
      resourceType: 'webhook_event',
      resourceId: null,
      details: {
        status: filter.status,
        provider: filter.provider ?? null,
        count: rows.length,
        source: 'bulk',
      },
    });
    return rows.length;
  }

  /**
   * Pushes a job of its own for every RECEIVED row older than `olderThanMs` that has no live job: neither
   * its intake group's job (one look per group) nor an earlier job of the row alone. A job that is
   * done (completed, or failed without its failure record because the database was down) does not count.
   */
  async relay(olderThanMs = RELAY_AFTER_MS): Promise<number> {
    const rows = await this.inbox.stale(this.prisma, olderThanMs, RELAY_BATCH);
    const queue = this.queues.queue(JOBS.processWebhook.queue);
    const done = (state: string) => state === 'failed' || state === 'completed';
    const batchLive = new Map<string, boolean>();
    let pushed = 0;
    for (const row of rows) {
      if (row.batch !== null) {
        let live = batchLive.get(row.batch);
        if (live === undefined) {
          const state = await queue.getJobState(batchJobIdOf(row.batch));
          live = state !== 'unknown' && !done(state);
          batchLive.set(row.batch, live);
        }
        if (live) continue;
      }
      const job = await queue.getJob(jobIdOf(row));
      if (job) {
        if (!done(await job.getState())) continue;
        await job.remove();
      }
      await this.push(row);
      pushed += 1;
    }
    if (pushed > 0) this.logger.log({ pushed }, 'webhook relay pushed jobs for accepted events');
    return pushed;
  }

  /**
   * The automatic re-apply (release 0.2: "converge on the provider's truth by itself"): FAILED events of
   * every provider whose failure was a processing failure (not a refused payload) are reopened when their
   * `retry_at` has come (REAPPLY_DELAYS_HOURS after each failure, at most that many times) and applied by
   * the worker through the exactly-once path of an operator's bulk replay, with the whole retry chain.
   * Each is audited `webhook.replayed` (actor `system:webhook-reapply`, `source` `automatic`, `count` =
   * which re-apply) and counted (`webhook_events_total{outcome="reapplied"}`). Run by the relay; `now` is
   * its clock (tests pass a later one). Returns how many were reopened.
   */
  async reapplyDue(now: Date = new Date(), limit = RELAY_BATCH): Promise<number> {
    const rows = await this.prisma.$transaction(async (tx) => {
      const reopened = await this.inbox.reopenDue(tx, now, limit);
      for (const row of reopened) await this.auditReapply(tx, row);
      return reopened;
    });
    if (rows.length === 0) return 0;
    for (const row of rows) this.metrics.webhookEvents.inc({ provider: row.provider, outcome: 'reapplied' });
    this.logger.log(
      { events: rows.map((row) => ({ event_id: row.eventId, reapply: row.reapply })) },
      'failed webhook events re-applied automatically',
    );
    await this.pushReopened(rows);
    return rows.length;
  }

  private auditReapply(tx: Tx, row: ReappliedRow): Promise<void> {
    return this.audit.record(tx, {
      actor: systemActor('webhook-reapply'),
      action: 'webhook.replayed',
      resourceType: 'webhook_event',
      resourceId: row.eventId,
      details: {
        provider: row.provider,
        event_id: row.eventId,
        event_type: row.eventType,
        previous_status: 'FAILED',
        source: 'automatic',
        count: row.reapply,
      },
    });
  }

  /** Jobs for reopened rows, a round trip to Redis per RELAY_BATCH; the relay pushes what fails here. */
  private async pushReopened(rows: readonly AcceptedRow[]): Promise<void> {
    for (let start = 0; start < rows.length; start += RELAY_BATCH) {
      const chunk = rows.slice(start, start + RELAY_BATCH);
      await this.queues
        .addMany(
          JOBS.processWebhook,
          chunk.map((row) => this.jobOf(row)),
        )
        .catch((err: Error) =>
          this.logger.warn(
            { events: chunk.length, err: err.message },
            'replay queued; its jobs will be pushed by the relay',
          ),
        );
    }
  }

  private async push(row: AcceptedRow): Promise<void> {
    await this.queues.addMany(JOBS.processWebhook, [this.jobOf(row)]);
  }

  /** The row's own job, with the trace of the caller (taken now: a shared push runs in another's context). */
  private jobOf(row: AcceptedRow): WebhookJob<{ id: string; provider: string }> {
    return {
      data: { id: row.id, provider: row.provider },
      options: withTraceContext({ jobId: jobIdOf(row), ...this.retries() }),
    };
  }

  /**
   * The job of an intake group's rows. It continues the trace of the delivery whose statement opened the
   * group (the window's timer runs in its context) or finished last; the others' requests are not its parents.
   */
  private batchJobOf(group: IntakeGroup): WebhookJob<{ ids: string[] }> {
    return {
      data: { ids: group.rows.map((row) => row.id) },
      options: withTraceContext({ jobId: batchJobIdOf(group.id), ...this.retries() }),
    };
  }

  private retries(): Pick<JobsOptions, 'attempts' | 'backoff'> {
    const { attempts, retryBaseMs } = this.config.webhookProcessing;
    return { attempts, backoff: { type: 'exponential', delay: retryBaseMs } };
  }

  /**
   * FAILED, the claim released and `webhook.failed` audited, in one transaction; false when another job
   * applied the event meanwhile or the database is unreachable (the relay retries then). A `retryable`
   * failure (a processing failure, not a refused payload) gets its automatic re-apply time (reapplyDue).
   */
  private async recordFailure(id: string, err: unknown, retryable: boolean): Promise<boolean> {
    const message = recordableError(err);
    try {
      const recorded = await this.prisma.$transaction(async (tx) => {
        const event = await this.inbox.markFailed(tx, id, message, retryable);
        if (!event) return null;
        await this.auditFailure(
          tx,
          event.provider as WebhookProvider,
          event.eventId,
          event.eventType,
          message,
        );
        return event;
      });
      if (!recorded) return false;
      this.metrics.webhookEvents.inc({ provider: recorded.provider, outcome: 'failed' });
      if (recorded.retryAt) {
        this.logger.warn(
          {
            provider: recorded.provider,
            event_id: recorded.eventId,
            retry_at: recorded.retryAt.toISOString(),
            reapplies: recorded.autoReapplies,
            err: fullText(err),
          },
          'webhook event failed; it will be re-applied automatically',
        );
      } else {
        this.logger.warn(
          { provider: recorded.provider, event_id: recorded.eventId, err: fullText(err) },
          'webhook event failed for good; replayable',
        );
      }
      return true;
    } catch (recordErr) {
      this.logger.error({ err: (recordErr as Error).message, id }, 'could not record webhook failure');
      return false;
    }
  }

  private auditFailure(
    tx: Tx,
    provider: WebhookProvider,
    eventId: string,
    eventType: string,
    message: string,
  ): Promise<void> {
    return this.audit.record(tx, {
      actor: webhookActor(provider),
      action: 'webhook.failed',
      resourceType: 'webhook_event',
      resourceId: eventId,
      details: { provider, event_id: eventId, event_type: eventType, error: message },
    });
  }
}

/**
 * One job per acceptance of an archive row: a row accepted again after it FAILED (the provider's
 * redelivery, a replay) gets a new received_at and so a new job, while the relay's re-push of the same
 * acceptance is deduplicated by BullMQ. Job ids may not contain ':'.
 */
export const jobIdOf = (row: AcceptedRow): string => `webhook-${row.id}-${row.receivedAt.getTime()}`;

/**
 * The job of the rows one intake group accepted, named after the group's id (see
 * WebhookInboxService.nextGroupId): the relay finds it from any of its rows (AcceptedRow.batch).
 */
export const batchJobIdOf = (batch: string): string => `webhooks-${batch}`;

/** The whole error for the log line (the failure record keeps only recordableError's text, issue 14 item 8). */
const fullText = (err: unknown): string =>
  err instanceof Error ? `${err.name}: ${err.message}` : String(err);
