import { Injectable } from '@nestjs/common';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NotFoundError } from '../../common/errors/app-error.js';
import type { EmailKind, RenderedEmail } from './email.types.js';

export interface TemplateContext {
  email: string;
  locale: string;
  productName: string;
  data: Record<string, string | number | boolean>;
  /** Set for marketing mail: the localized unsubscribe footer is appended with this link. */
  unsubscribeUrl?: string;
}

export interface EmailTemplate {
  key: string;
  kind: EmailKind;
  locales: string[];
  /**
   * The `data.<name>` placeholders of any of its locales: values only the sender of one e-mail has (a
   * payment link, a tier, a balance). A broadcast has none of them, so such a template cannot be broadcast.
   */
  data: string[];
}

interface LocaleParts {
  subject: string;
  html: string;
  text: string;
}

interface LoadedTemplate extends EmailTemplate {
  parts: Map<string, LocaleParts>;
}

/**
 * Works from src (tests, swc) and from dist: nest-cli.json copies `modules/email/templates/**` next to
 * the compiled module, so the folder is always beside this file.
 */
export const TEMPLATES_DIR = fileURLToPath(new URL('./templates/', import.meta.url));

/** The template keys, for the OpenAPI enums: the template folders (a leading `_` marks a partial). */
export const TEMPLATE_KEYS = readdirSync(TEMPLATES_DIR, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !entry.name.startsWith('_'))
  .map((entry) => entry.name)
  .sort();

export const FALLBACK_LOCALE = 'en';
const FOOTER_KEY = '_unsubscribe_footer';
const KINDS: EmailKind[] = ['transactional', 'marketing'];
const PLACEHOLDER = /\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*(?:\.[a-zA-Z0-9_]+)?)\s*\}\}/g;
const KNOWN_VARIABLES = new Set(['product_name', 'email', 'unsubscribe_url']);

export const escapeHtml = (value: string): string =>
  value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

/** `de_AT` / `de-at` -> ['de-at', 'de', 'en']: the most specific locale we ship wins. */
export function localeCandidates(locale: string): string[] {
  const normalized = (locale || FALLBACK_LOCALE).trim().toLowerCase().replace(/_/g, '-');
  const candidates = [normalized];
  const language = normalized.split('-')[0];
  if (language && language !== normalized) candidates.push(language);
  if (!candidates.includes(FALLBACK_LOCALE)) candidates.push(FALLBACK_LOCALE);
  return candidates;
}

function interpolate(source: string, vars: Map<string, string>, escape: boolean): string {
  return source.replace(PLACEHOLDER, (_match, name: string) => {
    const value = vars.get(name) ?? '';
    return escape ? escapeHtml(value) : value;
  });
}

function readParts(dir: string, locale: string, withSubject: boolean): LocaleParts {
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  return {
    subject: withSubject ? read(`${locale}.subject.txt`).trim() : '',
    html: read(`${locale}.html`),
    text: read(`${locale}.txt`).replace(/\s+$/, ''),
  };
}

/**
 * Placeholders must be known names or `data.<key>`, so a typo fails at boot, not in a customer's inbox.
 * Returns the `data.<key>` names used.
 */
function checkPlaceholders(where: string, parts: LocaleParts): string[] {
  const data: string[] = [];
  for (const source of [parts.subject, parts.html, parts.text]) {
    for (const [, name] of source.matchAll(PLACEHOLDER)) {
      if (name.startsWith('data.')) data.push(name.slice('data.'.length));
      else if (!KNOWN_VARIABLES.has(name)) {
        throw new Error(`e-mail template ${where}: unknown placeholder {{${name}}}`);
      }
    }
  }
  return data;
}

