import type { OutboundEmail } from '../email.types.js';

/** The e-mail provider port. `console` locally, `resend` (Resend-shaped HTTP API) when deployed. */
export abstract class EmailProvider {
  abstract readonly name: string;
  abstract send(message: OutboundEmail): Promise<{ id: string }>;
}
