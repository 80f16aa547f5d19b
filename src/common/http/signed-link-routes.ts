import { API_PREFIX } from './api-prefix.js';

/**
 * The routes of the e-mail links (the unsubscribe and the double opt-in confirmation, GET page and POST):
 * a signed token in `t` is their only authentication. Mail clients POST them as forms (RFC 8058 one-click)
 * from their providers' servers, so many recipients share a few addresses: a valid token authenticates
 * the request (the per-IP limit is for unauthenticated requests only, DESIGN 5c) and only a refused one
 * counts for its address. A valid one counts for the user it names instead (EmailLinkLimitGuard).
 */
const SIGNED_LINK_ROUTES = new Set([`/${API_PREFIX}/email/unsubscribe`, `/${API_PREFIX}/email/confirm`]);

/**
 * A request path as the router matches it: Express routes without regard to case and with one optional
 * trailing slash (its defaults, which Nest keeps). Path rules compare this form, so they follow the route
 * that will run.
 */
export const routePath = (path: string): string => {
  const lower = path.toLowerCase();
  return lower.length > 1 && lower.endsWith('/') ? lower.slice(0, -1) : lower;
};

export const isSignedLinkRoute = (path: string): boolean => SIGNED_LINK_ROUTES.has(routePath(path));

/**
 * `res.locals` key of the 429 an address over its limit has earned, held while a signed-link request from
 * it proves its token: the problem filter answers it instead of the refusal when the token fails.
 */
export const HELD_IP_BLOCK = 'heldIpBlock';
