import { describe, expect, it } from '@jest/globals';
import { EmailTemplates, escapeHtml, localeCandidates } from './email.templates.js';

const context = { email: 'a@example.com', locale: 'en', productName: 'Acme', data: {} };

describe('EmailTemplates (files under templates/)', () => {
  const templates = new EmailTemplates();

  it('loads the built-in templates with their kinds', () => {
    expect(templates.keys()).toEqual(
      expect.arrayContaining(['welcome', 'subscription_welcome', 'newsletter']),
    );
    expect(templates.get('welcome').kind).toBe('transactional');
    expect(templates.get('subscription_welcome').kind).toBe('transactional');
    expect(templates.get('newsletter').kind).toBe('marketing');
    expect(templates.has('_unsubscribe_footer')).toBe(false);
    expect(() => templates.get('nope')).toThrow(/Unknown e-mail template/);
  });

  it('falls back from region to language to English', () => {
    expect(localeCandidates('de_AT')).toEqual(['de-at', 'de', 'en']);
    expect(localeCandidates('')).toEqual(['en']);
    expect(templates.render('welcome', { ...context, locale: 'de-AT' }).locale).toBe('de');
    expect(templates.render('welcome', { ...context, locale: 'pt-BR' }).locale).toBe('en');
  });

  it('escapes interpolated values in HTML only, and keeps subjects on one line', () => {
    const rendered = templates.render('subscription_welcome', { ...context, data: { tier: '"<PRO>"\n&' } });
    expect(rendered.html).toContain('&quot;&lt;PRO&gt;&quot;');
    expect(rendered.html).not.toContain('<PRO>');
    expect(rendered.text).toContain('"<PRO>"');
    expect(rendered.subject).not.toMatch(/[\r\n]/);
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  it('appends the localized unsubscribe footer inside the body when a link is given', () => {
    const url = 'https://app.example.test/api/v1/email/unsubscribe?t=abc.def';
    const en = templates.render('newsletter', { ...context, unsubscribeUrl: url });
    expect(en.html).toContain(`<a href="${url}">Unsubscribe</a>`);
    expect(en.html.indexOf(url)).toBeLessThan(en.html.indexOf('</body>'));
    expect(en.text).toMatch(
      /Unsubscribe: https:\/\/app\.example\.test\/api\/v1\/email\/unsubscribe\?t=abc\.def$/,
    );
    const de = templates.render('newsletter', { ...context, locale: 'de', unsubscribeUrl: url });
    expect(de.text).toContain(`Abmelden: ${url}`);
    expect(templates.render('newsletter', context).text).not.toContain('Unsubscribe');
  });
});
