import { Injectable } from '@nestjs/common';

/**
 * The one source of "now" for the admin metrics. Every window of a response is computed from a single
 * reading, passed to SQL as a parameter (never `now()` in SQL), so tests can pin it and the numbers of
 * one response never straddle two instants.
 */
export abstract class Clock {
  abstract now(): Date;
}

@Injectable()
export class SystemClock extends Clock {
  now(): Date {
    return new Date();
  }
}
