/**
 * `npx @redocly/cli lint openapi.json` with the recommended rules (redocly.yaml names and justifies the
 * one rule turned off): 0 errors and 0 warnings. A copy with a defect shows the lint really runs.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from '@jest/globals';

const ROOT = join(import.meta.dirname, '..', '..');
const REDOCLY = join(ROOT, 'node_modules', '.bin', 'redocly');
const scratch = mkdtempSync(join(tmpdir(), 'openapi-lint-'));

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; severity: string; message: string }[];
}

async function lint(file: string): Promise<LintReport> {
  // redocly exits 1 when it finds errors; the JSON report is on stdout either way.
  const { stdout } = await promisify(execFile)(
    REDOCLY,
    ['lint', file, '--format=json', `--config=${join(ROOT, 'redocly.yaml')}`],
    { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 },
  ).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  return JSON.parse(stdout) as LintReport;
}

describe('redocly lint (recommended rules)', () => {
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('reports no error and no warning on openapi.json', async () => {
    const report = await lint('openapi.json');
    expect(report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
  }, 60_000);

  it('flags an operation without a summary and a nullable keyword (the lint is live)', async () => {
    const document = JSON.parse(readFileSync(join(ROOT, 'openapi.json'), 'utf8'));
    delete document.paths['/api/v1/me'].get.summary;
    document.components.schemas.MeResponseDto.properties.locale.nullable = true;
    const broken = join(scratch, 'broken.json');
    writeFileSync(broken, JSON.stringify(document));
    const report = await lint(broken);
    expect(report.problems.map((p) => p.ruleId).sort()).toEqual(['operation-summary', 'struct']);
  }, 60_000);
});
