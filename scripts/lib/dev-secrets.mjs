// The development defaults of src/config/env.ts that the scripts need (a test keeps them equal). Public on
// purpose: a deployed boot refuses them.
export const DEV_BILLING_WEBHOOK_SECRET = 'dev-billing-webhook-secret-not-for-production';
