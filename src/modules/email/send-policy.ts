import type { EmailKind } from './email.types.js';

/** Why a message is not sent (recorded as `email.skipped` with this reason). */
export type SkipReason =
  'no_consent' | 'user_deleted' | 'disposable_address' | 'user_not_found' | 'suppressed';

/** What the policy reads of a recipient (a user row or a broadcast's audience member). */
export interface PolicyRecipient {
  deletedAt: Date | null;
  emailDisposable: boolean;
  marketingConsentGiven: boolean;
}

export interface SendContext {
  kind: EmailKind;
  /**
   * Mass mail (a broadcast) honours marketing consent whatever the template kind, unless
   * `bypassConsent` (transactional templates only: the 409 rule) lets a notice reach everyone.
   */
  broadcast?: boolean;
  bypassConsent?: boolean;
}

/**
 * THE send policy, for one transactional e-mail and for every broadcast recipient alike: never to an
 * unknown or soft-deleted user, never to a suppressed address (a permanent bounce, a complaint, an
 * operator's entry: whatever the kind, consent or bypass), and marketing (or mass) mail only with
 * consent and never to a disposable address. Null when the message may go out.
 */
export function skipReason(
  user: PolicyRecipient | null,
  context: SendContext,
  suppressed: boolean,
): SkipReason | null {
  if (!user) return 'user_not_found';
  if (user.deletedAt) return 'user_deleted';
  if (suppressed) return 'suppressed';
  const needsConsent =
    context.kind === 'marketing' || (context.broadcast === true && context.bypassConsent !== true);
  if (!needsConsent) return null;
  if (user.emailDisposable) return 'disposable_address';
  if (!user.marketingConsentGiven) return 'no_consent';
  return null;
}

/** Suppression list entries are compared lower-cased and trimmed. */
export const normalizeAddress = (address: string): string => address.trim().toLowerCase();

const MAX_ADDRESS = 320;

/**
 * What the suppression list holds and an operator can remove (DELETE /admin/email/suppressions/{email}):
 * a non-empty string of at most 320 characters with an `@` and no NUL. A provider event naming anything
 * else suppresses nothing (no message can be sent to it), and the entry could never be removed.
 */
export const isSuppressibleAddress = (address: string): boolean =>
  address.length > 0 && address.length <= MAX_ADDRESS && address.includes('@') && !address.includes('\0');
