import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/processes.js';
import { applicationMetricNames, exportedSeriesNames, parsePromql } from './promql.js';

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: string; uid: string };
  targets?: { refId: string; expr: string; datasource?: { uid: string } }[];
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  title: string;
  templating: { list: { name: string; type: string; query: string }[] };
  panels: Panel[];
}

const dashboard = JSON.parse(
  readFileSync(join(ROOT, 'docs/observability/grafana-dashboard.json'), 'utf8'),
) as Dashboard;
const allPanels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const graphs = allPanels.filter((p) => p.type !== 'row');

describe('Grafana dashboard (docs/observability/grafana-dashboard.json)', () => {
  it('queries only series the service exports, in expressions Prometheus parses', () => {
    const exported = exportedSeriesNames();
    const problems: string[] = [];
    for (const panel of graphs) {
      if (!panel.targets?.length) problems.push(`${panel.title}: no query`);
      for (const target of panel.targets ?? []) {
        const { metrics, errors } = parsePromql(target.expr);
        for (const error of errors) problems.push(`${panel.title} ${target.refId}: ${error}`);
        if (metrics.length === 0) problems.push(`${panel.title} ${target.refId}: names no metric`);
        for (const name of metrics)
          if (!exported.has(name)) problems.push(`${panel.title} ${target.refId}: ${name} is not exported`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('shows every application metric on some panel', () => {
    const shown = new Set(
      graphs.flatMap((p) => (p.targets ?? []).flatMap((t) => parsePromql(t.expr).metrics)),
    );
    expect(applicationMetricNames().filter((name) => !shown.has(name))).toEqual([]);
  });

  it('reads from the Prometheus data source picked on import, never a fixed one', () => {
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }),
    );
    for (const panel of graphs) {
      expect({ panel: panel.title, uid: panel.datasource?.uid }).toEqual({
        panel: panel.title,
        uid: '${datasource}',
      });
      for (const target of panel.targets ?? []) expect(target.datasource?.uid).toBe('${datasource}');
    }
  });

  it('has unique panel ids and panels that fit the 24-column grid without overlapping', () => {
    const ids = allPanels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const taken = new Set<string>();
    const overlaps: string[] = [];
    for (const panel of allPanels) {
      const { x, y, w, h } = panel.gridPos;
      expect({ panel: panel.title, fits: x >= 0 && w > 0 && x + w <= 24 && h > 0 }).toEqual({
        panel: panel.title,
        fits: true,
      });
      for (let cx = x; cx < x + w; cx++)
        for (let cy = y; cy < y + h; cy++) {
          if (taken.has(`${cx},${cy}`)) overlaps.push(panel.title);
          taken.add(`${cx},${cy}`);
        }
    }
    expect([...new Set(overlaps)]).toEqual([]);
  });
});
