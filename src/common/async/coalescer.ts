/**
 * Group commit for concurrent callers: each `run(item)` joins the next batch, and a batch starts as soon as
 * fewer than `maxInFlight` batches are running. At low load a call goes out alone at once (no added
 * latency); under load the callers that arrive while statements are in flight share the next statement,
 * so the database commits once per batch instead of once per call.
 *
 * `flush(items)` answers one result per item, in order. When it throws, every caller of that batch gets the
 * error. `canJoin(item, batch)` keeps an item out of a batch (it waits for the next one), e.g. a second
 * delivery of the same key, which one multi-row statement could not tell apart from the first.
 */
export interface CoalescerOptions<I> {
  maxBatch: number;
  maxInFlight: number;
  canJoin?: (item: I, batch: readonly I[]) => boolean;
  /**
   * While another batch is in flight, a batch that is not full waits up to this long (ms) after its oldest
   * call for more to join (0, the default: it starts at once). A lone call with nothing in flight never
   * waits, unless lingerWhenIdle. Fewer, fuller batches under moderate load, for a few milliseconds of
   * latency.
   */
  lingerMs?: number;
  /**
   * Linger with nothing in flight too: every batch that is not full waits up to `lingerMs` after its oldest
   * call (a gather window), a lone call included. For work whose cost per batch dominates and whose callers
   * can wait that long (the worker's apply, and an operator's replay of one event through it); not for a
   * provider's or a user's request path.
   */
  lingerWhenIdle?: boolean;
}

interface Waiting<I, O> {
  item: I;
  /** performance.now() when the call arrived. */
  at: number;
  resolve: (value: O) => void;
  reject: (err: unknown) => void;
}

export class Coalescer<I, O> {
  private waiting: Waiting<I, O>[] = [];
  private inFlight = 0;
  private lingering: NodeJS.Timeout | undefined;

  constructor(
    private readonly flush: (items: I[]) => Promise<O[]>,
    private readonly options: CoalescerOptions<I>,
  ) {}

  run(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, at: performance.now(), resolve, reject });
      this.next();
    });
  }

  private next(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      if (this.shouldLinger()) return;
      const batch = this.take();
      this.inFlight += 1;
      void this.send(batch).finally(() => {
        this.inFlight -= 1;
        this.next();
      });
    }
  }

  /** True (and a wake-up set) while a batch may still fill up (see CoalescerOptions.lingerMs). */
  private shouldLinger(): boolean {
    const linger = this.options.lingerMs ?? 0;
    const idle = this.inFlight === 0 && !this.options.lingerWhenIdle;
    if (linger <= 0 || idle || this.waiting.length >= this.options.maxBatch) return false;
    const left = this.waiting[0].at + linger - performance.now();
    if (left <= 0) return false;
    this.lingering ??= setTimeout(() => {
      this.lingering = undefined;
      this.next();
    }, left);
    return true;
  }

  /** The oldest waiting calls that may share one batch; the rest keep their place. */
  private take(): Waiting<I, O>[] {
    const batch: Waiting<I, O>[] = [];
    const items: I[] = [];
    const rest: Waiting<I, O>[] = [];
    for (const waiting of this.waiting) {
      const fits =
        batch.length < this.options.maxBatch &&
        (!this.options.canJoin || this.options.canJoin(waiting.item, items));
      if (fits) {
        batch.push(waiting);
        items.push(waiting.item);
      } else rest.push(waiting);
    }
    this.waiting = rest;
    return batch;
  }

  private async send(batch: Waiting<I, O>[]): Promise<void> {
    try {
      const results = await this.flush(batch.map((waiting) => waiting.item));
      if (results.length !== batch.length) {
        throw new Error(`batch answered ${results.length} results for ${batch.length} items`);
      }
      batch.forEach((waiting, i) => waiting.resolve(results[i]));
    } catch (err) {
      for (const waiting of batch) waiting.reject(err);
    }
  }
}
