/**
 * Every `code` a problem+json answer can carry, under the HTTP status it is answered with: the one list the
 * error classes (app-error.ts) accept a code from and the OpenAPI document (`ApiErrors`, app/openapi.ts)
 * names codes from. A code a route throws or documents must be here, under the status it goes with: the
 * compiler refuses anything else, and test/openapi checks the document against this list.
 *
 * Frontends branch on these codes (openapi.json lists, per route and status, the ones it can answer):
 * never rename one; add new ones.
 */
export const ERROR_CODES = {
  400: [
    'validation_failed',
    'bad_request',
    'invalid_payload',
    'max_tokens_exceeded',
    'invalid_idempotency_key',
    'completion_rejected',
    'unknown_template',
    'template_needs_data',
    'unknown_credit_pack',
    'invalid_unsubscribe_token',
    'invalid_confirmation_token',
  ],
  401: [
    'unauthenticated',
    'invalid_token',
    'token_expired',
    'unknown_user',
    'invalid_api_key',
    'auth_not_configured',
    'invalid_signature',
    // The queue dashboard's own gate (outside the API and its document).
    'invalid_ticket',
    'dashboard_session_required',
  ],
  402: ['insufficient_credits'],
  403: [
    'forbidden',
    'account_deleted',
    'api_key_not_allowed',
    'admin_required',
    'ai_not_in_plan',
    // The queue dashboard's own gate (outside the API and its document).
    'cross_site_request',
    'queue_action_not_allowed',
  ],
  404: ['not_found', 'user_not_found', 'no_subscription', 'queue_dashboard_disabled', 'unknown_template'],
  405: ['method_not_allowed'],
  406: ['not_acceptable'],
  408: ['request_timeout'],
  409: [
    'conflict',
    'limit_reached',
    'restore_window_closed',
    'deleted_by_identity_provider',
    'already_processed',
    'still_processing',
    'subscription_exists',
    'no_active_subscription',
    'cancel_already_scheduled',
    'same_tier',
    'no_recoverable_subscription',
    'subscription_paused',
    'subscription_past_due',
    'no_price_for_cycle',
    'not_paused',
    'request_in_progress',
    'idempotency_key_reused',
    'consent_required',
    'credit_job_conflict',
  ],
  413: ['payload_too_large'],
  // What the problem filter names a status it has no title for (the HTTP edge's 414 and 431).
  414: ['request_failed'],
  415: ['unsupported_media_type'],
  417: ['expectation_failed'],
  422: ['unprocessable', 'idempotency_key_mismatch'],
  429: ['rate_limited'],
  431: ['request_failed'],
  500: ['internal_error', 'webhook_processing_failed'],
  502: ['upstream_error', 'upstream_invalid_response', 'upstream_response_too_large', 'billing_rejected'],
  503: [
    'dependency_unavailable',
    'identity_unavailable',
    'billing_not_configured',
    'billing_unavailable',
    'webhook_not_configured',
    'rate_limiter_unavailable',
    'upstream_rate_limited',
    'upstream_unavailable',
    'upstream_unreachable',
  ],
} as const satisfies Record<number, readonly string[]>;

export type ErrorStatus = keyof typeof ERROR_CODES;
/** The codes answered with `status`. */
export type ErrorCodeOf<S extends ErrorStatus> = (typeof ERROR_CODES)[S][number];
export type ErrorCode = ErrorCodeOf<ErrorStatus>;

/** Whether `code` is registered under `status` (for documents and bodies read at run time). */
export const isErrorCodeOf = (status: number, code: string): boolean =>
  Object.hasOwn(ERROR_CODES, status) &&
  (ERROR_CODES[status as ErrorStatus] as readonly string[]).includes(code);
