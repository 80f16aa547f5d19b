import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { Clock } from './clock.js';
import type { MetricsOverviewDto } from './dto/metrics-overview.dto.js';
import { MailingMetricsRepository } from './mailing-metrics.repository.js';
import { ratio, windowsEndingAt } from './metric-windows.js';
import { CreditMetricsRepository } from './credit-metrics.repository.js';
import {
  acquisitionWindow,
  creditsSection,
  leadMagnetSection,
  mailingSection,
  packsSection,
  revenueSection,
} from './overview-sections.js';
import { RevenueMetricsRepository } from './revenue-metrics.repository.js';
import { UserMetricsRepository } from './user-metrics.repository.js';

/**
 * The admin dashboard in one response. `now` is read once; every query gets the window bounds as
 * parameters and the queries run in parallel (each is one index range scan or one small table pass).
 */
@Injectable()
export class MetricsOverviewService {
  constructor(
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly revenue: RevenueMetricsRepository,
    private readonly mailing: MailingMetricsRepository,
    private readonly users: UserMetricsRepository,
    private readonly credits: CreditMetricsRepository,
  ) {}

  async overview(): Promise<MetricsOverviewDto> {
    const w = windowsEndingAt(this.clock.now());
    const leadMagnets = Object.entries(this.config.project.leadMagnetPrefixes);
    const [
      groups,
      money,
      emails,
      unsubscribed,
      broadcast,
      live,
      sources,
      leads,
      creditDays,
      packs,
      days,
      suppressed,
    ] = await Promise.all([
      this.revenue.subscriptionGroups(w),
      this.revenue.moneyLast30Days(w),
      this.mailing.emailCounts(w),
      this.mailing.unsubscribed(w),
      this.mailing.lastBroadcast(w),
      this.users.liveUsers(w),
      this.users.signupsBySource(w),
      leadMagnets.length > 0
        ? this.users.leadMagnets(
            w,
            leadMagnets.map(([, prefix]) => prefix),
          )
        : Promise.resolve([]),
      this.credits.creditsByDay(w),
      this.credits.packSales(w),
      this.mailing.deliverabilityByDay(w),
      this.mailing.suppressedAddresses(),
    ]);
    return {
      generated_at: w.now.toISOString(),
      revenue: { ...revenueSection(groups, money), packs: packsSection(packs) },
      mailing: mailingSection(emails, unsubscribed, live, broadcast, { days, suppressed }),
      activity: { dau: live.dau, wau: live.wau, mau: live.mau, dau_mau_ratio: ratio(live.dau, live.mau) },
      acquisition: {
        last_7_days: acquisitionWindow(sources, '7d'),
        last_30_days: acquisitionWindow(sources, '30d'),
      },
      lead_magnet: leadMagnetSection(leadMagnets, leads),
      credits: creditsSection(creditDays),
    };
  }
}
