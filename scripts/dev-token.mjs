// `npm run -s dev:token -- <email> [--sub user_x] [--ttl 3600]`: an RS256 access token signed with the
// development key that `npm start` created and serves as its JWKS. Only the token goes to stdout, so
//   TOKEN=$(npm run -s dev:token -- ada@example.com)
//   curl -H "Authorization: Bearer $TOKEN" http://localhost:3000/api/v1/me
// works; notes go to stderr. The API creates the user on first use when the token carries an e-mail.
import { parseArgs } from 'node:util';
import { loadDotEnv } from './lib/env.mjs';
import { DEMO_ADMIN, devSubjectFor, readDevSigningKey, signDevToken } from './local/identity.mjs';

const USAGE = 'usage: npm run -s dev:token -- <email> [--sub <subject>] [--ttl <seconds>]';

function fail(message) {
  process.stderr.write(`dev-token: ${message}\n`);
  process.exit(1);
}

async function main() {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        sub: { type: 'string' },
        ttl: { type: 'string', default: '3600' },
        help: { type: 'boolean' },
      },
    });
  } catch (error) {
    fail(`${error.message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stderr.write(`${USAGE}\n`);
    return;
  }
  if (positionals.length !== 1 || !/^[^\s@]+@[^\s@]+$/.test(positionals[0]))
    fail(`one e-mail address expected\n${USAGE}`);
  const email = positionals[0].trim();
  const ttl = Number(values.ttl);
  if (!Number.isInteger(ttl) || ttl <= 0)
    fail(`--ttl: expected a positive number of seconds, got "${values.ttl}"`);

  // Same .env as `npm start` (first: it may move the key with LOCAL_DATA_DIR), so an audience or
  // authorized parties configured there are honoured.
  loadDotEnv();
  const key = await readDevSigningKey().catch((error) => fail(error.message));
  if (!key) fail('no development signing key yet: run `npm start` once (it creates .data/dev-identity/)');

  const env = (name) => process.env[name]?.trim() || undefined;
  const subject = values.sub ?? devSubjectFor(email);
  const signed = await signDevToken(key, { email, subject, ttl });

  process.stdout.write(`${signed}\n`);
  const admin = email.toLowerCase() === DEMO_ADMIN.email ? ' (the seeded demo admin)' : '';
  process.stderr.write(
    `dev-token: sub ${subject}${admin}, email ${email}, valid ${ttl} s. ` +
      'The real identity provider issues 60 s tokens: use --ttl 60 to exercise expiry.\n',
  );
  if (env('IDENTITY_JWKS_URL')) {
    process.stderr.write(
      "dev-token: IDENTITY_JWKS_URL is set, so the API verifies another provider's keys and will refuse this token.\n",
    );
  }
}

main().catch((error) => fail(error.message));
