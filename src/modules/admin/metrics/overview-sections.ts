import type {
  CreditDayDto,
  CreditsSectionDto,
  PackSalesDto,
  AcquisitionWindowDto,
  LeadMagnetSectionDto,
  MailingSectionDto,
  MrrCurrencyDto,
  RevenueSectionDto,
} from './dto/metrics-overview.dto.js';
import type { CreditDayRow, PackSalesRow } from './credit-metrics.repository.js';
import type {
  BroadcastRunRow,
  DeliverabilityDayRow,
  EmailCountsRow,
  UnsubscribedRow,
} from './mailing-metrics.repository.js';
import { ratio, topWithOther } from './metric-windows.js';
import { monthlyAmount } from './mrr.js';
import type { MoneyRow, SubscriptionGroupRow } from './revenue-metrics.repository.js';
import type { LeadMagnetRow, LiveUsersRow, SignupSourceRow } from './user-metrics.repository.js';

/** Statuses that bring money every month. TRIALING has paid nothing yet; PAUSED and CANCELED bill nothing. */
const MRR_STATUSES = new Set(['ACTIVE', 'PAST_DUE']);
export const TOP_SOURCES = 10;

const add = (map: Record<string, number>, key: string, value: number) => {
  map[key] = (map[key] ?? 0) + value;
};
const roundAll = (map: Record<string, number>) =>
  Object.fromEntries(Object.entries(map).map(([k, v]) => [k, Math.round(v)]));

export function revenueSection(
  groups: SubscriptionGroupRow[],
  money: MoneyRow[],
): Omit<RevenueSectionDto, 'packs'> {
  const statuses: Record<string, number> = { active: 0, trialing: 0, past_due: 0, paused: 0, canceled: 0 };
  const mrr: Record<string, MrrCurrencyDto> = {};
  const churnedMrr: Record<string, number> = {};
  let unpriced = 0;
  let churned = 0;

  for (const g of groups) {
    add(statuses, g.status.toLowerCase(), g.subscriptions);
    churned += g.churned;
    const churnedMonthly =
      g.churned_amount !== null && g.currency
        ? monthlyAmount(g.churned_amount, g.interval, g.frequency)
        : null;
    if (churnedMonthly !== null) add(churnedMrr, g.currency!, churnedMonthly);

    if (!MRR_STATUSES.has(g.status) || g.expired) continue;
    const monthly = g.amount !== null && g.currency ? monthlyAmount(g.amount, g.interval, g.frequency) : null;
    if (monthly === null) {
      unpriced += g.subscriptions;
      continue;
    }
    unpriced += g.subscriptions - g.priced;
    const cur = (mrr[g.currency!] ??= { total: 0, active: 0, past_due: 0, subscriptions: 0, by_tier: {} });
    cur.total += monthly;
    if (g.status === 'ACTIVE') cur.active += monthly;
    else cur.past_due += monthly;
    cur.subscriptions += g.priced;
    const tier = (cur.by_tier[g.tier] ??= { amount: 0, subscriptions: 0 });
    tier.amount += monthly;
    tier.subscriptions += g.priced;
  }

  // Sums stay exact until here; each reported figure is rounded once (so parts may differ from the
  // total by a minor unit).
  for (const cur of Object.values(mrr)) {
    cur.total = Math.round(cur.total);
    cur.active = Math.round(cur.active);
    cur.past_due = Math.round(cur.past_due);
    for (const tier of Object.values(cur.by_tier)) tier.amount = Math.round(tier.amount);
  }

  const revenue: Record<string, { amount: number; count: number }> = {};
  const refunds: Record<string, { amount: number; count: number }> = {};
  const net: Record<string, number> = {};
  for (const row of money) {
    (row.kind === 'payment' ? revenue : refunds)[row.currency] = { amount: row.amount, count: row.count };
    add(net, row.currency, row.kind === 'payment' ? row.amount : -row.amount);
  }

  const total = Object.values(statuses).reduce((sum, n) => sum + n, 0);
  return {
    amounts_in: 'minor_units',
    mrr,
    unpriced_subscriptions: unpriced,
    subscriptions: {
      active: statuses.active,
      trialing: statuses.trialing,
      past_due: statuses.past_due,
      paused: statuses.paused,
      canceled: statuses.canceled,
      total,
    },
    last_30_days: { revenue, refunds, net, churned, churned_mrr: roundAll(churnedMrr) },
  };
}