function loadDirectory(root: string): { templates: Map<string, LoadedTemplate>; footer: LoadedTemplate } {
  const templates = new Map<string, LoadedTemplate>();
  let footer: LoadedTemplate | null = null;
  for (const key of readdirSync(root).sort()) {
    const dir = join(root, key);
    if (!statSync(dir).isDirectory()) continue;
    const partial = key.startsWith('_');
    const locales = readdirSync(dir)
      .filter((file) => file.endsWith('.txt') && !file.endsWith('.subject.txt'))
      .map((file) => file.slice(0, -'.txt'.length))
      .sort();
    if (!locales.includes(FALLBACK_LOCALE)) {
      throw new Error(`e-mail template ${key}: the ${FALLBACK_LOCALE} locale is required`);
    }
    const parts = new Map<string, LocaleParts>();
    const data = new Set<string>();
    for (const locale of locales) {
      const localeParts = readParts(dir, locale, !partial);
      for (const name of checkPlaceholders(`${key}/${locale}`, localeParts)) data.add(name);
      parts.set(locale, localeParts);
    }
    if (partial) {
      if (key === FOOTER_KEY) footer = { key, kind: 'marketing', locales, parts, data: [...data].sort() };
      continue;
    }
    const meta = JSON.parse(readFileSync(join(dir, 'template.json'), 'utf8')) as { kind?: unknown };
    if (!KINDS.includes(meta.kind as EmailKind)) {
      throw new Error(`e-mail template ${key}: template.json must declare kind transactional or marketing`);
    }
    templates.set(key, { key, kind: meta.kind as EmailKind, locales, parts, data: [...data].sort() });
  }
  if (!footer) throw new Error(`e-mail templates: ${FOOTER_KEY} is missing in ${root}`);
  return { templates, footer };
}

/**
 * Templates by `template_key`, read once from files (HTML and text per locale, see templates/README.md).
 * Rendering escapes every interpolated value in HTML and appends the localized unsubscribe footer to
 * marketing mail.
 */
@Injectable()
export class EmailTemplates {
  private readonly templates: Map<string, LoadedTemplate>;
  private readonly footer: LoadedTemplate;

  constructor() {
    if (!existsSync(TEMPLATES_DIR)) throw new Error(`e-mail templates folder missing: ${TEMPLATES_DIR}`);
    ({ templates: this.templates, footer: this.footer } = loadDirectory(TEMPLATES_DIR));
  }

  get(key: string): EmailTemplate {
    const template = this.templates.get(key);
    if (!template) throw new NotFoundError(`Unknown e-mail template ${key}.`, 'unknown_template');
    return { key: template.key, kind: template.kind, locales: template.locales, data: template.data };
  }

  has(key: string): boolean {
    return this.templates.has(key);
  }

  keys(): string[] {
    return [...this.templates.keys()];
  }

  render(key: string, context: TemplateContext): RenderedEmail & { locale: string } {
    const template = this.templates.get(key);
    if (!template) throw new NotFoundError(`Unknown e-mail template ${key}.`, 'unknown_template');
    const vars = new Map<string, string>([
      ['product_name', context.productName],
      ['email', context.email],
      ['unsubscribe_url', context.unsubscribeUrl ?? ''],
    ]);
    for (const [name, value] of Object.entries(context.data)) vars.set(`data.${name}`, String(value));

    const [locale, parts] = this.pick(template, context.locale);
    const subject = interpolate(parts.subject, vars, false).replace(/[\r\n]+/g, ' ');
    let html = interpolate(parts.html, vars, true);
    let text = interpolate(parts.text, vars, false);
    if (context.unsubscribeUrl) {
      const [, footer] = this.pick(this.footer, context.locale);
      const footerHtml = interpolate(footer.html, vars, true).trim();
      const at = html.toLowerCase().lastIndexOf('</body>');
      html = at >= 0 ? `${html.slice(0, at)}${footerHtml}\n${html.slice(at)}` : `${html}\n${footerHtml}`;
      text = `${text}\n\n${interpolate(footer.text, vars, false)}`;
    }
    return { subject, html, text, locale };
  }

  private pick(template: LoadedTemplate, locale: string): [string, LocaleParts] {
    for (const candidate of localeCandidates(locale)) {
      const parts = template.parts.get(candidate);
      if (parts) return [candidate, parts];
    }
    return [FALLBACK_LOCALE, template.parts.get(FALLBACK_LOCALE)!];
  }
}
