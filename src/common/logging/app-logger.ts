import type { LoggerService } from '@nestjs/common';
import type { Logger } from 'nestjs-pino';

/** Nest's own start-up lines: one per module, controller and route. Useful when wiring, noise otherwise. */
export const BOOTSTRAP_CONTEXTS = new Set([
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestApplication',
]);

/**
 * The logger Nest itself writes through (`app.useLogger`): nestjs-pino's, with Nest's bootstrap chatter
 * (dozens of "dependencies initialized" and "Mapped {/x, GET} route" lines per start) moved from info to
 * debug, so a development log starts with what the service says. `LOG_LEVEL=debug` shows them again.
 */
export class AppLogger implements LoggerService {
  constructor(private readonly inner: Logger) {}

  log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams.at(-1);
    if (typeof context === 'string' && BOOTSTRAP_CONTEXTS.has(context)) {
      this.inner.debug(message, ...optionalParams);
      return;
    }
    this.inner.log(message, ...optionalParams);
  }

  error(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.error(message, ...optionalParams);
  }

  warn(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.warn(message, ...optionalParams);
  }

  debug(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.debug(message, ...optionalParams);
  }

  verbose(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.verbose(message, ...optionalParams);
  }

  fatal(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.fatal(message, ...optionalParams);
  }
}
