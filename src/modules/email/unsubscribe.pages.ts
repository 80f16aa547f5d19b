import type { Request, Response } from 'express';
import { escapeHtml } from './email.templates.js';

const page = (title: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222;line-height:1.5}button{font:inherit;padding:.5rem 1.25rem;cursor:pointer}</style>
</head>
<body>
${body}
</body>
</html>
`;

/**
 * The GET page only asks: link scanners that follow every URL in a message must not unsubscribe anyone.
 * A plain form (no script: the CSP forbids inline scripts) posts back to the same URL.
 */
export const confirmationPage = (token: string) =>
  page(
    'Unsubscribe',
    `<h1>Unsubscribe</h1>
<p>Do you want to stop receiving news and offers by e-mail? Account and billing messages still reach you.</p>
<form method="post" action="unsubscribe?t=${escapeHtml(encodeURIComponent(token))}">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">Unsubscribe</button>
</form>`,
  );

export const unsubscribedPage = () =>
  page(
    'Unsubscribed',
    `<h1>You are unsubscribed</h1>
<p>You will not receive news and offers by e-mail any more. You can opt in again in your account settings.</p>`,
  );

/** The double opt-in page: like unsubscribe, the GET only asks and its form POSTs. */
export const confirmSubscriptionPage = (token: string) =>
  page(
    'Confirm your subscription',
    `<h1>Confirm your subscription</h1>
<p>Do you want to receive news and offers by e-mail? You can unsubscribe at any time.</p>
<form method="post" action="confirm?t=${escapeHtml(encodeURIComponent(token))}">
<button type="submit">Yes, subscribe me</button>
</form>`,
  );

export const subscriptionConfirmedPage = () =>
  page(
    'Subscribed',
    `<h1>You are subscribed</h1>
<p>Thank you. You can unsubscribe from any of our e-mails or in your account settings.</p>`,
  );

/**
 * The answer of a signed-link POST: a browser's form (Accept: text/html) gets `page`, mail clients and API
 * callers get `json`. Never cached.
 */
export function pageOrJson<T>(req: Request, res: Response, page: () => string, json: T): string | T {
  res.setHeader('Cache-Control', 'no-store');
  if (req.accepts(['json', 'html']) !== 'html') return json;
  res.type('html');
  return page();
}
