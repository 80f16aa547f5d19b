import { parser } from '@prometheus-io/lezer-promql';
import type { AppConfig } from '../../src/config/app-config.js';
import type { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import type { QueueService } from '../../src/infra/queue/queue.service.js';

/** Series Prometheus itself writes for every scrape target (not exported by the service). */
export const PROMETHEUS_SERIES = ['up'];

/**
 * Every series name the service exports, read from the same MetricsService both processes serve on
 * /metrics (application metrics and prom-client's process/Node.js defaults). Nothing is collected: the
 * names come from the declarations, so the stores are never touched.
 */
export function exportedSeriesNames(): Set<string> {
  const config = { project: { projectSlug: 'subscription-service' } } as AppConfig;
  const metrics = new MetricsService(config, {} as QueueService, {} as PrismaService);
  const names = new Set<string>();
  for (const metric of metrics.registry.getMetricsAsArray()) {
    const { name, type } = metric as unknown as { name: string; type: string };
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) names.add(name + suffix);
    else names.add(name);
  }
  return names;
}

/** Application metrics (declared in metrics.service.ts), without prom-client's defaults. */
export function applicationMetricNames(): string[] {
  return [...exportedSeriesNames()].filter((n) => !/^(process_|nodejs_)/.test(n));
}

/** Grafana's built-in interval variables, replaced so the expression parses as plain PromQL. */
const GRAFANA_VARIABLES: Record<string, string> = {
  $__rate_interval: '5m',
  $__interval: '1m',
  $__range: '1h',
};

export interface ParsedExpr {
  /** Metric names of every vector selector in the expression. */
  metrics: string[];
  /** Text of the nodes the parser could not make sense of (empty for a valid expression). */
  errors: string[];
}

/** Parses a PromQL expression with Prometheus' own grammar (the one its web UI uses). */
export function parsePromql(expr: string): ParsedExpr {
  const text = expr.replace(/\$__\w+/g, (v) => GRAFANA_VARIABLES[v] ?? v);
  const cursor = parser.parse(text).cursor();
  const metrics: string[] = [];
  const errors: string[] = [];
  do {
    if (cursor.type.isError)
      errors.push(`error at ${cursor.from}: "${text.slice(cursor.from, cursor.to + 10)}"`);
    if (cursor.name === 'VectorSelector') {
      const selector = cursor.node;
      const name = selector.getChild('Identifier');
      if (name) metrics.push(text.slice(name.from, name.to));
    }
  } while (cursor.next());
  return { metrics, errors };
}
