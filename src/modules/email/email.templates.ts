import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../common/errors/app-error.js';
import type { EmailKind, RenderedEmail } from './email.types.js';

export interface TemplateContext {
  email: string;
  locale: string;
  productName: string;
  data: Record<string, string | number | boolean>;
}

export interface EmailTemplate {
  key: string;
  kind: EmailKind;
  render(context: TemplateContext): RenderedEmail;
}

const escapeHtml = (value: string) =>
  value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

const simple = (
  key: string,
  kind: EmailKind,
  subject: (c: TemplateContext) => string,
  body: (c: TemplateContext) => string,
): EmailTemplate => ({
  key,
  kind,
  render: (context) => {
    const text = body(context);
    return {
      subject: subject(context),
      text,
      html: `<!doctype html><html><body>${text
        .split('\n\n')
        .map((p) => `<p>${escapeHtml(p)}</p>`)
        .join('')}</body></html>`,
    };
  },
});

/** Built-in templates; a template declares its kind (the consent gate depends on it). */
const BUILT_IN: EmailTemplate[] = [
  simple(
    'welcome',
    'transactional',
    (c) => `Welcome to ${c.productName}`,
    (c) => `Hello,\n\nyour ${c.productName} account is ready.`,
  ),
  simple(
    'subscription_welcome',
    'transactional',
    (c) => `Your ${String(c.data.tier ?? 'paid')} plan is active`,
    (c) => `Hello,\n\nthank you for subscribing to ${c.productName} ${String(c.data.tier ?? '')}.`,
  ),
  simple(
    'newsletter',
    'marketing',
    (c) => `${c.productName} news`,
    (c) => `Hello,\n\nhere is what is new in ${c.productName}.`,
  ),
];

@Injectable()
export class EmailTemplates {
  private readonly templates = new Map(BUILT_IN.map((t) => [t.key, t]));

  get(key: string): EmailTemplate {
    const template = this.templates.get(key);
    if (!template) throw new NotFoundError(`Unknown e-mail template ${key}.`, 'unknown_template');
    return template;
  }

  has(key: string): boolean {
    return this.templates.has(key);
  }

  keys(): string[] {
    return [...this.templates.keys()];
  }
}
