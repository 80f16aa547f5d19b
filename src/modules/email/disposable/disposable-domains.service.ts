import { Injectable, Logger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { AppConfig } from '../../../config/app-config.js';
import { HttpClient } from '../../../infra/http/http-client.js';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import { BLOCKLIST_LIMITS, BlocklistError, domainCandidates, parseBlocklist } from './blocklist.js';
import { DisposableDomainsRepository } from './disposable-domains.repository.js';

const PACKAGE = 'disposable-email-domains-js';

export interface RefreshOutcome {
  /** `updated`: replaced from the URL; `not_configured`: no URL, the shipped list stays active. */
  status: 'updated' | 'not_configured';
  source: string;
  count: number;
  previous: number;
}

/** The list shipped with the project: the maintained npm package's JSON (its JS entry is not needed). */
export function shippedBlocklist(): { domains: string[]; source: string } {
  const require = createRequire(import.meta.url);
  const version = (require(`${PACKAGE}/package.json`) as { version: string }).version;
  const file = require.resolve(`${PACKAGE}/dist/dict/disposable_email_blocklist.json`);
  return {
    domains: parseBlocklist(JSON.parse(readFileSync(file, 'utf8'))),
    source: `package:${PACKAGE}@${version}`,
  };
}

/**
 * The disposable-address blocklist. The active list lives in PostgreSQL (disposable_domains) so every
 * process shares it; it is seeded from the shipped package and refreshed daily from
 * DISPOSABLE_DOMAINS_URL, a URL fixed in configuration. A refresh that fails, or whose answer does not
 * look like a blocklist, keeps the old list.
 */
@Injectable()
export class DisposableDomainsService {
  private readonly logger = new Logger(DisposableDomainsService.name);
  private seeded: Promise<void> | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly http: HttpClient,
    private readonly repository: DisposableDomainsRepository,
  ) {}

  async isDisposable(email: string): Promise<boolean> {
    await this.ensureSeeded();
    return this.repository.anyOf(this.prisma, domainCandidates(email));
  }

  /** Marks a user's address as disposable: no marketing mail, and counted apart in acquisition numbers. */
  flagUser(userId: string, disposable = true): Promise<void> {
    return this.repository.flagUser(this.prisma, userId, disposable);
  }

  /** Seeds an empty table from the shipped list (first start of a fresh database). */
  ensureSeeded(): Promise<void> {
    this.seeded ??= (async () => {
      if ((await this.repository.count(this.prisma)) > 0) return;
      const shipped = shippedBlocklist();
      await this.prisma.$transaction(async (tx) => {
        await this.repository.lock(tx);
        if ((await this.repository.count(tx)) > 0) return;
        await this.repository.replaceAll(tx, shipped.domains, shipped.source);
      });
      this.logger.log(
        { count: shipped.domains.length, source: shipped.source },
        'disposable-domain list seeded',
      );
    })().catch((err: unknown) => {
      this.seeded = null;
      throw err;
    });
    return this.seeded;
  }

  /** The daily job. Throws BlocklistError (job recorded as failed) when the old list had to be kept. */
  async refresh(): Promise<RefreshOutcome> {
    const url = this.config.email.disposableListUrl;
    if (!url) return this.syncShipped();

    const previous = await this.repository.count(this.prisma);
    let domains: string[];
    try {
      const response = await this.http.request({
        method: 'GET',
        url,
        provider: 'blocklist',
        headers: { accept: 'text/plain, application/json;q=0.9' },
        // Up to 1,000,000 domains with comments: far above the default answer size, still bounded.
        maxResponseBytes: 64 * 1024 * 1024,
      });
      domains = parseBlocklist(response.body);
    } catch (err) {
      const reason =
        err instanceof BlocklistError ? err.message : `download failed: ${(err as Error).message}`;
      this.logger.warn({ reason }, 'disposable-domain refresh failed; the old list stays active');
      throw new BlocklistError(reason);
    }
    const source = `url:${new URL(url).host}`;
    // A shrink is judged against the last list from the same source: a truncated download looks like
    // one. A list from another source (the shipped package before the first download: 8,883 domains,
    // against some 5,000 upstream) is no yardstick, or switching to the URL would be refused forever.
    const current = await this.repository.anySource(this.prisma);
    if (
      current === source &&
      previous > 0 &&
      domains.length < previous * BLOCKLIST_LIMITS.minShareOfCurrent
    ) {
      const reason = `the new list has ${domains.length} domains against ${previous} active; refusing a shrink that large`;
      this.logger.warn({ reason }, 'disposable-domain refresh refused; the old list stays active');
      throw new BlocklistError(reason);
    }
    await this.prisma.$transaction(async (tx) => {
      await this.repository.lock(tx);
      await this.repository.replaceAll(tx, domains, source);
    });
    this.logger.log({ count: domains.length, previous, source }, 'disposable-domain list refreshed');
    return { status: 'updated', source, count: domains.length, previous };
  }

  /**
   * Without a URL the shipped package is the source of truth: an empty table is seeded, and a table
   * written by an older package version is brought up to the installed one. A list that came from a
   * URL earlier is left alone (the URL was unset on purpose or by mistake; we do not downgrade).
   */
  private async syncShipped(): Promise<RefreshOutcome> {
    const shipped = shippedBlocklist();
    const previous = await this.repository.count(this.prisma);
    const current = await this.repository.anySource(this.prisma);
    if (current === null || (current.startsWith('package:') && current !== shipped.source)) {
      await this.prisma.$transaction(async (tx) => {
        await this.repository.lock(tx);
        await this.repository.replaceAll(tx, shipped.domains, shipped.source);
      });
      return { status: 'not_configured', source: shipped.source, count: shipped.domains.length, previous };
    }
    return { status: 'not_configured', source: current, count: previous, previous };
  }
}
