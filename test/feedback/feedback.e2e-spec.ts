import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ApiApp, TestEnv } from '../support/test-env.js';

describe('POST /api/v1/feedback', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
  });
  afterAll(() => env.close());

  const send = async (body: object, sub = 'user_fb') =>
    api.http
      .post('/api/v1/feedback')
      .set('Authorization', await api.bearer(sub, `${sub}@example.com`))
      .send(body);

  it('stores the feedback under the caller and answers 201', async () => {
    const res = await send({ message: '  Love the export!  ', rating: 5, page: '/settings/account' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      message: 'Love the export!',
      rating: 5,
      page: '/settings/account',
      created_at: expect.any(String),
    });
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_fb' } });
    const row = await api.prisma.feedback.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row).toMatchObject({ userId: user.id, message: 'Love the export!', rating: 5 });
    expect(
      await api.prisma.auditLog.count({ where: { action: 'feedback.created', resourceId: res.body.id } }),
    ).toBe(1);
  });

  it('accepts a message alone (rating and page optional)', async () => {
    const res = await send({ message: 'x'.repeat(5000) });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ rating: null, page: null });
  });

  it.each([
    ['no message', {}],
    ['an empty message', { message: '' }],
    ['a blank message', { message: '   ' }],
    ['a message over 5000 characters', { message: 'x'.repeat(5001) }],
    ['rating 0', { message: 'ok', rating: 0 }],
    ['rating 6', { message: 'ok', rating: 6 }],
    ['a fractional rating', { message: 'ok', rating: 4.5 }],
    ['a page over 500 characters', { message: 'ok', page: 'p'.repeat(501) }],
    ['an owner in the body', { message: 'ok', user_id: '00000000-0000-0000-0000-000000000000' }],
  ])('refuses %s with 400', async (_label, body) => {
    const before = await api.prisma.feedback.count();
    const res = await send(body, 'user_fb_invalid');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(await api.prisma.feedback.count()).toBe(before);
  });

  it('requires authentication', async () => {
    const res = await api.http.post('/api/v1/feedback').send({ message: 'anonymous' });
    expect(res.status).toBe(401);
  });
});
