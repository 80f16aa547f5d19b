export type EmailKind = 'transactional' | 'marketing';

export interface RenderedEmail {
  subject: string;
  html: string;
  text: string;
}

export interface OutboundEmail extends RenderedEmail {
  to: string;
  from: string;
  headers: Record<string, string>;
  /** Sent to the provider so a retried send is delivered once. */
  idempotencyKey: string;
  tags?: Record<string, string>;
}

/** Payload of the email/send-email job. */
export interface SendEmailJob {
  userId: string;
  templateKey: string;
  /** Unique per logical e-mail (e.g. `welcome-<user id>`); a second job with it sends nothing. */
  idempotencyKey: string;
  data?: Record<string, string | number | boolean>;
  /**
   * When the user asked for this e-mail (ISO 8601): the issue time of the confirm_subscription link.
   * Absent in jobs enqueued before it existed (the link is then issued when it is signed).
   */
  requestedAt?: string;
}
