/**
 * Every queue and job name lives here. The worker refuses to boot when a job listed here has no
 * handler (JobRegistry), so a job cannot be enqueued into a void.
 */
export const QUEUES = {
  email: 'email',
  broadcasts: 'broadcasts',
  credits: 'credits',
  billing: 'billing',
  users: 'users',
  maintenance: 'maintenance',
  webhooks: 'webhooks',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

export const JOBS = {
  /** One templated e-mail to one user (payload SendEmailJob in modules/email/email.types.ts). */
  sendEmail: { queue: QUEUES.email, name: 'send-email' },
  /** Refresh the disposable-address blocklist from DISPOSABLE_DOMAINS_URL (daily 03:00 UTC). */
  refreshBlocklist: { queue: QUEUES.email, name: 'refresh-blocklist' },
  /** Send one broadcast run (payload {runId}); resumable, job id `broadcast-<run id>`. */
  dispatchBroadcast: { queue: QUEUES.broadcasts, name: 'dispatch-broadcast' },
  /** Every minute: re-enqueue queued/running broadcast runs whose job Redis lost (modules/broadcasts). */
  sweepBroadcasts: { queue: QUEUES.broadcasts, name: 'sweep-broadcasts' },
  /** Post-signup extension hooks of a new user (welcome e-mail, disposable check, ...). */
  postSignup: { queue: QUEUES.users, name: 'post-signup' },
  /** A user asked for deletion (soft delete committed): runs the `deletion_requested` user hooks. */
  accountDeletionRequested: { queue: QUEUES.users, name: 'account-deletion-requested' },
  /** Daily 04:00 UTC: hard-deletes accounts soft-deleted for the grace period or longer. */
  hardDeleteAccounts: { queue: QUEUES.users, name: 'hard-delete-accounts' },
  /** The identity provider changed a user's e-mail: runs the `email_changed` user hooks. */
  emailChanged: { queue: QUEUES.users, name: 'email-changed' },
  /**
   * Apply the webhooks one intake group accepted (the intake statements started within a few milliseconds;
   * payload {ids}: archive row ids; job id `webhooks-<intake_batch>`, the group's id). A failing event fails
   * the job, whose retry applies only what is still RECEIVED.
   */
  applyWebhooks: { queue: QUEUES.webhooks, name: 'apply-webhooks' },
  /**
   * Apply one webhook archive row: a replay's or the relay's (payload {id, provider}; job id
   * `webhook-<archive row id>-<received_at ms>`).
   */
  processWebhook: { queue: QUEUES.webhooks, name: 'process-webhook' },
  /**
   * Every 10 s: give every RECEIVED webhook older than 15 s a job (its push failed: Redis was down), and
   * reopen the FAILED ones due for an automatic re-apply (WebhookInboxService.reapplyDue).
   */
  relayWebhooks: { queue: QUEUES.webhooks, name: 'relay-webhooks' },
  /** Every 10 s: re-push outbox entries whose after-commit push failed (Redis was down). */
  relayOutbox: { queue: QUEUES.maintenance, name: 'relay-outbox' },
  /** Hourly: downgrade CANCELED subscriptions past their period end; apply tier changes that came due. */
  expireSubscriptions: { queue: QUEUES.billing, name: 'expire-subscriptions' },
  /** Every minute a tick; every BILLING_BACKFILL_INTERVAL_MINUTES a run: the provider's event log fed through the inbox. */
  billingBackfill: { queue: QUEUES.billing, name: 'billing-backfill' },
  /** Hourly: subscriptions that should have renewed, or stayed past_due/paused a week, are read back from the provider. */
  checkBillingDrift: { queue: QUEUES.billing, name: 'check-billing-drift' },
  /** Hourly: the monthly credit allowance of annual (multi-month) periods on each monthly anniversary. */
  grantAllowances: { queue: QUEUES.billing, name: 'grant-allowances' },
  /**
   * A dunning e-mail (payment_failed / payment_recovered / subscription_ended) of a subscription's past-due
   * episode; job id = its e-mail idempotency key. payment_failed reads the update-payment link from the
   * billing API when the event had none.
   */
  dunningEmail: { queue: QUEUES.billing, name: 'dunning-email' },
  /** Daily: delete webhook archive rows past retention (all providers; one table). */
  pruneWebhookArchive: { queue: QUEUES.billing, name: 'prune-webhook-archive' },
  /** Refund metered-call reservations orphaned for 5 minutes (every 60 s; modules/credits). */
  reconcileCredits: { queue: QUEUES.credits, name: 'reconcile-credits' },
} as const;

export type JobKey = keyof typeof JOBS;
export type JobDef = (typeof JOBS)[JobKey];

/** How a tick's job id is stamped: replicas firing in the same minute/hour/day produce one job. */
export type Dedupe = 'minute' | 'hour' | 'day';

export interface Schedule {
  /** Six fields (with seconds). */
  cron: string;
  timeZone: 'UTC';
  dedupe: Dedupe;
}

/**
 * The scheduled jobs, as data: JobScheduler registers one cron per row (it only enqueues, with a job id
 * stamped per `dedupe`), each processor records the runs of these jobs in job_runs, and admin stats lists
 * every one of them, also before its first run. A new scheduled job is a row here and an `@OnJob` method.
 */
export const SCHEDULES = {
  reconcileCredits: { cron: '0 * * * * *', timeZone: 'UTC', dedupe: 'minute' },
  expireSubscriptions: { cron: '0 5 * * * *', timeZone: 'UTC', dedupe: 'hour' },
  billingBackfill: { cron: '15 * * * * *', timeZone: 'UTC', dedupe: 'minute' },
  checkBillingDrift: { cron: '0 20 * * * *', timeZone: 'UTC', dedupe: 'hour' },
  grantAllowances: { cron: '0 10 * * * *', timeZone: 'UTC', dedupe: 'hour' },
  pruneWebhookArchive: { cron: '0 30 2 * * *', timeZone: 'UTC', dedupe: 'day' },
  refreshBlocklist: { cron: '0 0 3 * * *', timeZone: 'UTC', dedupe: 'day' },
  hardDeleteAccounts: { cron: '0 0 4 * * *', timeZone: 'UTC', dedupe: 'day' },
  sweepBroadcasts: { cron: '30 * * * * *', timeZone: 'UTC', dedupe: 'minute' },
} as const satisfies Partial<Record<JobKey, Schedule>>;

export type ScheduledJobKey = keyof typeof SCHEDULES;

/**
 * Plumbing on a fixed period (every `everyMs`, job id stamped per period): the relays that re-push what a
 * Redis outage lost. Reported through their backlogs, not as scheduled jobs.
 */
export const INTERVALS = {
  relayOutbox: { everyMs: 10_000 },
  relayWebhooks: { everyMs: 10_000 },
} as const satisfies Partial<Record<JobKey, { everyMs: number }>>;

export type IntervalJobKey = keyof typeof INTERVALS;

/** Every scheduled job: its job name (the job_runs key) and its cron expression. */
export const scheduledJobs = (): { name: string; schedule: string }[] =>
  (Object.keys(SCHEDULES) as ScheduledJobKey[]).map((key) => ({
    name: JOBS[key].name,
    schedule: SCHEDULES[key].cron,
  }));

export const isScheduledJob = (job: JobDef): boolean =>
  (Object.keys(SCHEDULES) as JobKey[]).some(
    (key) => JOBS[key].name === job.name && JOBS[key].queue === job.queue,
  );

/** Job results are kept 24 h (spec); failed jobs a week for inspection. */
export const DEFAULT_JOB_OPTIONS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 2000 },
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: { age: 7 * 24 * 3600 },
} as const;

/** BullMQ job ids may not contain ':'; cron ticks get deterministic ids so replicas dedupe. */
export function tickJobId(job: JobDef, at: Date, granularity: Dedupe = 'minute'): string {
  const iso = at.toISOString();
  const stamp =
    granularity === 'day' ? iso.slice(0, 10) : granularity === 'hour' ? iso.slice(0, 13) : iso.slice(0, 16);
  return `${job.name}-${stamp.replace(/[-T:]/g, '')}`;
}
