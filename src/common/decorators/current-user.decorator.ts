import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Principal } from '../principal.js';

/** The authenticated principal of the request (set by the global AuthenticationGuard). */
export const CurrentPrincipal = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): Principal =>
    ctx.switchToHttp().getRequest<{ principal: Principal }>().principal,
);

/** The User row of the authenticated principal. Ownership of everything derives from it. */
export const CurrentUser = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext) =>
    ctx.switchToHttp().getRequest<{ principal: Principal }>().principal.user,
);
