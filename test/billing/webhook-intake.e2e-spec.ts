import { createUser } from '../factories/user.factory.js';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import { paddleSignature } from '../../src/modules/billing/intake/paddle-signature.js';
import { WebhookRefusalsService } from '../../src/modules/webhooks/webhook-refusals.service.js';
import {
  checkoutToken,
  deliver,
  lookups,
  newSubId,
  signatureFor,
  subscriptionEvent,
} from '../support/billing.js';
import { type ApiApp, TEST_SECRETS, TestEnv } from '../support/test-env.js';

describe('billing webhooks: signature, envelope and payload validation', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    // Accepted webhooks are applied by the worker.
    await env.startWorker();
  });
  afterAll(() => env.close());

  const { archived, audits } = lookups(() => api);

  describe('signature', () => {
    const event = () => subscriptionEvent({ type: 'subscription.updated', subId: newSubId() });

    const expectRefused = async (
      res: { status: number; body: unknown; headers: Record<string, string> },
      eventId: string,
    ) => {
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 401, code: 'invalid_signature' });
      expect(await archived(eventId)).toBeNull();
      expect(await api.prisma.processedWebhookEvent.count({ where: { eventId } })).toBe(0);
    };

    it('refuses a missing, malformed, wrong-secret or tampered signature and stores nothing', async () => {
      const e = event();
      const raw = JSON.stringify(e);
      await expectRefused(
        await api.http.post('/webhooks/billing').set('Content-Type', 'application/json').send(raw),
        e.event_id,
      );
      await expectRefused(await deliver(api, e, { signature: 'garbage' }), e.event_id);
      await expectRefused(
        await deliver(api, e, { signature: `ts=${Math.floor(Date.now() / 1000)};h1=zz` }),
        e.event_id,
      );
      await expectRefused(
        await deliver(api, e, {
          signature: signatureFor(raw, { secret: 'another-secret-of-enough-length-000000' }),
        }),
        e.event_id,
      );
      // Signed for one body, delivered with another.
      const tampered = JSON.stringify({ ...e, event_type: 'subscription.canceled' });
      await expectRefused(
        await deliver(api, e, { rawBody: tampered, signature: signatureFor(raw) }),
        e.event_id,
      );
    });

    it('refuses a signature older or newer than five minutes', async () => {
      const e = event();
      const raw = JSON.stringify(e);
      // Whole seconds just outside the window whatever the fraction of the current second and the time the
      // delivery takes (under a second): floored for the past, rounded up for the future.
      await expectRefused(
        await deliver(api, e, { signature: signatureFor(raw, { ts: Math.floor(Date.now() / 1000) - 301 }) }),
        e.event_id,
      );
      await expectRefused(
        await deliver(api, e, { signature: signatureFor(raw, { ts: Math.ceil(Date.now() / 1000) + 301 }) }),
        e.event_id,
      );
    });

    it('accepts any one valid h1 among several (secret rotation)', async () => {
      const e = event();
      const raw = JSON.stringify(e);
      const res = await deliver(api, e, {
        signature: signatureFor(raw, { extra: ['0'.repeat(64), 'ab'.repeat(32)] }),
      });
      expect(res.status).toBe(200);
      // Verified but for an unknown subscription: archived and skipped.
      expect(res.outcome).toBe('skipped');
    });
  });

  it('answers 400 to a verified but invalid payload, archives it FAILED and lets a retry through', async () => {
    const user = await createUser(api.prisma);
    const e = subscriptionEvent({
      type: 'subscription.created',
      subId: newSubId(),
      token: checkoutToken(api, user),
    });
    const broken = { ...e, data: { ...e.data, items: [] } };
    const res = await deliver(api, broken);
    expect(res.status).toBe(400);
    // The identity and e-mail receivers' shape: the code, and the schema's complaints per field.
    expect(res.body).toMatchObject({ code: 'invalid_payload', errors: [{ field: 'items' }] });
    // Not lost: the raw payload is archived FAILED with the validation error, and audited, so an operator
    // can fix the schema; the id is not claimed, so the provider's retry (any non-2xx) is processed then.
    expect(await archived(e.event_id)).toMatchObject({
      status: 'FAILED',
      error: expect.stringContaining('items'),
      payload: broken,
      processedAt: null,
    });
    const [failure] = await audits('webhook.failed', e.event_id);
    expect(failure.details).toMatchObject({
      provider: 'billing',
      event_type: 'subscription.created',
      error: expect.stringContaining('does not match the provider contract'),
    });
    expect(await audits('webhook.failed', e.event_id)).toHaveLength(1);
    expect(await api.prisma.processedWebhookEvent.count({ where: { eventId: e.event_id } })).toBe(0);

    // The same holds for an envelope field checked in the handler (occurred_at).
    const badTime = { ...subscriptionEvent({ type: 'subscription.updated', subId: newSubId() }) };
    badTime.occurred_at = 'yesterday';
    expect((await deliver(api, badTime)).status).toBe(400);
    expect(await archived(badTime.event_id)).toMatchObject({
      status: 'FAILED',
      error: expect.stringContaining('occurred_at'),
    });
    expect(await audits('webhook.failed', badTime.event_id)).toHaveLength(1);

    // A signed body that is not JSON, or JSON without an event id, cannot be keyed or archived: it leaves a
    // webhook.failed audit entry with the body's SHA-256 and a warning with the reason (issue 13 item 8).
    const garbage = await deliver(api, {}, { rawBody: 'not json' });
    expect(garbage.status).toBe(400);
    const unkeyedBody = JSON.stringify({ event_type: 'subscription.created', data: {} });
    const unkeyed = await deliver(api, {}, { rawBody: unkeyedBody });
    expect(unkeyed.status).toBe(400);
    expect(unkeyed.body).toMatchObject({ code: 'invalid_payload' });
    for (const [body, reason] of [
      ['not json', 'not_json'],
      [unkeyedBody, 'no_event_id'],
    ]) {
      const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
      const entries = await audits('webhook.failed', digest);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ actor: 'webhook:billing' });
      expect(entries[0].details).toEqual({
        provider: 'billing',
        reason,
        body_digest: digest,
        event_id: null,
      });
      expect(env.logs.lines.some((line) => line.includes(`billing webhook refused: ${reason}`))).toBe(true);
    }

    // Same event id, corrected body (e.g. after a schema fix): processed once.
    expect((await deliver(api, e)).outcome).toBe('processed');
    expect(await archived(e.event_id)).toMatchObject({ status: 'PROCESSED', attempts: 2 });
  });

  it('audits the refusal of a signed body whose event id cannot be stored, under an escaped id', async () => {
    const refusalLines = (eventId: string) =>
      env.logs.lines
        .map((line) => JSON.parse(line) as { msg?: string; event_id?: string })
        .filter((line) => line.msg?.startsWith('billing webhook refused') && line.event_id === eventId);
    // The trace keeps the first 200 UTF-16 units of an id, one fewer rather than half an emoji: 199 ASCII
    // characters and 😀 are traced as the 199 (they were traced with an escaped `\ud83d`), whether the
    // envelope is refused for its event type or the id is over the envelope's 200 characters.
    const ascii199 = (c: string) => `evt_${c.repeat(195)}`;
    const cases: [string, string, string, string][] = [
      ['"evt_\\u0000nul"', 'evt_\\u0000nul', 'unstorable', 'subscription.created'],
      ['"evt_\\ud800lone"', 'evt_\\ud800lone', 'unstorable', 'subscription.created'],
      [JSON.stringify(`${ascii199('x')}😀`), ascii199('x'), 'invalid_envelope', ''],
      [
        JSON.stringify(`${ascii199('z')}😀${'y'.repeat(100)}`),
        ascii199('z'),
        'invalid_envelope',
        'subscription.created',
      ],
    ];
    for (const [idJson, stored, reason, eventType] of cases) {
      const body = `{"event_id":${idJson},"event_type":"${eventType}","occurred_at":"${new Date().toISOString()}","data":{}}`;
      const res = await deliver(api, {}, { rawBody: body });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_payload' });
      const entries = await audits('webhook.failed', stored);
      expect({ idJson, entries: entries.length }).toEqual({ idJson, entries: 1 });
      expect(entries[0].details).toEqual({
        provider: 'billing',
        reason,
        body_digest: `sha256:${createHash('sha256').update(body).digest('hex')}`,
        event_id: stored,
      });
      expect(refusalLines(stored)).toHaveLength(1);
    }
    expect(env.logs.lines.some((line) => line.includes('could not audit a refused webhook delivery'))).toBe(
      false,
    );
  });

  it('refuses a signed body that is not valid UTF-8 instead of archiving U+FFFD in place of its bytes', async () => {
    const event = subscriptionEvent({ type: 'subscription.updated', subId: newSubId() });
    // A Latin-1 "é" (0xE9) inside a string: valid JSON bytes, invalid UTF-8.
    const json = JSON.stringify(event);
    const at = json.indexOf('"USD"') + 3;
    const body = Buffer.concat([
      Buffer.from(json.slice(0, at)),
      Buffer.from([0xe9]),
      Buffer.from(json.slice(at)),
    ]);
    const ts = Math.floor(Date.now() / 1000);
    const h1 = paddleSignature(TEST_SECRETS.BILLING_WEBHOOK_SECRET, ts, body);
    const res = await api.http
      .post('/webhooks/billing')
      .set('Content-Type', 'application/json')
      .set('Paddle-Signature', `ts=${ts};h1=${h1}`)
      // As bytes: superagent would serialize a Buffer under a JSON content type.
      .serialize((bytes: unknown) => bytes as string)
      .send(body as unknown as string);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_payload', detail: expect.stringContaining('UTF-8') });
    expect(await api.prisma.webhookEvent.count({ where: { eventId: event.event_id } })).toBe(0);
    const [entry, ...more] = await audits('webhook.failed', event.event_id);
    expect(more).toHaveLength(0);
    expect(entry.details).toMatchObject({ reason: 'unstorable' });
  });

  it('audits every provider’s refusal whatever its event id holds (identity and e-mail share the service)', async () => {
    const refusals = api.app.get(WebhookRefusalsService);
    for (const provider of ['billing', 'identity', 'email'] as const) {
      const body = Buffer.from(`${provider} body`);
      await refusals.unarchivable(provider, {
        reason: 'unstorable',
        body,
        eventId: `msg_${provider}_\u0000\udc00`,
        detail: 'detail with \u0000 and \ud800',
      });
      const [entry, ...more] = await audits('webhook.failed', `msg_${provider}_\\u0000\\udc00`);
      expect(more).toHaveLength(0);
      expect(entry).toMatchObject({ actor: `webhook:${provider}`, resourceType: 'webhook_event' });
      expect(entry.details).toMatchObject({
        provider,
        event_id: `msg_${provider}_\\u0000\\udc00`,
        body_digest: `sha256:${createHash('sha256').update(body).digest('hex')}`,
      });
    }
    expect(env.logs.lines.some((line) => line.includes('could not audit a refused webhook delivery'))).toBe(
      false,
    );
  });

  it('counts every refused delivery by provider and reason, and logs the reason at warn', async () => {
    const metrics = api.app.get(MetricsService);
    const count = async (reason: string) =>
      (await metrics.webhookRefusals.get()).values.find(
        (v) => v.labels.provider === 'billing' && v.labels.reason === reason,
      )?.value ?? 0;
    const before = {
      signature: await count('invalid_signature'),
      payload: await count('invalid_payload'),
      json: await count('not_json'),
    };
    const e = subscriptionEvent({ type: 'subscription.updated', subId: newSubId() });
    await deliver(api, e, { signature: 'garbage' });
    await deliver(api, e, { signature: 'garbage' });
    await deliver(api, { ...e, data: { ...e.data, items: [] } });
    await deliver(api, {}, { rawBody: '{' });
    expect(await count('invalid_signature')).toBe(before.signature + 2);
    expect(await count('invalid_payload')).toBe(before.payload + 1);
    expect(await count('not_json')).toBe(before.json + 1);
    expect(env.logs.lines.some((l) => l.includes('billing webhook refused: invalid_signature'))).toBe(true);
    expect(env.logs.lines.some((l) => l.includes('billing webhook refused: invalid_payload'))).toBe(true);
    // An unsigned delivery is counted and logged, never audited (anyone could flood the audit log).
    expect(await audits('webhook.failed', e.event_id)).toHaveLength(1);
  });

  it('acknowledges event types it does not handle', async () => {
    const e = {
      event_id: 'evt_customer_1',
      event_type: 'customer.updated',
      occurred_at: new Date().toISOString(),
      data: { id: 'ctm_1' },
    };
    expect((await deliver(api, e)).outcome).toBe('skipped');
    expect(await archived('evt_customer_1')).toMatchObject({
      status: 'SKIPPED',
      error: 'unhandled_event_type',
    });
  });
});
