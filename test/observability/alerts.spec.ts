import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from '../support/processes.js';
import { applicationMetricNames, exportedSeriesNames, parsePromql, PROMETHEUS_SERIES } from './promql.js';

const ALERTS = join(ROOT, 'docs/observability/alerts.yml');
const PROMETHEUS_CONFIG = join(ROOT, 'docs/observability/prometheus.yml');
const RULE_TESTS = join(ROOT, 'test/observability/alerts.promtool.yml');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules = (): Rule[] =>
  (parse(readFileSync(ALERTS, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

/** promtool comes with Debian's `prometheus` package (.ci/run installs it when it is missing). */
function promtool(...args: string[]): { status: number | null; output: string } {
  const probe = spawnSync('promtool', ['--version']);
  if (probe.error)
    throw new Error(
      'promtool is missing: `apt-get install prometheus` (Debian), or run `.ci/run`, which does',
    );
  const run = spawnSync('promtool', args, { cwd: ROOT, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('Prometheus alert rules (docs/observability/alerts.yml)', () => {
  it('pass `promtool check rules`', () => {
    const run = promtool('check', 'rules', ALERTS);
    expect({ status: run.status, output: run.output }).toEqual({
      status: 0,
      output: expect.stringContaining('SUCCESS'),
    });
  });

  it('fire as their unit tests say (`promtool test rules`)', () => {
    const run = promtool('test', 'rules', RULE_TESTS);
    expect({ status: run.status, output: run.output }).toEqual({
      status: 0,
      output: expect.stringContaining('SUCCESS'),
    });
  });

  it('load from the example scrape configuration (`promtool check config`)', () => {
    const run = promtool('check', 'config', PROMETHEUS_CONFIG);
    expect({ status: run.status, output: run.output }).toEqual({
      status: 0,
      output: expect.stringContaining('SUCCESS'),
    });
  });

  it('only name series the service exports', () => {
    const exported = exportedSeriesNames();
    const unknown: string[] = [];
    for (const rule of rules()) {
      const { metrics, errors } = parsePromql(rule.expr);
      expect({ rule: rule.alert, errors }).toEqual({ rule: rule.alert, errors: [] });
      expect({ rule: rule.alert, metrics: metrics.length > 0 }).toEqual({ rule: rule.alert, metrics: true });
      for (const name of metrics)
        if (!exported.has(name) && !PROMETHEUS_SERIES.includes(name)) unknown.push(`${rule.alert}: ${name}`);
    }
    expect(unknown).toEqual([]);
  });

  it('give every alert a severity, a summary, a description and a runbook section that exists', () => {
    const operations = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
    const decisions = readFileSync(join(ROOT, 'docs/decisions.md'), 'utf8');
    const anchors = (markdown: string) =>
      [...markdown.matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      );
    const sections: Record<string, string[]> = {
      'docs/operations.md': anchors(operations),
      'docs/decisions.md': anchors(decisions),
    };
    for (const rule of rules()) {
      expect(rule.alert).toMatch(/^Subscription[A-Z]\w+$/);
      expect(['critical', 'warning', 'info']).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary).toBeTruthy();
      expect(rule.annotations?.description).toBeTruthy();
      const [file, anchor] = (rule.annotations?.runbook ?? '').split('#');
      expect({ alert: rule.alert, runbook: sections[file]?.includes(anchor) }).toEqual({
        alert: rule.alert,
        runbook: true,
      });
    }
  });

  it('watch every application metric the service exports', () => {
    const watched = new Set(rules().flatMap((r) => parsePromql(r.expr).metrics));
    // Counters whose rate the dashboard shows but no alert needs: request counts are read through the
    // 5xx ratio, latency through the histogram.
    const dashboardOnly = [
      'outbox_pending',
      'http_request_duration_seconds_sum',
      'http_request_duration_seconds_count',
      'webhook_events_total',
      // The suppression list moves with the bounce and complaint rates, which alert.
      'email_suppressions_total',
      'email_unsuppressions_total',
      'email_suppressed_skips_total',
      // A caught-up tick is already repaired; what made it late (Redis or the worker down) alerts on its own.
      'scheduled_ticks_caught_up_total',
    ];
    const unwatched = applicationMetricNames().filter((n) => !watched.has(n) && !dashboardOnly.includes(n));
    expect(unwatched).toEqual([]);
  });
});
