import { FakeBillingApi } from '../fakes/billing-api.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { PostgresTlsProxy } from '../fakes/postgres-tls.js';
import { FakeVectorStore } from '../fakes/vector-store.js';
import { TEST_SECRETS, type TestEnv } from './test-env.js';

/**
 * Everything a real process needs to pass every deployed boot refusal against a TestEnv's stores and the
 * local fakes: PostgreSQL through TLS (sslmode=verify-full), the resend provider, a billing API URL, an
 * identity provider with an audience, https CORS origins and distinct secrets. Boot tests start from
 * `vars` and change one setting to see one refusal.
 */
export class DeployedWorld {
  private constructor(
    readonly vars: Record<string, string>,
    readonly store: FakeVectorStore,
    readonly postgres: PostgresTlsProxy,
    readonly email: FakeEmailApi,
    readonly billing: FakeBillingApi,
  ) {}

  static async start(env: TestEnv, audience = 'https://api.example.com'): Promise<DeployedWorld> {
    const [store, postgres, email, billing] = await Promise.all([
      FakeVectorStore.start(),
      PostgresTlsProxy.start(env.config.database.url),
      FakeEmailApi.start(),
      FakeBillingApi.start(),
    ]);
    const vars = {
      APP_ENV: 'production',
      LOG_LEVEL: 'warn',
      COMPANY_LEGAL_NAME: 'Acme Software GmbH',
      CORS_ORIGINS: 'https://app.example.com',
      PUBLIC_BASE_URL: 'https://api.example.com',
      DATABASE_URL: postgres.url(env.config.database.url),
      REDIS_URL: env.config.redis.url,
      REDIS_KEY_PREFIX: env.config.redis.keyPrefix,
      VECTOR_STORE_URL: store.url,
      IDENTITY_JWKS_URL: env.idp.jwksUrl,
      IDENTITY_ISSUER: env.idp.issuer,
      IDENTITY_AUDIENCE: audience,
      EMAIL_PROVIDER: 'resend',
      EMAIL_API_URL: email.url,
      EMAIL_API_KEY: 're_test_key_for_deployed_boots',
      BILLING_API_URL: billing.url,
      BILLING_API_KEY: 'pdl_test_key_for_deployed_boots',
      ...TEST_SECRETS,
    };
    return new DeployedWorld(vars, store, postgres, email, billing);
  }

  async close(): Promise<void> {
    await Promise.all([this.store.close(), this.postgres.close(), this.email.close(), this.billing.close()]);
  }
}