export function mailingSection(
  emails: EmailCountsRow,
  unsubscribed: UnsubscribedRow,
  consent: Pick<LiveUsersRow, 'users' | 'consented'>,
  broadcast: BroadcastRunRow | null,
  deliverability: { days: DeliverabilityDayRow[]; suppressed: number } = { days: [], suppressed: 0 },
): MailingSectionDto {
  return {
    deliverability_by_day: deliverability.days,
    suppressed_addresses: deliverability.suppressed,
    last_7_days: {
      sent: emails.sent_7d,
      failed: emails.failed_7d,
      skipped: emails.skipped_7d,
      unsubscribed: unsubscribed.unsubscribed_7d,
    },
    last_30_days: {
      sent: emails.sent_30d,
      failed: emails.failed_30d,
      skipped: emails.skipped_30d,
      unsubscribed: unsubscribed.unsubscribed_30d,
    },
    consent_rate: ratio(consent.consented, consent.users),
    consent: { consented: consent.consented, users: consent.users },
    last_broadcast: broadcast && {
      id: broadcast.id,
      status: broadcast.status,
      template_key: broadcast.template_key,
      kind: broadcast.kind,
      created_at: broadcast.created_at.toISOString(),
      started_at: broadcast.started_at?.toISOString() ?? null,
      finished_at: broadcast.finished_at?.toISOString() ?? null,
      counts: {
        recipients: broadcast.recipients_total,
        sent: broadcast.sent_count,
        failed: broadcast.failed_count,
        skipped: broadcast.skipped_count,
      },
    },
  };
}

export function acquisitionWindow(rows: SignupSourceRow[], window: '7d' | '30d'): AcquisitionWindowDto {
  const signups = rows.reduce((sum, r) => sum + r[`signups_${window}`], 0);
  const disposable = rows.reduce((sum, r) => sum + r[`disposable_${window}`], 0);
  const ranked = topWithOther(
    rows.map((r) => ({ key: r.source, count: r[`signups_${window}`] })),
    TOP_SOURCES,
  );
  return {
    signups,
    disposable,
    disposable_share: ratio(disposable, signups),
    by_utm_source: ranked.map((r) => ({ source: r.key, signups: r.count })),
  };
}

/** `entries` are the configured [name, prefix] pairs in the order the rows' idx refers to (1-based). */
export function leadMagnetSection(entries: [string, string][], rows: LeadMagnetRow[]): LeadMagnetSectionDto {
  const byIdx = new Map(rows.map((r) => [r.idx, r]));
  const numbers = (row: LeadMagnetRow | undefined) => {
    const signups = row?.signups ?? 0;
    const paid = row?.paid_conversions ?? 0;
    return {
      signups,
      signups_30d: row?.signups_30d ?? 0,
      paid_conversions: paid,
      conversion_rate: ratio(paid, signups),
    };
  };
  return {
    ...numbers(byIdx.get(0)),
    by_prefix: Object.fromEntries(
      entries.map(([name, prefix], i) => [name, { prefix, ...numbers(byIdx.get(i + 1)) }]),
    ),
  };
}

/** Ledger sums per day as the dashboard reads them: every figure positive (credits in or out). */
export function creditsSection(rows: CreditDayRow[]): CreditsSectionDto {
  const days = new Map<string, CreditDayDto>();
  const total = { granted: 0, purchased: 0, spent: 0, expired: 0, clawed_back: 0 };
  for (const row of rows) {
    const day = days.get(row.day) ?? {
      date: row.day,
      granted: 0,
      purchased: 0,
      spent: 0,
      expired: 0,
      clawed_back: 0,
    };
    days.set(row.day, day);
    const field = creditField(row.kind);
    if (!field) continue;
    // Spends are negative and settles/refunds positive: their sum, negated, is what was really spent.
    const value = field === 'granted' || field === 'purchased' ? row.credits : -row.credits;
    day[field] += value;
    total[field] += value;
  }
  return { last_30_days: total, by_day: [...days.values()].sort((a, b) => a.date.localeCompare(b.date)) };
}

function creditField(kind: string): keyof Omit<CreditDayDto, 'date'> | null {
  switch (kind) {
    case 'grant':
      return 'granted';
    case 'purchase':
      return 'purchased';
    case 'spend':
    case 'settle':
    case 'refund':
      return 'spent';
    case 'expiry':
      return 'expired';
    case 'clawback':
      return 'clawed_back';
    default:
      return null;
  }
}

export function packsSection(rows: PackSalesRow[]): PackSalesDto {
  const revenue: Record<string, number> = {};
  let sold = 0;
  let credits = 0;
  for (const row of rows) {
    sold += row.sold;
    credits += row.credits;
    add(revenue, row.currency, row.amount);
  }
  return { sold, credits, revenue: roundAll(revenue) };
}
